//! Object identities (what a stream or endpoint is connected to), their codec and display.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::format::{ep, ChanKind, ObjKind, SHARED_IDENTITY};
use crate::wire::{Dec, DecError};

/// One end of a channel, or a listening address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// Not known.
    None,
    /// A pipe, unix socket or file, by device and inode.
    Inode {
        /// Device number (`st_dev`).
        dev: u64,
        /// Inode number.
        ino: u64,
    },
    /// A unix socket path; abstract names start with NUL.
    Path(Vec<u8>),
    /// An object numbered by the process that created it (eventfd, epoll).
    Local {
        /// The creating process.
        pid: u64,
        /// Its number within that process.
        counter: u64,
    },
    /// An IPv4 or IPv6 socket address.
    Inet(SocketAddr),
}

/// What an OBJECT record says about the object besides its kind and key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Identity {
    /// Nothing (every kind but STREAM and ENDPOINT).
    None,
    /// One direction of a byte channel.
    Stream {
        /// Channel kind, see [`crate::format::ChanKind`] (its code).
        chan: u8,
        /// Key shared by both directions of the channel.
        channel_key: u64,
        /// The writing end.
        sender: Endpoint,
        /// The reading end.
        receiver: Endpoint,
    },
    /// A listening endpoint.
    Endpoint {
        /// Channel kind, see [`crate::format::ChanKind`] (its code).
        chan: u8,
        /// Its address.
        ep: Endpoint,
    },
    /// A pthread object or futex word declared process-shared (see
    /// [`crate::format::SHARED_IDENTITY`]): one object in every process that names its address.
    Shared,
    /// Identity bytes this reader does not understand (an endpoint tag from a later version).
    Unknown(Vec<u8>),
}

/// The display name of a channel kind (`chan#N` when unknown).
pub fn chan_name(c: u8) -> String {
    ChanKind::from_code(c).map_or_else(|| format!("chan#{c}"), |k| k.name().to_owned())
}

/// The display name of an object kind (`kind#N` when unknown).
pub fn obj_kind_name(k: u8) -> String {
    ObjKind::from_code(k).map_or_else(|| format!("kind#{k}"), |k| k.name().to_owned())
}

/// Why an endpoint did not decode: the input ended, or the tag is not known.
pub(crate) enum EpError {
    Dec(DecError),
    UnknownTag,
}

impl From<DecError> for EpError {
    fn from(e: DecError) -> Self {
        EpError::Dec(e)
    }
}

impl Endpoint {
    pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Endpoint, EpError> {
        Ok(match d.u8()? {
            ep::NONE => Endpoint::None,
            ep::INODE => Endpoint::Inode {
                dev: d.varint()?,
                ino: d.varint()?,
            },
            ep::PATH => {
                let n = d.varint()?;
                let n = usize::try_from(n).map_err(|_| DecError::Eof)?;
                Endpoint::Path(d.bytes(n)?.to_vec())
            }
            ep::LOCAL => Endpoint::Local {
                pid: d.varint()?,
                counter: d.varint()?,
            },
            ep::IPV4 => {
                let a: [u8; 4] = d.bytes(4)?.try_into().map_err(|_| DecError::Eof)?;
                let port = u16::from_be_bytes([d.u8()?, d.u8()?]);
                Endpoint::Inet(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), port))
            }
            ep::IPV6 => {
                let a: [u8; 16] = d.bytes(16)?.try_into().map_err(|_| DecError::Eof)?;
                let port = u16::from_be_bytes([d.u8()?, d.u8()?]);
                Endpoint::Inet(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port))
            }
            _ => return Err(EpError::UnknownTag),
        })
    }

    /// Appends the encoded endpoint (tag and data).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Endpoint::None => out.push(ep::NONE),
            Endpoint::Inode { dev, ino } => {
                out.push(ep::INODE);
                put_varint(out, *dev);
                put_varint(out, *ino);
            }
            Endpoint::Path(p) => {
                out.push(ep::PATH);
                put_varint(out, p.len() as u64);
                out.extend_from_slice(p);
            }
            Endpoint::Local { pid, counter } => {
                out.push(ep::LOCAL);
                put_varint(out, *pid);
                put_varint(out, *counter);
            }
            Endpoint::Inet(SocketAddr::V4(a)) => {
                out.push(ep::IPV4);
                out.extend_from_slice(&a.ip().octets());
                out.extend_from_slice(&a.port().to_be_bytes());
            }
            Endpoint::Inet(SocketAddr::V6(a)) => {
                out.push(ep::IPV6);
                out.extend_from_slice(&a.ip().octets());
                out.extend_from_slice(&a.port().to_be_bytes());
            }
        }
    }
}

