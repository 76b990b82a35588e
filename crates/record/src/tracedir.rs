//! Making the trace directory: every step after the parent is opened works on a directory
//! descriptor, so no link planted at the path, and no directory swapped in under it, is ever
//! followed, changed or emptied.
//!
//! The directory is made with `mkdirat(parent, name, 0700)` under a umask of 077 (never wider,
//! even for a moment), then opened with `O_NOFOLLOW|O_DIRECTORY` and checked through that
//! descriptor; everything later (the check of an existing directory, its emptying under
//! `--force`, the broker's files) goes through the descriptor. Nothing is changed in a directory
//! this run did not make unless it is the user's own, closed to others, and empty or an earlier
//! trace.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::RecordError;

/// How deep `--force` goes when it removes an earlier trace's entries: a trace holds files in
/// process directories, one level down; anything deeper is not something the recorder made.
const MAX_DEPTH: u32 = 4;

/// An open, empty trace directory only this user can enter.
#[derive(Debug)]
pub struct TraceRoot {
    /// The directory, opened once and used for everything after.
    pub fd: OwnedFd,
    /// Its absolute path as the kernel names the descriptor (for display and the environment).
    pub path: PathBuf,
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(Errno) -> RecordError {
    let path = path.to_path_buf();
    move |e| RecordError::Io {
        path,
        action,
        source: e.into(),
    }
}

/// Whether a directory entry is something `scalpel record` writes: a process directory
/// `<pid>.<n>`, the shared counter table, the list of files made or the host file.
pub(super) fn is_trace_entry(name: &OsStr) -> bool {
    use scalpel_model::format::{HOST_FILE, MANIFEST, SHARED_TABLE};
    let name = name.to_string_lossy();
    if name == SHARED_TABLE || name == MANIFEST || name == HOST_FILE {
        return true;
    }
    let mut parts = name.splitn(2, '.');
    let num =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    num(parts.next()) && num(parts.next())
}

/// Makes `dir` an empty directory only this user can enter (mode 0700) and returns it open. A
/// link at `dir` (dangling or not) is refused; so is a directory owned by another user, or that
/// others can write, and nothing in it is changed then. A non-empty directory is emptied when
/// `force` is set and it holds only what a recording writes, else refused.
pub fn prepare_dir(dir: &Path, force: bool) -> Result<TraceRoot, RecordError> {
    prepare_dir_with(dir, force, || {})
}

/// [`prepare_dir`], calling `between` after the directory is made and before it is opened (tests
/// use it to swap a link in at that moment).
pub(super) fn prepare_dir_with(
    dir: &Path,
    force: bool,
    between: impl FnOnce(),
) -> Result<TraceRoot, RecordError> {
    let (fd, made) = open_or_make(dir, between)?;
    let st = rustix::fs::fstat(&fd).map_err(io_err(dir, "inspect"))?;
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me {
        return Err(RecordError::ForeignOwner {
            path: dir.to_path_buf(),
            owner: st.st_uid,
            me,
        });
    }
    let mode = st.st_mode & 0o7777;
    // Made now, it is 0700 already; an existing one others can write may hold what they
    // planted.
    if mode & 0o022 != 0 {
        return Err(RecordError::OpenToOthers {
            path: dir.to_path_buf(),
            mode,
        });
    }
    if !made {
        let entries = list(&fd).map_err(io_err(dir, "list"))?;
        if !entries.is_empty() && !force {
            return Err(RecordError::NotEmpty(dir.to_path_buf()));
        }
        // --force replaces an earlier trace, never a directory holding anything else.
        if let Some(other) = entries.iter().find(|e| !is_trace_entry(e)) {
            return Err(RecordError::NotATrace(dir.to_path_buf(), other.clone()));
        }
        for name in &entries {
            remove_entry(&fd, name, MAX_DEPTH).map_err(io_err(&dir.join(name), "remove"))?;
        }
    }
    // This run's directory, or the user's own empty one or earlier trace: closed to others
    // before anything is recorded there.
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).map_err(io_err(dir, "set permissions"))?;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .filter(|p| p.is_absolute())
        .or_else(|| std::path::absolute(dir).ok())
        .unwrap_or_else(|| dir.to_path_buf());
    Ok(TraceRoot { fd, path })
}

