//! Attacks on the readers and on what they write (issue 48, items 10, 13 and 14): FIFOs,
//! devices, sparse files and crafted names planted in a trace or a model directory; outputs
//! aimed at planted links and at directories other users may write; names chosen by the traced
//! program that hold terminal escape sequences.
//!
//! Each reader runs under a 5 s kill timer (`output_within`): a reader that blocks on a FIFO or
//! reads `/dev/zero` fails its test instead of hanging the run.

use scalpel_e2e::*;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The most a reader may take on planted input; the acceptance asks for 1 s, the rest is
/// slack for a loaded machine running a debug build.
const LIMIT: Duration = Duration::from_secs(5);

/// A recording of `termtitle` and the model `scalpel infer` made of it, made once and copied
/// by each test that alters it.
fn recorded() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let exe = build_c("termtitle", "termtitle", &[]);
        // Padding arguments: room for the title written over argv.
        let run = record(&exe, &["padding-for-the-title-padding-for-the-title"]);
        assert!(run.out.status.success(), "{}", run.stderr());
        let out = scalpel_run(&["infer".as_ref(), run.dir.as_os_str()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let dir = run.dir.clone();
        (run.tmp, dir)
    })
    .1
}

/// A copy of the recorded trace (with its `model/`) in a new temporary directory.
fn fresh() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let st = Command::new("cp")
        .arg("-a")
        .arg(recorded())
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    (tmp, dir)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `scalpel ARGS…` under the kill timer.
fn scalpel_run(args: &[&std::ffi::OsStr]) -> Output {
    let mut cmd = Command::new(scalpel());
    cmd.args(args).stdin(std::process::Stdio::null());
    let shown: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
    let start = Instant::now();
    let out = output_within(cmd, Path::new(&shown.join(" ")), LIMIT);
    assert!(
        start.elapsed() < LIMIT,
        "scalpel {} took too long",
        shown.join(" ")
    );
    out
}

/// What to plant in place of a file.
#[derive(Clone, Copy, Debug)]
enum Plant {
    Fifo,
    /// A symbolic link to `/dev/zero`.
    LinkToZero,
    /// A character device node like `/dev/zero` (root only).
    ZeroNode,
    /// A sparse file of 3 GB.
    Sparse,
}

fn plants() -> Vec<Plant> {
    let mut v = vec![Plant::Fifo, Plant::LinkToZero, Plant::Sparse];
    if is_root() {
        v.push(Plant::ZeroNode);
    }
    v
}

fn plant(path: &Path, what: Plant) {
    let _ = fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    match what {
        Plant::Fifo => {
            // SAFETY: mkfifo with a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        Plant::LinkToZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Plant::ZeroNode => {
            // SAFETY: mknod with a valid path; 1:5 is /dev/zero.
            let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 5)) };
            assert_eq!(r, 0, "mknod {}", path.display());
        }
        Plant::Sparse => fs::File::create(path).unwrap().set_len(3 << 30).unwrap(),
    }
}

/// The first thread file of the trace, relative to it.
fn a_thread_file(dir: &Path) -> PathBuf {
    for p in fs::read_dir(dir).unwrap() {
        let p = p.unwrap().path();
        if p.is_dir() && p.file_name().unwrap() != "model" {
            for f in fs::read_dir(&p).unwrap() {
                let f = f.unwrap().path();
                if f.file_name().unwrap().to_string_lossy().starts_with('t') {
                    return f.strip_prefix(dir).unwrap().to_path_buf();
                }
            }
        }
    }
    panic!("no thread file in {}", dir.display());
}

