//! What a hook reports: one event, and the object it refers to with the identity written when
//! the object is first seen in a file. Recording them is `tstate`'s part.

use scalpel_format::format::{ObjKind, Op};

/// An object an event refers to, with the identity written when it is first seen in a file.
#[derive(Clone, Copy)]
pub struct Obj<'a> {
    /// Object kind.
    pub kind: ObjKind,
    /// Key: an address, or a stable hash for channels.
    pub key: u64,
    /// Identity bytes (see the OBJECT record), empty for plain addresses.
    pub ident: &'a [u8],
}

impl<'a> Obj<'a> {
    /// An object named by a key alone, with no identity bytes.
    #[inline]
    pub fn key(kind: ObjKind, key: u64) -> Obj<'static> {
        Obj {
            kind,
            key,
            ident: &[],
        }
    }

    /// An object named by its address.
    #[inline]
    pub fn addr<T>(kind: ObjKind, p: *const T) -> Obj<'static> {
        Obj::key(kind, p as usize as u64)
    }
}

/// One event as a hook reports it.
#[derive(Clone, Copy)]
pub(crate) struct Ev<'a> {
    /// What happened.
    pub op: Op,
    /// Clock before the real call.
    pub t0: u64,
    /// Clock after the real call.
    pub t1: u64,
    /// The object and its sequence number.
    pub obj: Option<(Obj<'a>, Option<u64>)>,
    /// The call's result.
    pub result: Option<i64>,
    /// File descriptor.
    pub fd: Option<i32>,
    /// Stream byte offset.
    pub offset: Option<u64>,
    /// Auxiliary values.
    pub aux: Option<u64>,
    /// Second auxiliary value.
    pub aux2: Option<u64>,
}

impl<'a> Ev<'a> {
    /// An event with no optional fields.
    #[inline]
    pub(crate) fn new(op: Op, t0: u64, t1: u64) -> Self {
        Ev {
            op,
            t0,
            t1,
            obj: None,
            result: None,
            fd: None,
            offset: None,
            aux: None,
            aux2: None,
        }
    }
}
