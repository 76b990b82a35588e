//! The graph's objects as typed data: what kind each is, and for a byte channel, its kind, key
//! and ends. Stages decide from these fields; the description is text for people only, and no
//! stage reads it.

use serde::{Deserialize, Serialize};

use crate::format::{ChanKind, ObjKind};
use crate::read::{Endpoint, Identity};

crate::coded::coded! {
    /// An object's kind (`mutex`, `cond`, `stream` …).
    ObjectKind, ObjKind, "kind"
}

crate::coded::coded! {
    /// A byte channel's kind (`tcp`, `unix`, `pipe` …).
    ChannelKind, ChanKind, "chan"
}

/// What a channel object is connected to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// One direction of a byte channel.
    Stream {
        /// Its kind.
        kind: ChannelKind,
        /// The key both directions share.
        key: u64,
        /// The writing end.
        sender: Endpoint,
        /// The reading end.
        receiver: Endpoint,
    },
    /// A listening endpoint, where connects and accepts meet.
    Listening {
        /// Its kind.
        kind: ChannelKind,
        /// Its address.
        address: Endpoint,
    },
}

impl Channel {
    /// From an object's identity, when it names a channel.
    pub fn of(id: &Identity) -> Option<Channel> {
        match id {
            Identity::Stream {
                chan,
                channel_key,
                sender,
                receiver,
            } => Some(Channel::Stream {
                kind: ChannelKind::from_code(*chan),
                key: *channel_key,
                sender: sender.clone(),
                receiver: receiver.clone(),
            }),
            Identity::Endpoint { chan, ep } => Some(Channel::Listening {
                kind: ChannelKind::from_code(*chan),
                address: ep.clone(),
            }),
            Identity::None | Identity::Shared | Identity::Unknown(_) => None,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ChannelKind {
        match self {
            Channel::Stream { kind, .. } | Channel::Listening { kind, .. } => *kind,
        }
    }

    /// A connection's two ends in a fixed order (the smaller first), so that both directions of
    /// one connection give the same pair: for a stream whose two ends differ (an end not known
    /// is [`Endpoint::None`] and counts as one).
    pub fn connection(&self) -> Option<(&Endpoint, &Endpoint)> {
        match self {
            Channel::Stream {
                sender, receiver, ..
            } if sender != receiver => Some(if sender < receiver {
                (sender, receiver)
            } else {
                (receiver, sender)
            }),
            _ => None,
        }
    }
}

/// A synchronization object or channel that leaves and edges refer to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectInfo {
    /// Its kind.
    pub kind: ObjectKind,
    /// The key the agent gave it (an address, or a key both ends of a channel agree on).
    pub key: u64,
    /// A pthread object or futex word its process declared process-shared: one object in every
    /// process that names its address.
    pub shared: bool,
    /// For a stream or a listening endpoint, what it is connected to.
    pub channel: Option<Channel>,
    /// What it is, for people (`tcp 127.0.0.1:5000->127.0.0.1:40112`). No stage reads it.
    pub desc: String,
}

impl ObjectInfo {
    /// The kind of channel it is: a stream's or endpoint's channel kind, else `None`.
    pub fn channel_kind(&self) -> Option<ChannelKind> {
        self.channel.as_ref().map(Channel::kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_names_in_json_and_codes_in_postcard() {
        let k = ObjectKind::from(ObjKind::Mutex);
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"mutex\"");
        let unknown = ChannelKind::from_code(200);
        let json = serde_json::to_string(&unknown).unwrap();
        assert_eq!(json, "\"chan#200\"");
        assert_eq!(serde_json::from_str::<ChannelKind>(&json).unwrap(), unknown);
        assert!(serde_json::from_str::<ObjectKind>("\"lock\"").is_err());
        let bin = postcard::to_allocvec(&k).unwrap();
        assert_eq!(postcard::from_bytes::<ObjectKind>(&bin).unwrap(), k);
    }

    #[test]
    fn both_directions_of_a_connection_are_one_pair() {
        let a = Endpoint::Inet("127.0.0.1:80".parse().unwrap());
        let b = Endpoint::Inet("127.0.0.1:4000".parse().unwrap());
        let dir = |s: &Endpoint, r: &Endpoint| Channel::Stream {
            kind: ChanKind::Tcp.into(),
            key: 1,
            sender: s.clone(),
            receiver: r.clone(),
        };
        assert_eq!(dir(&a, &b).connection(), dir(&b, &a).connection());
        assert_eq!(dir(&a, &a).connection(), None);
        assert_eq!(dir(&Endpoint::None, &Endpoint::None).connection(), None);
    }
}
