//! Every intercepted family shows up in the trace of a program that calls it, with the facts the
//! format promises (objects, results, descriptors, channels).

use scalpel::inspect::{dump, DumpDir, DumpOptions, Summary};
use scalpel_e2e::*;
use scalpel_model::format::{ChanKind, ObjKind};
use std::collections::BTreeSet;

#[test]
fn every_family_is_recorded() {
    let exe = build_c("families", "families", &[]);
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("families ok"), "{}", run.stdout());
    let t = run.load();
    let main: Vec<_> = processes_named(&t, "families");
    // The parent, the fork child (same executable) and the exec'ed child.
    assert!(
        main.len() >= 2,
        "expected parent and child processes, got {}",
        main.len()
    );
    let seen: BTreeSet<Op> = all_events(&t).iter().filter_map(|e| e.event.op).collect();
    let expected = [
        Op::MutexLock,
        Op::MutexTrylock,
        Op::MutexTimedlock,
        Op::MutexClocklock,
        Op::MutexUnlock,
        Op::CondUnlock,
        Op::CondRelock,
        Op::CondTimedwait,
        Op::CondClockwait,
        Op::CondSignal,
        Op::CondBroadcast,
        Op::RwRdlock,
        Op::RwTryrdlock,
        Op::RwTimedrdlock,
        Op::RwClockrdlock,
        Op::RwWrlock,
        Op::RwTrywrlock,
        Op::RwTimedwrlock,
        Op::RwClockwrlock,
        Op::RwUnlock,
        Op::SemWait,
        Op::SemTimedwait,
        Op::SemClockwait,
        Op::SemTrywait,
        Op::SemPost,
        Op::FutexWait,
        Op::FutexWake,
        Op::EpollWait,
        Op::EpollPwait,
        Op::EpollPwait2,
        Op::Poll,
        Op::Ppoll,
        Op::Select,
        Op::Pselect,
        Op::Read,
        Op::Readv,
        Op::Pread,
        Op::Recv,
        Op::Recvfrom,
        Op::Recvmsg,
        Op::Write,
        Op::Writev,
        Op::Send,
        Op::Sendto,
        Op::Sendmsg,
        Op::Sendfile,
        Op::Accept,
        Op::Accept4,
        Op::Connect,
        Op::Close,
        Op::Dup,
        Op::Dup2,
        Op::Dup3,
        Op::Pipe,
        Op::Pipe2,
        Op::Socketpair,
        Op::Eventfd,
        Op::Socket,
        Op::EpollCreate,
        Op::ThreadCreate,
        Op::ThreadStart,
        Op::ThreadExit,
        Op::ThreadJoin,
        Op::Fork,
        Op::ForkChild,
        Op::Exec,
        Op::Sleep,
    ];
    let missing: Vec<_> = expected.iter().filter(|op| !seen.contains(op)).collect();
    assert!(missing.is_empty(), "operations never recorded: {missing:?}");

    // The futex wait failed with EAGAIN, and its result says so.
    let fw = with_op(&t, Op::FutexWait);
    assert!(fw
        .iter()
        .any(|e| e.event.result == Some(-(libc::EAGAIN as i64))));
    // The cond timeouts report ETIMEDOUT and carry no sequence number (nothing woke them).
    for e in with_op(&t, Op::CondTimedwait) {
        assert_eq!(e.event.result, Some(-(libc::ETIMEDOUT as i64)));
        assert_eq!(e.event.seq, None);
    }
    // pthread_exit is told apart from a return.
    assert!(with_op(&t, Op::ThreadExit)
        .iter()
        .any(|e| e.event.aux == Some(1)));
    // Reads and writes name their streams; pipes, unix sockets, TCP and eventfd all appear.
    let ids = t.identities();
    let chans: BTreeSet<u8> = ids
        .values()
        .filter_map(|i| match i {
            Identity::Stream { chan, .. } => Some(*chan),
            _ => None,
        })
        .collect();
    for c in [
        ChanKind::Pipe.code(),
        ChanKind::Unix.code(),
        ChanKind::Tcp.code(),
        ChanKind::Eventfd.code(),
    ] {
        assert!(
            chans.contains(&c),
            "no stream of channel kind {c} in {chans:?}"
        );
    }
    // A transfer on a byte stream is ordered by its offset alone (one atomic operation per
    // call in the agent); an eventfd's also carries a sequence number, since its reads take
    // every write before them whatever the byte counts say.
    let mut moved: BTreeSet<(u8, bool, bool)> = BTreeSet::new();
    for e in all_events(&t) {
        let transfer = e.event.op.is_some_and(|op| {
            matches!(
                op,
                Op::Read
                    | Op::Readv
                    | Op::Recv
                    | Op::Recvfrom
                    | Op::Recvmsg
                    | Op::Write
                    | Op::Writev
                    | Op::Send
                    | Op::Sendto
                    | Op::Sendmsg
                    | Op::Sendfile
            )
        });
        let Some(o) = e.event.obj.filter(|_| transfer && e.event.result > Some(0)) else {
            continue;
        };
        if let Some(Identity::Stream { chan, .. }) = ids.get(&(ObjKind::Stream.code(), o.key)) {
            moved.insert((*chan, e.event.offset.is_some(), e.event.seq.is_some()));
        }
    }
    for c in [ChanKind::Pipe, ChanKind::Unix, ChanKind::Tcp] {
        assert!(moved.contains(&(c.code(), true, false)), "{c:?}: {moved:?}");
        assert!(
            !moved.iter().any(|m| m.0 == c.code() && (m.2 || !m.1)),
            "{c:?}: {moved:?}"
        );
    }
    let eventfd = ChanKind::Eventfd.code();
    assert!(moved.contains(&(eventfd, true, true)), "{moved:?}");
    assert!(!moved.iter().any(|m| m.0 == eventfd && !m.2), "{moved:?}");
    // Connect and accept meet at the same endpoint object, connect numbered first.
    let connects = with_op(&t, Op::Connect);
    let accepts = with_op(&t, Op::Accept);
    let c0 = connects
        .iter()
        .find(|e| e.event.result == Some(0))
        .expect("a successful connect");
    let a0 = accepts.first().expect("an accept");
    assert_eq!(c0.event.obj.map(|o| o.key), a0.event.obj.map(|o| o.key));
    // Both ends agree on the connection's channel key.
    assert_eq!(c0.event.aux, a0.event.aux);
    // The sendfile went out on the TCP connection that the accepted socket then read.
    let sf = with_op(&t, Op::Sendfile);
    assert_eq!(sf[0].event.result, Some(16));

    // The unix connection: connect and accept meet at the socket path, and the connecting
    // side's outgoing stream is the accepting side's incoming one (named by the two inodes).
    let unix_connect = connects
        .iter()
        .find(|e| {
            matches!(
                ids.get(&(ObjKind::Endpoint.code(), e.event.obj.unwrap().key)),
                Some(Identity::Endpoint { chan, .. }) if *chan == ChanKind::Unix.code()
            )
        })
        .expect("a unix connect");
    let unix_accept = accepts
        .iter()
        .find(|e| e.event.obj.map(|o| o.key) == unix_connect.event.obj.map(|o| o.key))
        .expect("the accept of that unix connection");
    assert!(unix_connect.event.seq < unix_accept.event.seq);
    let five: Vec<_> = all_events(&t)
        .into_iter()
        .filter(|e| {
            e.event.result == Some(5) && matches!(e.event.op, Some(Op::Write) | Some(Op::Read))
        })
        .collect();
    assert_eq!(five.len(), 2, "the unix write and read of 5 bytes");
    assert_eq!(
        five[0].event.obj.unwrap().key,
        five[1].event.obj.unwrap().key
    );
    assert!(matches!(
        ids.get(&(ObjKind::Stream.code(), five[0].event.obj.unwrap().key)),
        Some(Identity::Stream { chan, .. }) if *chan == ChanKind::Unix.code()
    ));
    // After the dlopen, a new module map showing the library was recorded (at the start of the
    // next thread, which follows the dlopen in the program).
    let p = &main[0];
    assert!(
        p.threads.iter().any(|f| f.maps.iter().any(|m| m
            .entries
            .iter()
            .any(|e| e.path.as_deref().is_some_and(|p| p.contains("libm.so"))))),
        "libm missing from every module map after dlopen"
    );
}

