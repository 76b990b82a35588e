//! The recorder's side of the broker protocol (`scalpel_format::broker`): every directory and
//! file of a recording is made here, owned by the user who records and closed to everyone else
//! (directories 0700, files 0600), and handed to the traced processes as descriptors.
//!
//! One thread serves the socket until no traced process holds it any more, then finishes the
//! recording: files a process never wrote a header into are removed and counted, and files of
//! threads that ended without saying so are trimmed to what they hold.
//!
//! The broker holds one descriptor for the trace directory and one for the counter table,
//! whatever the number of processes: a process directory is opened when a request needs it
//! (without following links, and checked to be the one made) and closed at once. Every file it
//! opens again is opened without following links or blocking, and used only if it is the regular
//! file it made (same device and inode): a FIFO or a replacement planted under a name it made is
//! left alone and not listed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::thread::JoinHandle;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use scalpel_model::broker::{encode_reply, Request, RequestKind, REQUEST_LEN};
use scalpel_model::format::{shared_loss, MANIFEST, MANIFEST_HEADER, PROCESS_FILE};

use super::made::{create, header_missing, is_regular, open_made, trim};
use super::table;

/// Incarnations tried per pid before a process is refused a directory.
const MAX_INCARNATIONS: u32 = 10_000;
/// Names tried per thread id (`t<tid>.trace`, `t<tid>.1.trace`, ...).
const MAX_REUSE: u32 = 1_000;

/// A file handed out, named by its index (the token).
struct Handed {
    dir: usize,
    name: String,
    dev: u64,
    ino: u64,
    /// The process that asked for it.
    pid: u32,
    /// Its thread said it finished (and the file was trimmed then).
    closed: bool,
}

/// A process directory `<pid>.<n>`, by name and identity (no descriptor is kept for it), with
/// the identity of the process file made in it.
struct ProcDir {
    name: String,
    dev: u64,
    ino: u64,
    file_dev: u64,
    file_ino: u64,
}

/// What the recorder found when the recording ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrokerReport {
    /// Process directories made.
    pub processes: u32,
    /// Thread files made.
    pub threads: u32,
    /// Files removed because their process never wrote a header.
    pub unfinished: u32,
    /// Why the loss counters could not be written to the trace as `shared.tbl` (the raw errno),
    /// if they could not.
    pub table_error: Option<i32>,
}

struct Broker {
    root: OwnedFd,
    shared: File,
    dirs: Vec<ProcDir>,
    by_incarnation: HashMap<(u32, u32), usize>,
    next_incarnation: HashMap<u32, u32>,
    files: Vec<Handed>,
}

/// The running broker: its thread, which returns the report when the recording ends.
pub(super) struct BrokerThread(JoinHandle<BrokerReport>);

impl BrokerThread {
    /// Waits until no traced process holds the socket, and returns what was made.
    pub(super) fn finish(self) -> BrokerReport {
        self.0.join().unwrap_or_default()
    }
}

/// Starts serving the trace directory open at `root` on a new socket pair, with a new table of
/// shared counters; returns the thread and the end the command inherits.
pub(super) fn start(root: OwnedFd) -> std::io::Result<(BrokerThread, OwnedFd)> {
    let shared = table::create()?;
    let (ours, theirs) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    // The kernel then attaches each sender's pid to its requests: a process may only reopen or
    // finish its own files (a compromised worker must not cut its root master's file under it).
    rustix::net::sockopt::set_socket_passcred(&ours, true)?;
    let mut broker = Broker::new(root, shared);
    let thread = std::thread::Builder::new()
        .name("scalpel-broker".into())
        .spawn(move || {
            broker.serve(&ours);
            broker.finish()
        })?;
    Ok((BrokerThread(thread), theirs))
}

impl Broker {
    /// A broker for the trace directory `root` whose counter table is `shared`.
    fn new(root: OwnedFd, shared: File) -> Broker {
        Broker {
            root,
            shared,
            dirs: Vec::new(),
            by_incarnation: HashMap::new(),
            next_incarnation: HashMap::new(),
            files: Vec::new(),
        }
    }