/// `files.list`, `shared.tbl` or a thread file planted as a FIFO, a device or a sparse file:
/// every reader of a trace directory finishes at once, and says which file it passed over
/// (a FIFO `files.list` or `shared.tbl` used to hang all of them for ever).
#[test]
fn trace_readers_pass_over_special_files_at_once() {
    let thread = a_thread_file(recorded());
    let targets = [
        PathBuf::from("files.list"),
        PathBuf::from("shared.tbl"),
        thread,
    ];
    for target in &targets {
        for what in plants() {
            let (tmp, dir) = fresh();
            fs::remove_dir_all(dir.join("model")).unwrap();
            plant(&dir.join(target), what);
            let out_dir = tmp.path().join("out");
            let d = dir.as_os_str();
            let runs: [Vec<&std::ffi::OsStr>; 4] = [
                vec!["summary".as_ref(), d],
                vec!["dump".as_ref(), d],
                vec!["infer".as_ref(), d, "-o".as_ref(), out_dir.as_os_str()],
                vec!["top".as_ref(), d],
            ];
            for args in runs {
                let out = scalpel_run(&args);
                let err = text(&out.stderr);
                let name = target.file_name().unwrap().to_string_lossy();
                let case = format!("{what:?} at {} for {:?}: {err}", target.display(), args[0]);
                // The sparse `shared.tbl` is read at one offset only: nothing to say about it.
                if matches!((what, name.as_ref()), (Plant::Sparse, "shared.tbl")) {
                    continue;
                }
                assert!(err.contains(name.as_ref()), "names the file: {case}");
                if !matches!(what, Plant::Sparse) {
                    assert!(err.contains("expected a regular file"), "{case}");
                }
            }
        }
    }
}

/// The files of a model directory (`graph.bin`, `model.bin`, and the JSON files naming them)
/// planted as FIFOs, devices or sparse files of 3 GB: every view refuses at once, naming the
/// file (a FIFO used to hang `top` and `waitfor`, `/dev/zero` filled the memory, a sparse
/// `graph.bin` cost 3 GB and 10 s before its length was checked).
#[test]
fn model_readers_refuse_special_files_at_once() {
    for target in ["graph.bin", "model.bin", "graph.json", "model.json"] {
        for what in plants() {
            let (tmp, dir) = fresh();
            let model = dir.join("model");
            plant(&model.join(target), what);
            let o = |n: &str| tmp.path().join(n).into_os_string();
            let (report, flame, timeline, export) =
                (o("r.html"), o("f.svg"), o("t.json"), o("e.json"));
            let m = model.as_os_str();
            let runs: [Vec<&std::ffi::OsStr>; 6] = [
                vec!["top".as_ref(), m],
                vec!["waitfor".as_ref(), m],
                vec!["report".as_ref(), m, "-o".as_ref(), &report],
                vec!["flame".as_ref(), m, "-o".as_ref(), &flame],
                vec!["timeline".as_ref(), m, "-o".as_ref(), &timeline],
                vec!["export".as_ref(), m, "-o".as_ref(), &export],
            ];
            for args in runs {
                let out = scalpel_run(&args);
                let err = text(&out.stderr);
                let case = format!("{what:?} at {target} for {:?}: {err}", args[0]);
                assert!(!out.status.success(), "refused: {case}");
                assert!(err.contains(target), "names the file: {case}");
                let expected = [
                    "expected a regular file",
                    "expected a file written in full",
                    "expected at most",
                ];
                assert!(
                    expected.iter().any(|e| err.contains(e)),
                    "says what: {case}"
                );
            }
        }
    }
}

/// Edits the JSON file `path` with `f`.
fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    f(&mut v);
    fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// A model whose JSON files name other files by path (`tables.file` of `../../etc/passwd` or
/// `/etc/passwd`, a `graph` of `../graph.json`) is refused: the names must be plain file names
/// beside the JSON file (a crafted model used to print the length and checksum of
/// `/etc/shadow`).
#[test]
fn a_model_naming_files_elsewhere_is_refused() {
    let cases: [(&str, &str, &str); 5] = [
        ("graph.json", "tables", "../../etc/passwd"),
        ("graph.json", "tables", "/etc/passwd"),
        ("model.json", "tables", "/etc/passwd"),
        ("model.json", "tables", ""),
        ("model.json", "graph", "../model/graph.json"),
    ];
    for (file, field, name) in cases {
        let (_tmp, dir) = fresh();
        let model = dir.join("model");
        edit_json(&model.join(file), |v| {
            if field == "tables" {
                v["tables"]["file"] = name.into();
            } else {
                v[field] = name.into();
            }
        });
        let out = scalpel_run(&["top".as_ref(), model.as_os_str()]);
        let err = text(&out.stderr);
        let case = format!("{file} {field} = {name:?}: {err}");
        assert!(!out.status.success(), "refused: {case}");
        assert!(err.contains("expected a plain file name"), "{case}");
        assert!(err.contains(&format!("{name:?}")), "names the name: {case}");
    }
}