/// The summary `scalpel record` prints counts the events as they are decoded, keeping none: it
/// must say what the summary of the loaded trace says.
#[test]
fn the_streamed_summary_is_the_loaded_ones() {
    let exe = build_c("families", "families", &[]);
    let run = record(&exe, &[]).success();
    let (streamed, _) = Summary::read(&run.dir).expect("the trace reads");
    let loaded = Summary::of(&run.load());
    assert_eq!(streamed, loaded);
    assert!(
        loaded.events > 0 && loaded.stacked_events > 0 && loaded.ready_lists > 0,
        "{loaded:?}"
    );
}

/// `scalpel dump` decodes each file again as it prints it (merged by time, every file at
/// once), keeping no events: the same text as the dump of the loaded trace, stacks and filters
/// included.
#[test]
fn the_streamed_dump_is_the_loaded_ones() {
    let exe = build_c("families", "families", &[]);
    let run = record(&exe, &[]).success();
    let trace = run.load();
    let streamed = DumpDir::read(&run.dir).expect("the trace reads");
    let options = [
        DumpOptions::default(),
        DumpOptions {
            ops: vec![Op::EpollWait, Op::Write],
            ..DumpOptions::default()
        },
        DumpOptions {
            object: Some("pipe".into()),
            limit: Some(5),
            ..DumpOptions::default()
        },
        DumpOptions {
            merged: true,
            ..DumpOptions::default()
        },
        DumpOptions {
            merged: true,
            ops: vec![Op::EpollWait, Op::Read, Op::Write],
            limit: Some(40),
            ..DumpOptions::default()
        },
    ];
    for opts in options {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let sa = dump(&trace, &opts, &mut a).expect("dumps");
        let sb = streamed.write(&opts, &mut b).expect("dumps");
        assert_eq!(
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(&a),
            "{opts:?}"
        );
        assert_eq!(
            (sb.events, sb.truncated),
            (sa.events, sa.truncated),
            "{opts:?}"
        );
        assert!(sa.events > 0, "{opts:?}");
    }
}