impl Identity {
    /// Decodes the identity of an object of kind `kind` from `bytes`, the rest of an OBJECT
    /// payload. Trailing bytes are ignored; an unknown endpoint tag gives [`Identity::Unknown`].
    pub(crate) fn decode(kind: u8, bytes: &[u8]) -> Result<Identity, DecError> {
        let mut d = Dec::new(bytes);
        let r = match ObjKind::from_code(kind) {
            Some(ObjKind::Stream) => Self::decode_stream(&mut d),
            Some(ObjKind::Endpoint) => Self::decode_endpoint(&mut d),
            Some(k) if k.process_scoped() => match bytes.first() {
                None => Ok(Identity::None),
                Some(&SHARED_IDENTITY) => Ok(Identity::Shared),
                Some(_) => Err(EpError::UnknownTag),
            },
            _ => Ok(Identity::None),
        };
        match r {
            Ok(id) => Ok(id),
            Err(EpError::Dec(e)) => Err(e),
            Err(EpError::UnknownTag) => Ok(Identity::Unknown(bytes.to_vec())),
        }
    }

    fn decode_stream(d: &mut Dec<'_>) -> Result<Identity, EpError> {
        let chan = d.u8()?;
        let channel_key = d.varint()?;
        let sender = Endpoint::decode(d)?;
        let receiver = Endpoint::decode(d)?;
        Ok(Identity::Stream {
            chan,
            channel_key,
            sender,
            receiver,
        })
    }

    fn decode_endpoint(d: &mut Dec<'_>) -> Result<Identity, EpError> {
        let chan = d.u8()?;
        let ep = Endpoint::decode(d)?;
        Ok(Identity::Endpoint { chan, ep })
    }

    /// Appends the encoded identity (nothing for [`Identity::None`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Identity::None => {}
            Identity::Stream {
                chan,
                channel_key,
                sender,
                receiver,
            } => {
                out.push(*chan);
                put_varint(out, *channel_key);
                sender.encode(out);
                receiver.encode(out);
            }
            Identity::Endpoint { chan, ep } => {
                out.push(*chan);
                ep.encode(out);
            }
            Identity::Shared => out.push(SHARED_IDENTITY),
            Identity::Unknown(b) => out.extend_from_slice(b),
        }
    }
}

/// Appends a LEB128 varint to a vector.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; crate::wire::MAX_VARINT];
    let mut e = crate::wire::Enc::new(&mut buf);
    e.varint(v);
    let n = e.len();
    out.extend_from_slice(&buf[..n]);
}

/// Linux `dev_t` major and minor numbers.
fn dev_parts(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::None => f.write_str("?"),
            Endpoint::Inode { dev, ino } => {
                write!(f, "ino {ino}")?;
                if *dev != 0 {
                    let (ma, mi) = dev_parts(*dev);
                    write!(f, " dev {ma}:{mi}")?;
                }
                Ok(())
            }
            Endpoint::Path(p) => {
                let (prefix, p) = match p.split_first() {
                    Some((0, rest)) => ("@", rest),
                    _ => ("", &p[..]),
                };
                write!(f, "{prefix}{}", p.escape_ascii())
            }
            Endpoint::Local { pid, counter } => write!(f, "pid {pid} #{counter}"),
            Endpoint::Inet(a) => write!(f, "{a}"),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identity::None => Ok(()),
            Identity::Stream {
                chan,
                sender,
                receiver,
                ..
            } => {
                f.write_str(&chan_name(*chan))?;
                match (sender, receiver) {
                    (Endpoint::None, Endpoint::None) => Ok(()),
                    (s, r) if s == r => write!(f, " {s}"),
                    (s, r) => write!(f, " {s}->{r}"),
                }
            }
            Identity::Endpoint { chan, ep } => match ep {
                Endpoint::None => f.write_str(&chan_name(*chan)),
                ep => write!(f, "{} {ep}", chan_name(*chan)),
            },
            Identity::Shared => f.write_str("process-shared"),
            Identity::Unknown(b) => write!(f, "unknown identity ({} bytes)", b.len()),
        }
    }
}
