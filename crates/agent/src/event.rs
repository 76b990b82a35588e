//! What a hook reports: one event, and the object it refers to with the identity written when
//! the object is first seen in a file. Recording them is `tstate`'s part.

use scalpel_format::format::{ready, ObjKind, Op};
use scalpel_format::wire::Enc;

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
    /// What a readiness wait reported (written as a READY record after the event).
    pub ready: Option<&'a Ready>,
}

/// The descriptors a readiness wait reported ready for input: the first
/// [`ready::MAX_LISTED`] values, and how many there were in all.
pub(crate) struct Ready {
    form: u8,
    reported: u32,
    listed: usize,
    values: [u64; ready::MAX_LISTED],
}

/// Room for a READY payload: form, two counts, and the listed varints.
pub(crate) const READY_BYTES: usize = 1 + 5 + 1 + 10 * ready::MAX_LISTED;

impl Ready {
    /// An empty list of values of `form` (a [`ready`] constant).
    #[inline]
    pub(crate) fn new(form: u8) -> Self {
        Ready {
            form,
            reported: 0,
            listed: 0,
            values: [0; ready::MAX_LISTED],
        }
    }

    /// Adds one ready descriptor's value; past the bound it is only counted.
    #[inline]
    pub(crate) fn push(&mut self, v: u64) {
        if let Some(slot) = self.values.get_mut(self.listed) {
            *slot = v;
            self.listed += 1;
        }
        self.reported = self.reported.saturating_add(1);
    }

    /// Whether anything was reported.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.reported == 0
    }

    /// Encodes the READY payload into `buf`; returns its length.
    pub(crate) fn encode(&self, buf: &mut [u8; READY_BYTES]) -> usize {
        let mut e = Enc::new(buf);
        e.u8(self.form);
        e.varint(u64::from(self.reported));
        e.varint(self.listed as u64);
        for &v in self.values.iter().take(self.listed) {
            e.varint(v);
        }
        e.len()
    }
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
            ready: None,
        }
    }
}