/// Opens the directory at `dir`, making it first if it is not there; says whether it was made.
fn open_or_make(dir: &Path, between: impl FnOnce()) -> Result<(OwnedFd, bool), RecordError> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    // `.`, `..` or `/` at the end: nothing to make, and no link can be planted there.
    let Some(Component::Normal(name)) = dir.components().next_back() else {
        let fd = rustix::fs::open(dir, dir_flags, Mode::empty()).map_err(|e| match e {
            Errno::NOTDIR => RecordError::NotADirectory(dir.to_path_buf()),
            e => io_err(dir, "open")(e),
        })?;
        return Ok((fd, false));
    };
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent_fd = match rustix::fs::open(parent, dir_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            // Missing parents are ordinary directories of the user's, never writable by others.
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(|e| RecordError::Io {
                    path: parent.to_path_buf(),
                    action: "create directory",
                    source: e,
                })?;
            rustix::fs::open(parent, dir_flags, Mode::empty()).map_err(io_err(parent, "open"))?
        }
        Err(e) => return Err(io_err(parent, "open")(e)),
    };
    // Under a umask of 077 the directory is 0700 from the moment it exists, whatever the
    // user's umask (000 would leave a window in which another user could plant entries).
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    let made = rustix::fs::mkdirat(&parent_fd, name, Mode::from_raw_mode(0o700));
    rustix::process::umask(old);
    let made = match made {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(io_err(dir, "create directory")(e)),
    };
    between();
    match rustix::fs::openat(
        &parent_fd,
        name,
        dir_flags | OFlags::NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => Ok((fd, made)),
        Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
            let st = rustix::fs::statat(&parent_fd, name, AtFlags::SYMLINK_NOFOLLOW);
            match st.map(|s| FileType::from_raw_mode(s.st_mode)) {
                Ok(FileType::Symlink) => Err(RecordError::Symlink(dir.to_path_buf())),
                Ok(FileType::Directory) | Err(_) => Err(io_err(dir, "open")(e)),
                Ok(_) => Err(RecordError::NotADirectory(dir.to_path_buf())),
            }
        }
        Err(e) => Err(io_err(dir, "open")(e)),
    }
}

/// The names in the directory open at `fd`, without `.` and `..`.
fn list(fd: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    let mut dir = rustix::fs::Dir::read_from(fd)?;
    let mut names = Vec::new();
    while let Some(e) = dir.read() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(OsStr::from_bytes(n).to_os_string());
        }
    }
    Ok(names)
}