    fn serve(&mut self, sock: &OwnedFd) {
        let mut msg = [0u8; REQUEST_LEN + 1];
        let mut space =
            [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4), ScmCredentials(1))];
        loop {
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let got = rustix::net::recvmsg(
                sock,
                &mut [IoSliceMut::new(&mut msg)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            );
            let n = match got {
                Ok(r) if r.bytes == 0 => return,
                Ok(r) => r.bytes,
                Err(Errno::INTR) => continue,
                Err(_) => return,
            };
            let mut reply_to = None;
            let mut sender = None;
            for m in control.drain() {
                match m {
                    // The first descriptor is the answer's socket; any other is dropped here.
                    RecvAncillaryMessage::ScmRights(fds) => {
                        for fd in fds {
                            reply_to.get_or_insert(fd);
                        }
                    }
                    RecvAncillaryMessage::ScmCredentials(c) => {
                        sender = u32::try_from(rustix::process::Pid::as_raw(Some(c.pid))).ok();
                    }
                    _ => {}
                }
            }
            let Some(req) = Request::decode(&msg[..n]) else {
                continue;
            };
            let answer = match sender {
                Some(pid) => self.handle(&req, pid),
                None => Err(Errno::PERM),
            };
            if let (true, Some(to)) = (req.kind.wants_reply(), reply_to) {
                send_reply(&to, answer);
            }
        }
    }

    /// Answers `req` from process `sender` (as the kernel says): a process asks for its own
    /// directory and files only.
    fn handle(&mut self, req: &Request, sender: u32) -> Result<(OwnedFd, u32), Errno> {
        let own = |f: &Handed| {
            if f.pid == sender {
                Ok(())
            } else {
                Err(Errno::PERM)
            }
        };
        match req.kind {
            RequestKind::Shared => Ok((rustix::io::dup(&self.shared)?, 0)),
            RequestKind::Process | RequestKind::Thread if req.pid != sender => Err(Errno::PERM),
            RequestKind::Process => self.new_process(req.pid),
            RequestKind::Thread => self.new_thread(req.pid, req.a, req.b),
            RequestKind::Reopen => {
                let f = self.files.get(req.a as usize).ok_or(Errno::INVAL)?;
                own(f)?;
                let dir = self.open_dir(f.dir)?;
                Ok((open_made(&dir, &f.name, OFlags::RDWR, f.dev, f.ino)?, req.a))
            }
            RequestKind::Closed => {
                if let Some(f) = self
                    .files
                    .get_mut(req.a as usize)
                    .filter(|f| f.pid == sender)
                {
                    f.closed = true;
                    if let Ok(dir) = open_dir(&self.root, &self.dirs[f.dir]) {
                        trim(&dir, &f.name, f.dev, f.ino, Some(req.b));
                    }
                }
                Err(Errno::INVAL)
            }
            RequestKind::Unrecorded => {
                table::count_loss(&self.shared, shared_loss::PROCESSES_WITHOUT_DIR, 1);
                Err(Errno::INVAL)
            }
        }
    }

    /// The process directory with index `i`, opened for this request only.
    fn open_dir(&self, i: usize) -> Result<OwnedFd, Errno> {
        open_dir(&self.root, self.dirs.get(i).ok_or(Errno::INVAL)?)
    }

    fn new_process(&mut self, pid: u32) -> Result<(OwnedFd, u32), Errno> {
        let next = self.next_incarnation.entry(pid).or_insert(0);
        let mut made = None;
        while *next < MAX_INCARNATIONS {
            let inc = *next;
            *next += 1;
            let name = format!("{pid}.{inc}");
            match rustix::fs::mkdirat(&self.root, name.as_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) => {
                    made = Some((name, inc));
                    break;
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e),
            }
        }
        let (name, inc) = made.ok_or(Errno::EXIST)?;
        let opened = rustix::fs::openat(
            &self.root,
            name.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .and_then(|dir| {
            let d = rustix::fs::fstat(&dir)?;
            let file = create(&dir, PROCESS_FILE)?;
            let f = rustix::fs::fstat(&file)?;
            Ok((d, file, f))
        });
        let (d, file, f) = match opened {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors or space: the process is counted unrecorded by the agent,
                // and leaves no empty directory behind.
                let _ = rustix::fs::unlinkat(&self.root, name.as_str(), AtFlags::REMOVEDIR);
                return Err(e);
            }
        };
        let index = self.dirs.len();
        self.dirs.push(ProcDir {
            name,
            dev: d.st_dev,
            ino: d.st_ino,
            file_dev: f.st_dev,
            file_ino: f.st_ino,
        });
        self.by_incarnation.insert((pid, inc), index);
        Ok((file, inc))
    }

    fn new_thread(&mut self, pid: u32, inc: u32, tid: u64) -> Result<(OwnedFd, u32), Errno> {
        let &dir = self.by_incarnation.get(&(pid, inc)).ok_or(Errno::NOENT)?;
        let token = u32::try_from(self.files.len()).map_err(|_| Errno::NOSPC)?;
        let dir_fd = self.open_dir(dir)?;
        for k in 0..MAX_REUSE {
            let name = if k == 0 {
                format!("t{tid}.trace")
            } else {
                format!("t{tid}.{k}.trace")
            };
            match create(&dir_fd, &name) {
                Ok(fd) => {
                    let st = rustix::fs::fstat(&fd)?;
                    self.files.push(Handed {
                        dir,
                        name,
                        dev: st.st_dev,
                        ino: st.st_ino,
                        pid,
                        closed: false,
                    });
                    return Ok((fd, token));
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Errno::EXIST)
    }

    /// Ends the recording: removes files never begun, trims those of threads that ended without
    /// a word (their process exited at once, or was killed), counts what was removed, removes
    /// the process directories left empty, and writes the loss counters and the list of files.
    fn finish(self) -> BrokerReport {
        let mut unfinished = 0u32;
        let mut open_files: Vec<Vec<&Handed>> = self.dirs.iter().map(|_| Vec::new()).collect();
        for f in self.files.iter().filter(|f| !f.closed) {
            open_files[f.dir].push(f);
        }
        for (d, files) in self.dirs.iter().zip(open_files) {
            // A directory replaced or made unreachable is left as it is.
            let Ok(dir) = open_dir(&self.root, d) else {
                continue;
            };
            if header_missing(&dir, PROCESS_FILE, d.file_dev, d.file_ino)
                && rustix::fs::unlinkat(&dir, PROCESS_FILE, AtFlags::empty()).is_ok()
            {
                unfinished += 1;
            }
            for f in files {
                if header_missing(&dir, &f.name, f.dev, f.ino) {
                    if rustix::fs::unlinkat(&dir, f.name.as_str(), AtFlags::empty()).is_ok() {
                        unfinished += 1;
                    }
                } else if !alive(f.pid) {
                    // A live process that lost the socket may still write through its mapping:
                    // only a dead one's file is cut.
                    trim(&dir, &f.name, f.dev, f.ino, None);
                }
            }
            drop(dir);
            // An empty directory is what a process left that never wrote a header.
            let _ = rustix::fs::unlinkat(&self.root, d.name.as_str(), AtFlags::REMOVEDIR);
        }
        if unfinished > 0 {
            table::count_loss(
                &self.shared,
                shared_loss::UNFINISHED_FILES,
                u64::from(unfinished),
            );
        }
        let table_error = table::save(&self.shared, &self.root)
            .err()
            .map(|e| e.raw_os_error());
        self.write_manifest();
        BrokerReport {
            processes: u32::try_from(self.dirs.len()).unwrap_or(u32::MAX),
            threads: u32::try_from(self.files.len()).unwrap_or(u32::MAX),
            unfinished,
            table_error,
        }
    }
}

impl Broker {
    /// Lists every file made and kept, so a reader can tell when one was removed or added.
    fn write_manifest(&self) {
        use std::io::Write;
        let mut names = Vec::new();
        let mut is_made = |d: &ProcDir, name: &str, dev: u64, ino: u64| {
            // Only what is still there as made: files never begun were removed above, and one
            // replaced is not the recorder's.
            let st = rustix::fs::statat(
                &self.root,
                format!("{}/{name}", d.name).as_str(),
                AtFlags::SYMLINK_NOFOLLOW,
            );
            if st.is_ok_and(|st| st.st_dev == dev && st.st_ino == ino && is_regular(&st)) {
                names.push(format!("{}/{name}", d.name));
            }
        };
        for d in &self.dirs {
            is_made(d, PROCESS_FILE, d.file_dev, d.file_ino);
        }
        for f in &self.files {
            is_made(&self.dirs[f.dir], &f.name, f.dev, f.ino);
        }
        names.sort();
        let mut text = String::from(MANIFEST_HEADER);
        text.push('\n');
        for n in names {
            text.push_str(&n);
            text.push('\n');
        }
        if let Ok(fd) = create(&self.root, MANIFEST) {
            let _ = File::from(fd).write_all(text.as_bytes());
        }
    }
}

/// The process directory `d` under `root`, never through a link, if it is still the one made.
fn open_dir(root: &OwnedFd, d: &ProcDir) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::openat(
        root,
        d.name.as_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if st.st_dev != d.dev || st.st_ino != d.ino {
        return Err(Errno::STALE);
    }
    Ok(fd)
}

fn send_reply(to: &OwnedFd, answer: Result<(OwnedFd, u32), Errno>) {
    let (status, value, fd) = match answer {
        Ok((fd, v)) => (0, v, Some(fd)),
        Err(e) => (e.raw_os_error().unsigned_abs(), 0, None),
    };
    let reply = encode_reply(status, value);
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = &fd {
        fds = [fd.as_fd()];
        control.push(SendAncillaryMessage::ScmRights(&fds));
    }
    // The asking thread may have given up (timeout): nothing to do then.
    let _ = rustix::net::sendmsg(
        to,
        &[IoSlice::new(&reply)],
        &mut control,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    );
}

/// Whether a process with this id exists (a pid reused since only keeps a file untrimmed).
fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(rustix::process::test_kill_process(pid), Err(Errno::SRCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::format::{self, hdr, SHARED_TABLE};
    use std::path::Path;

    fn broker(dir: &Path) -> Broker {
        let root = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Broker::new(root, table::create().unwrap())
    }

    /// A process that got its files and died before writing a header leaves nothing behind but
    /// a count; a thread that wrote records but never said it finished is trimmed to them; the
    /// list of files names what is kept.
    #[test]
    fn unbegun_files_are_removed_and_counted_and_the_rest_trimmed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut b = broker(tmp.path());
        let dead = u32::MAX - 1; // no such process: its files may be trimmed
        let (_never, inc) = b.new_process(dead).unwrap();
        let (begun, _) = b.new_process(dead).unwrap();
        assert_eq!(inc, 0);
        // The second incarnation writes a header; its thread writes 100 record bytes of a
        // 1 MiB reservation and is never closed.
        let mut header = vec![0u8; format::HEADER_SIZE];
        header[..8].copy_from_slice(&format::MAGIC);
        rustix::io::pwrite(&begun, &header, 0).unwrap();
        let (thread, _) = b.new_thread(dead, 1, 7).unwrap();
        header[hdr::COMMITTED..hdr::COMMITTED + 8].copy_from_slice(&100u64.to_le_bytes());
        rustix::io::pwrite(&thread, &header, 0).unwrap();
        rustix::fs::ftruncate(&thread, 1 << 20).unwrap();
        let report = b.finish();
        assert_eq!(report.unfinished, 1, "{report:?}");
        assert_eq!(report.table_error, None);
        let dir = tmp.path();
        assert!(
            !dir.join(format!("{dead}.0")).exists(),
            "the unbegun directory is gone"
        );
        let t = dir.join(format!("{dead}.1/t7.trace"));
        assert_eq!(
            std::fs::metadata(&t).unwrap().len(),
            format::HEADER_SIZE as u64 + 100
        );
        let list = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert_eq!(
            list,
            format!("{MANIFEST_HEADER}\n{dead}.1/process.trace\n{dead}.1/t7.trace\n")
        );
        let mut b8 = [0u8; 8];
        let shared = std::fs::File::open(dir.join(SHARED_TABLE)).unwrap();
        rustix::io::pread(
            &shared,
            &mut b8,
            shared_loss::OFFSET + 8 * shared_loss::UNFINISHED_FILES as u64,
        )
        .unwrap();
        assert_eq!(u64::from_le_bytes(b8), 1);
    }
}