/// Runs `scalpel ARGS…` under the kill timer and returns its exit status and peak resident
/// memory in KiB (`wait4`'s rusage, the child's alone).
// The child is reaped by `wait4` (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn max_rss_kib(args: &[&std::ffi::OsStr]) -> (bool, i64) {
    use std::os::unix::process::ExitStatusExt;
    let child = Command::new(scalpel())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: all-zero is a valid rusage.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            let ok = std::process::ExitStatus::from_raw(status).success();
            return (ok, ru.ru_maxrss);
        }
        if start.elapsed() > LIMIT {
            // SAFETY: kill our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("scalpel {:?} did not finish within {LIMIT:?}", args);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A sparse `graph.bin` of 3 GB, whether `graph.json` gives the real length or claims 3 GB,
/// is refused before it is read: `top`'s peak memory stays under twice that of reading the
/// valid model (plus slack for the allocator), where it used to reach 3.15 GB.
#[test]
fn a_sparse_table_costs_no_memory() {
    let (_tmp, dir) = fresh();
    let model = dir.join("model");
    let m = model.as_os_str();
    let (ok, valid) = max_rss_kib(&["top".as_ref(), m]);
    assert!(ok, "the valid model reads");
    plant(&model.join("graph.bin"), Plant::Sparse);
    let (ok, sparse) = max_rss_kib(&["top".as_ref(), m]);
    assert!(!ok, "the sparse table is refused");
    edit_json(&model.join("graph.json"), |v| {
        v["tables"]["bytes"] = (3u64 << 30).into();
    });
    let (ok, claimed) = max_rss_kib(&["top".as_ref(), m]);
    assert!(
        !ok,
        "the sparse table whose length the JSON claims is refused"
    );
    eprintln!("peak RSS: valid {valid} KiB, sparse {sparse} KiB, claimed sparse {claimed} KiB");
    let bound = 2 * valid + 32 * 1024;
    assert!(sparse < bound, "sparse: {sparse} KiB, valid {valid} KiB");
    assert!(claimed < bound, "claimed: {claimed} KiB, valid {valid} KiB");
}

/// `--names` naming `/dev/zero` (it reached 24 GB), a FIFO or a sparse file of 3 GB is refused
/// at once, with the file and what was expected.
#[test]
fn the_names_file_is_a_small_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    plant(&fifo, Plant::Fifo);
    let sparse = tmp.path().join("sparse");
    plant(&sparse, Plant::Sparse);
    let cases: [(&Path, &str); 3] = [
        (
            Path::new("/dev/zero"),
            "expected a regular file, found a character device",
        ),
        (&fifo, "expected a regular file, found a FIFO"),
        (&sparse, "expected at most"),
    ];
    for (names, expected) in cases {
        let out_dir = tmp.path().join("out");
        let out = scalpel_run(&[
            "infer".as_ref(),
            recorded().as_os_str(),
            "-o".as_ref(),
            out_dir.as_os_str(),
            "--names".as_ref(),
            names.as_os_str(),
        ]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", names.display());
        assert!(err.contains(&names.display().to_string()), "{err}");
        assert!(err.contains(expected), "{err}");
    }
}

/// `infer` makes its directory 0700 and its files 0600, whatever the umask (it made `model/`
/// 0755 with 0644 files, even inside the 0700 trace).
#[test]
fn infer_writes_what_only_the_user_can_read() {
    let (_tmp, dir) = fresh();
    fs::remove_dir_all(dir.join("model")).unwrap();
    let out = scalpel_run(&["infer".as_ref(), dir.as_os_str()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let model = dir.join("model");
    assert_eq!(fs::metadata(&model).unwrap().mode() & 0o777, 0o700);
    let mut files = 0;
    for f in fs::read_dir(&model).unwrap() {
        let f = f.unwrap();
        let mode = f.metadata().unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.path().display());
        files += 1;
    }
    assert!(files >= 6, "{files} files");
}

/// `infer -o` into a directory other users may write is refused and nothing is written there:
/// one of the user's own that is world-writable, and (as root) one that `nobody` owns.
#[test]
fn infer_refuses_an_output_directory_others_may_write() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    fs::create_dir(&mine).unwrap();
    fs::set_permissions(&mine, fs::Permissions::from_mode(0o777)).unwrap();
    let mut cases = vec![(mine, "other users may write there")];
    if is_root() {
        let theirs = tmp.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        cases.push((theirs, "belongs to uid 65534"));
    } else {
        not_run(
            "infer_refuses_an_output_directory_others_may_write (another user's)",
            "needs root to make a directory uid 65534 owns",
        );
    }
    for (out_dir, expected) in cases {
        let out = scalpel_run(&[
            "infer".as_ref(),
            recorded().as_os_str(),
            "-o".as_ref(),
            out_dir.as_os_str(),
        ]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", out_dir.display());
        assert!(err.contains(expected), "{err}");
        assert_eq!(
            fs::read_dir(&out_dir).unwrap().count(),
            0,
            "nothing written"
        );
    }
}

/// `report -o X` (and `flame`, `timeline`, `export`) where X is a link to a file of the
/// user's: refused, the link left a link and the file unchanged (`report` used to overwrite
/// the link's target, a user's `~/.bashrc`).
#[test]
fn views_never_write_through_a_planted_link() {
    let (tmp, dir) = fresh();
    let model = dir.join("model");
    let victim = tmp.path().join("bashrc");
    fs::write(&victim, b"precious\n").unwrap();
    for view in ["report", "flame", "timeline", "export"] {
        let link = tmp.path().join(format!("{view}.out"));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let out = scalpel_run(&[
            view.as_ref(),
            model.as_os_str(),
            "-o".as_ref(),
            link.as_os_str(),
        ]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{view}: {err}");
        assert!(err.contains("symbolic link"), "{view}: {err}");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&victim).unwrap(), b"precious\n", "{view}");
        let strays: Vec<OsString> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(strays.is_empty(), "{view} left {strays:?}");
    }
}

/// A program that names itself and its threads with escape sequences (an OSC 52 clipboard
/// write, a window title, a screen clear) gets them shown escaped, never raw, by `record`'s
/// summary, `summary`, `waitfor`, `top` and `dump`.
#[test]
fn readers_escape_names_the_traced_program_chose() {
    let dir = recorded();
    let model = dir.join("model");
    let tmp = tempfile::tempdir().unwrap();
    let again = tmp.path().join("again");
    let runs: [Vec<&std::ffi::OsStr>; 5] = [
        vec!["summary".as_ref(), dir.as_os_str()],
        vec!["waitfor".as_ref(), model.as_os_str()],
        vec!["top".as_ref(), model.as_os_str()],
        vec!["dump".as_ref(), dir.as_os_str()],
        vec![
            "infer".as_ref(),
            dir.as_os_str(),
            "-o".as_ref(),
            again.as_os_str(),
        ],
    ];
    let mut shown = 0;
    for args in runs {
        let out = scalpel_run(&args);
        assert!(out.status.success(), "{:?}: {}", args[0], text(&out.stderr));
        for (which, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !bytes.contains(&0x1b) && !bytes.contains(&0x07),
                "{:?} {which} holds a raw control byte: {}",
                args[0],
                text(bytes)
            );
            if text(bytes).contains("\\x1b]52;c;aGk=\\x07") {
                shown += 1;
            }
        }
    }
    assert!(
        shown >= 2,
        "the names reached the output (escaped) {shown} times"
    );
    // `record`'s own summary, printed on its stderr.
    let exe = build_c("termtitle", "termtitle", &[]);
    let run = record(&exe, &["padding-for-the-title-padding-for-the-title"]);
    assert!(!run.out.stderr.contains(&0x1b), "{}", run.stderr());
    assert!(
        run.stderr().contains("\\x1b]52;c;aGk=\\x07"),
        "{}",
        run.stderr()
    );
}