/// Removes `name` from the directory open at `parent`: a file or link is unlinked (a link's
/// target is never touched), a directory is emptied through its own descriptor, opened without
/// following links, at most `depth` levels down.
fn remove_entry(parent: &impl AsFd, name: &OsStr, depth: u32) -> Result<(), Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(parent, name, flags, Mode::empty()) {
        Ok(sub) => {
            if depth == 0 {
                return Err(Errno::NOTEMPTY);
            }
            for n in list(&sub)? {
                remove_entry(&sub, &n, depth - 1)?;
            }
            rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)
        }
        // A link, a file or anything else that is not a directory: the entry itself goes.
        Err(Errno::LOOP | Errno::NOTDIR) => rustix::fs::unlinkat(parent, name, AtFlags::empty()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn a_new_directory_is_made_closed_and_an_earlier_trace_emptied() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("a/b");
        let root = prepare_dir(&d, false).unwrap();
        assert!(root.path.is_absolute());
        assert_eq!(root.path, d.canonicalize().unwrap());
        let mode = fs::metadata(&d).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        fs::create_dir(d.join("1.0")).unwrap();
        fs::write(d.join("1.0/t1.trace"), b"x").unwrap();
        std::os::unix::fs::symlink(tmp.path(), d.join("1.0/t2.trace")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), d.join("2.0")).unwrap();
        fs::write(d.join("shared.tbl"), b"x").unwrap();
        assert!(matches!(
            prepare_dir(&d, false),
            Err(RecordError::NotEmpty(_))
        ));
        prepare_dir(&d, true).unwrap();
        // The earlier trace is gone, links removed and never followed.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
        assert!(tmp.path().join("a").is_dir());
        let f = tmp.path().join("file");
        fs::write(&f, b"").unwrap();
        assert!(matches!(
            prepare_dir(&f, true),
            Err(RecordError::NotADirectory(_))
        ));
    }

    /// A link at the path, to a directory that looks like a trace, is refused with and without
    /// `--force`, and its target keeps its mode and entries.
    #[test]
    fn a_link_is_refused_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::create_dir(victim.join("2024.01")).unwrap();
        fs::write(victim.join("shared.tbl"), b"keep").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o750)).unwrap();
        let link = tmp.path().join("t");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for force in [false, true] {
            let e = prepare_dir(&link, force).unwrap_err();
            assert!(matches!(e, RecordError::Symlink(_)), "{e}");
            let mut slash = link.clone().into_os_string();
            slash.push("/");
            let e = prepare_dir(Path::new(&slash), force).unwrap_err();
            assert!(matches!(e, RecordError::Symlink(_)), "{e}");
        }
        let dangling = tmp.path().join("d");
        std::os::unix::fs::symlink(tmp.path().join("nothing"), &dangling).unwrap();
        assert!(matches!(
            prepare_dir(&dangling, false),
            Err(RecordError::Symlink(_))
        ));
        assert!(!tmp.path().join("nothing").exists());
        assert_eq!(fs::metadata(&victim).unwrap().mode() & 0o7777, 0o750);
        assert_eq!(fs::read_dir(&victim).unwrap().count(), 2);
        assert_eq!(fs::read(victim.join("shared.tbl")).unwrap(), b"keep");
    }

    /// The directory made is replaced with a link before it is opened (the race an attacker who
    /// can write the parent runs): the link is refused, and its target is neither changed nor
    /// written.
    #[test]
    fn a_link_swapped_in_after_creation_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("f"), b"keep").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o755)).unwrap();
        let d = tmp.path().join("trace");
        let e = prepare_dir_with(&d, false, || {
            fs::rename(&d, tmp.path().join("moved")).unwrap();
            std::os::unix::fs::symlink(&victim, &d).unwrap();
        })
        .unwrap_err();
        assert!(matches!(e, RecordError::Symlink(_)), "{e}");
        assert_eq!(fs::metadata(&victim).unwrap().mode() & 0o7777, 0o755);
        assert_eq!(fs::read_dir(&victim).unwrap().count(), 1);
    }

    /// A directory of the user's own (mode 0755) holding their files is refused with and
    /// without `--force`, and keeps its mode and its files: the recorder changes nothing it
    /// refuses.
    #[test]
    fn a_users_own_directory_is_refused_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let docs = tmp.path().join("mydocs");
        fs::create_dir(&docs).unwrap();
        fs::write(docs.join("notes.txt"), b"mine").unwrap();
        fs::set_permissions(&docs, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            prepare_dir(&docs, false),
            Err(RecordError::NotEmpty(_))
        ));
        assert!(matches!(
            prepare_dir(&docs, true),
            Err(RecordError::NotATrace(..))
        ));
        assert_eq!(fs::metadata(&docs).unwrap().mode() & 0o7777, 0o755);
        assert_eq!(fs::read(docs.join("notes.txt")).unwrap(), b"mine");
        assert_eq!(fs::read_dir(&docs).unwrap().count(), 1);
    }

    /// An existing directory of the user's that others can write is refused as it is.
    #[test]
    fn a_directory_open_to_others_is_refused_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("open");
        fs::create_dir(&d).unwrap();
        fs::write(d.join("1.0"), b"").unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_dir(&d, true).unwrap_err();
        assert!(matches!(e, RecordError::OpenToOthers { .. }), "{e}");
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o7777, 0o777);
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
    }
}
