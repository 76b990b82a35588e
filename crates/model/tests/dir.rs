//! Reading whole trace directories: layout, ordering, merging and bad files.

use std::fs;
use std::path::Path;

use scalpel_model::format::{ObjKind, Op};
use scalpel_model::read::{read_dir, Header, Identity, ReadError};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

fn thread(dir: &Path, name: &str, pid: u32, tid: u32, dts: &[u64]) {
    let mut h = Header::thread(pid, tid);
    h.thread_name = format!("th{tid}").into_bytes();
    let mut w = TraceWriter::new(h);
    w.object(1, ObjKind::Mutex.code(), 0x1000, &Identity::None);
    for &dt in dts {
        w.event(&RawEvent {
            op: Op::MutexLock as u8,
            dt,
            obj: Some(1),
            ..RawEvent::default()
        });
    }
    w.write_to(dir.join(name)).unwrap();
}

fn process(dir: &Path, pid: u32) {
    let mut w = TraceWriter::new(Header::process(pid));
    w.cmdline(&["prog", "arg"]).exe(b"/bin/prog");
    w.write_to(dir.join("process.trace")).unwrap();
}

#[test]
fn reads_layout_in_order_and_merges_by_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::write(root.join("shared.tbl"), b"not a trace").unwrap();
    for (d, pid) in [("200.0", 200), ("100.1", 100), ("100.0", 100)] {
        fs::create_dir(root.join(d)).unwrap();
        process(&root.join(d), pid);
    }
    let p = root.join("100.0");
    thread(&p, "t101.trace", 100, 101, &[10, 10]);
    thread(&p, "t100.trace", 100, 100, &[5, 15, 100]);
    thread(&p, "t101.2.trace", 100, 101, &[20]);
    thread(&p, "t99.trace", 100, 99, &[20]);
    fs::write(p.join("t98.trace"), b"garbage").unwrap();
    fs::write(p.join("notes.txt"), b"ignored").unwrap();
    thread(&root.join("200.0"), "t200.trace", 200, 200, &[20]);
    fs::create_dir(root.join("300.0")).unwrap(); // empty: left out

    let t = read_dir(root).unwrap();
    let procs: Vec<_> = t.processes.iter().map(|p| (p.pid, p.incarnation)).collect();
    assert_eq!(procs, [(100, 0), (100, 1), (200, 0)]);
    let names: Vec<_> = t.processes[0]
        .threads
        .iter()
        .map(|f| f.path.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["t99.trace", "t100.trace", "t101.trace", "t101.2.trace"]
    );
    assert_eq!(t.processes[0].cmdline().unwrap(), ["prog", "arg"]);
    assert_eq!(t.processes[0].exe().unwrap().to_str(), Some("/bin/prog"));
    assert_eq!(t.warnings.len(), 1);
    assert!(t.warnings[0].path().ends_with("100.0/t98.trace"));
    assert_eq!(t.all_warnings().count(), 1);

    let merged: Vec<_> = t
        .events_by_time()
        .iter()
        .map(|r| (r.event.ts_ns, r.process.pid, r.file.header.tid, r.index))
        .collect();
    assert_eq!(
        merged,
        [
            (5, 100, 100, 0),
            (10, 100, 101, 0),
            (20, 100, 99, 0),
            (20, 100, 100, 1),
            (20, 100, 101, 1),
            (20, 100, 101, 0),
            (20, 200, 200, 0),
            (120, 100, 100, 2),
        ]
    );
    assert_eq!(t.first_ts(), Some(5));
    assert_eq!(t.identities().len(), 1);
}

#[test]
fn missing_or_empty_dirs_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let e = read_dir(tmp.path().join("nope")).unwrap_err();
    assert!(matches!(e, ReadError::Io { .. }));
    assert!(e.to_string().contains("nope: cannot read"), "{e}");
    let e = read_dir(tmp.path()).unwrap_err();
    assert!(
        matches!(&e, ReadError::NoTraces { failures, .. } if failures.is_empty()),
        "{e}"
    );
    fs::create_dir(tmp.path().join("1.0")).unwrap();
    fs::write(tmp.path().join("1.0/t1.trace"), b"bad").unwrap();
    let e = read_dir(tmp.path()).unwrap_err();
    assert!(
        matches!(&e, ReadError::NoTraces { failures, .. } if failures.len() == 1),
        "{e}"
    );
    // The reason the candidate failed is part of the message.
    assert!(e.to_string().contains("t1.trace"), "{e}");
    let f = tmp.path().join("file");
    fs::write(&f, b"").unwrap();
    assert!(matches!(read_dir(&f), Err(ReadError::NotADirectory { .. })));
}

/// Damage that used to pass in silence: a thread file whose header names another thread, a
/// process file under a thread's name, an unknown file kind and a clock of 0 ticks per second.
/// Each is a warning naming the file and the header field's offset; every file is still read.
#[test]
fn headers_that_disagree_with_their_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("100.0");
    fs::create_dir(&p).unwrap();
    process(&p, 100);
    thread(&p, "t100.trace", 100, 100, &[5]);
    thread(&p, "t101.trace", 100, 4242, &[5]); // header: tid 4242
    let mut h = Header::thread(100, 102);
    h.file_kind = 9;
    h.ticks_per_sec = 0;
    TraceWriter::new(h).write_to(p.join("t102.trace")).unwrap();
    let mut w = TraceWriter::new(Header::process(100));
    w.cmdline(&["x"]);
    w.write_to(p.join("t103.trace")).unwrap();
    let t = read_dir(tmp.path()).unwrap();
    assert_eq!(t.processes[0].threads.len(), 4, "every file is read");
    let warnings: Vec<String> = t.all_warnings().map(|w| w.to_string()).collect();
    let has = |file: &str, what: &str| {
        warnings
            .iter()
            .any(|w| w.contains(file) && w.contains(what))
    };
    assert!(
        has(
            "t101.trace",
            "the header names thread 4242, the file name thread 101"
        ),
        "{warnings:#?}"
    );
    assert!(has("t102.trace", "unknown file kind 9"), "{warnings:#?}");
    assert!(has("t102.trace", "ticks per second is 0"), "{warnings:#?}");
    assert!(
        has("t103.trace", "a process file under a thread file's name"),
        "{warnings:#?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("t100.trace")),
        "{warnings:#?}"
    );
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
}
