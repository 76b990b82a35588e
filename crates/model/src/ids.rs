//! Typed indices into the tables of [`Graph`](crate::graph::Graph) and
//! [`Model`](crate::task::Model): a leaf id cannot be passed where a thread or a type is
//! expected. Each serializes as its plain number, so the JSON files read the same.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `table[id]` for a table of `Vec<T>` or `[T]` indexed by an id type, implemented where the
/// table's type is defined (so that this module imports neither `graph` nor `task`).
macro_rules! index_by {
    ($($name:ident => $table:ty),* $(,)?) => {$(
        impl std::ops::Index<$name> for [$table] {
            type Output = $table;
            #[inline]
            fn index(&self, id: $name) -> &$table {
                &self[id.index()]
            }
        }

        impl std::ops::IndexMut<$name> for [$table] {
            #[inline]
            fn index_mut(&mut self, id: $name) -> &mut $table {
                &mut self[id.index()]
            }
        }

        impl std::ops::Index<$name> for Vec<$table> {
            type Output = $table;
            #[inline]
            fn index(&self, id: $name) -> &$table {
                &self[id.index()]
            }
        }

        impl std::ops::IndexMut<$name> for Vec<$table> {
            #[inline]
            fn index_mut(&mut self, id: $name) -> &mut $table {
                &mut self[id.index()]
            }
        }
    )*};
}
pub(crate) use index_by;

macro_rules! ids {
    ($( $(#[$doc:meta])* $name:ident; )*) => {$(
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize,
            Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(u32);

        impl $name {
            /// The id of entry `i` of its table.
            #[inline]
            pub const fn new(i: u32) -> Self {
                $name(i)
            }

            /// The entry's number.
            #[inline]
            pub const fn get(self) -> u32 {
                self.0
            }

            /// The id as an index into its table.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of entry `i` of its table, if `i` fits an id.
            #[inline]
            pub fn try_at(i: usize) -> Option<Self> {
                u32::try_from(i).ok().map($name)
            }

            /// The id of entry `i` of a table this program built. Such tables are numbered
            /// by `u32` as they grow (the reader refuses counts that do not fit), so `i` fits;
            /// a table past 2^32 entries is a bug, and stops here rather than wrap.
            #[inline]
            pub fn at(i: usize) -> Self {
                Self::try_at(i).expect("an id table outgrew 2^32 entries")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

ids! {
    /// A leaf task instance: an index into [`Graph::leaves`](crate::graph::Graph::leaves).
    LeafId;
    /// A thread (one trace file): an index into
    /// [`Graph::threads`](crate::graph::Graph::threads), not a tid.
    ThreadId;
    /// A process incarnation: an index into
    /// [`Graph::processes`](crate::graph::Graph::processes), not a pid.
    ProcessId;
    /// A leaf type: an index into [`Graph::types`](crate::graph::Graph::types).
    LeafTypeId;
    /// An untraced peer: an index into [`Graph::externals`](crate::graph::Graph::externals).
    ExternalId;
    /// A task type: an index into [`Model::types`](crate::task::Model::types). The first
    /// types are the leaf types, in the graph's order.
    TaskTypeId;
    /// A machine: an index into [`Graph::hosts`](crate::graph::Graph::hosts); 0 in a graph of
    /// one machine, which lists none.
    HostId;
}

/// An object: an index into [`Graph::objects`](crate::graph::Graph::objects). Four bytes even
/// as an `Option` (the graph keeps one per leaf); it serializes as the plain index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(std::num::NonZeroU32);

impl ObjId {
    /// The id of object `i` (`u32::MAX` is not a valid index; it saturates).
    #[inline]
    pub fn new(i: u32) -> Self {
        ObjId(std::num::NonZeroU32::new(i.saturating_add(1)).unwrap_or(std::num::NonZeroU32::MIN))
    }

    /// The index.
    #[inline]
    pub fn get(self) -> u32 {
        self.0.get() - 1
    }

    /// The index, for indexing.
    #[inline]
    pub fn index(self) -> usize {
        self.get() as usize
    }
}

impl fmt::Display for ObjId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for ObjId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.get())
    }
}

impl<'de> Deserialize<'de> for ObjId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let i = u32::deserialize(d)?;
        if i == u32::MAX {
            return Err(serde::de::Error::custom("object index out of range"));
        }
        Ok(ObjId::new(i))
    }
}

/// A call site of an inner wait: an index into [`Graph::sites`](crate::graph::Graph::sites).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SiteId(u32);

impl SiteId {
    /// The id of site `i`.
    #[inline]
    pub const fn new(i: u32) -> Self {
        SiteId(i)
    }

    /// The site's number.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The id as an index into [`Graph::sites`](crate::graph::Graph::sites).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// An end of a causal edge: a leaf, or an untraced peer. Leaves come first: node `i` is leaf
/// `i` when `i < leaves.len()`, else external `i - leaves.len()` (see [`Node`]).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(u32);

impl NodeId {
    /// Node number `i`.
    #[inline]
    pub const fn new(i: u32) -> Self {
        NodeId(i)
    }

    /// The node number.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The node number.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<LeafId> for NodeId {
    #[inline]
    fn from(l: LeafId) -> NodeId {
        NodeId(l.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What a [`NodeId`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// A leaf.
    Leaf(LeafId),
    /// An untraced peer.
    External(ExternalId),
}

impl HostId {
    /// Whether it is the first machine (the only one of a graph of one), which files leave out.
    #[allow(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes a reference"
    )]
    pub fn is_first(&self) -> bool {
        self.0 == 0
    }
}
