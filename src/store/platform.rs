//! What differs between operating systems, in one place, so the rest of `store` reads the
//! same everywhere: the create-only rename (Linux's `renameat2(RENAME_NOREPLACE)`, or the
//! portable way below), open flags, folder fsync, and the inode and link count of a file.
//! Nothing here names a host path: every call works on directory handles and single names.
//!
//! The Linux fast paths are used on Linux unless the `portable` feature is on; the
//! portable paths are what macOS and Windows use, and the feature lets Linux test them.

use std::io::{self, ErrorKind};

use cap_std::fs::{Dir, Metadata, OpenOptions};

/// Options that open a folder and nothing else. On Unix, `O_DIRECTORY` makes a FIFO (or
/// any other non-folder) in a folder's place fail at once with `ENOTDIR`, where a plain
/// open would wait for a writer forever; `O_NONBLOCK` besides, as for every open of the
/// store. Windows has no FIFOs in the file system; `maybe_dir` lets it open a folder.
pub fn dir_options() -> OpenOptions {
    use cap_fs_ext::OpenOptionsMaybeDirExt;
    let mut options = OpenOptions::new();
    options.read(true).maybe_dir(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        use rustix::fs::OFlags;
        options.custom_flags((OFlags::DIRECTORY | OFlags::NONBLOCK).bits() as i32);
    }
    options
}

/// Options for reading a memory: on Unix `O_NONBLOCK` (a FIFO cannot hang the server) and
/// `O_NOCTTY` (a terminal device never becomes the controlling terminal).
pub fn read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        use rustix::fs::OFlags;
        options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
    }
    options
}

/// Options for a state file: on Unix `O_NONBLOCK`, so a FIFO someone put in `.memdir/`
/// fails or reads empty at once instead of blocking the store's lock holder forever (it
/// has no effect on regular files).
pub fn nonblocking() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options
}

/// Makes the entries of folder `dir` (a rename, a new file, a removal) durable. On macOS
/// `fsync` only hands the data to the drive, whose cache may still lose it; `F_FULLFSYNC`
/// flushes that cache too (as std's `sync_all` does for files), with `fsync` as the
/// fallback where a file system refuses it. Windows cannot flush a folder: there NTFS's
/// own journal orders the rename after the file's flushed content, so a crash still
/// leaves the old content or the new, but a rename acknowledged just before a power loss
/// may be undone (the old content comes back).
pub fn sync_dir(dir: &Dir) -> io::Result<()> {
    #[cfg(target_vendor = "apple")]
    {
        if rustix::fs::fcntl_fullfsync(dir).is_ok() {
            return Ok(());
        }
    }
    #[cfg(unix)]
    return rustix::fs::fsync(dir).map_err(io::Error::from);
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Modification time in nanoseconds since the epoch.
pub fn mtime_ns(meta: &Metadata) -> i64 {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt;
        meta.mtime() * 1_000_000_000 + meta.mtime_nsec()
    }
    #[cfg(not(unix))]
    {
        meta.modified()
            .ok()
            .and_then(|t| t.into_std().duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64)
    }
}

/// The inode number. Windows reports a file index only for metadata read through an open
/// handle (cap-std would panic otherwise), so there it is 0 and stamps rely on size and
/// modification time.
pub fn ino(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt;
        meta.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// The number of hard links. On Windows it is not known from every metadata (see
/// [`ino`]) and is taken as 1: the one-link check of reads is a Unix safeguard.
pub fn nlink(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt;
        meta.nlink()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        1
    }
}

/// Whether an error says a path component is not a folder (`ENOTDIR`).
pub fn is_not_dir(e: &io::Error) -> bool {
    e.kind() == ErrorKind::NotADirectory
}

/// Whether an open failed on a symlink loop or a mount crossing that `openat2` refused
/// (`ELOOP`, `EXDEV`): both mean a path led somewhere it may not.
pub fn is_loop_or_crossing(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        let errno = e.raw_os_error().map(Errno::from_raw_os_error);
        matches!(errno, Some(Errno::LOOP | Errno::XDEV))
    }
    #[cfg(not(unix))]
    {
        e.kind() == ErrorKind::CrossesDevices
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, without moving a shared cursor.
#[cfg(unix)]
pub fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Writes all of `bytes` at `offset`, without moving a shared cursor.
#[cfg(unix)]
pub fn write_all_at(file: &std::fs::File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

/// Reads exactly `buf.len()` bytes at `offset`.
#[cfg(windows)]
pub fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// Writes all of `bytes` at `offset`.
#[cfg(windows)]
pub fn write_all_at(file: &std::fs::File, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !bytes.is_empty() {
        match file.seek_write(bytes, offset)? {
            0 => return Err(ErrorKind::WriteZero.into()),
            n => {
                bytes = &bytes[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// Renames `from` in `from_dir` to `to` in `to_dir`, replacing a file there. Both are
/// single names under confined handles.
pub fn rename_replace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    #[cfg(unix)]
    return rustix::fs::renameat(from_dir, from, to_dir, to).map_err(io::Error::from);
    #[cfg(not(unix))]
    {
        from_dir.rename(from, to_dir, to)
    }
}

/// Renames `from` in `from_dir` to `to` in `to_dir` only if nothing is at `to`: otherwise
/// fails with `AlreadyExists` and changes nothing. The caller holds the store lock, but
/// an editor or a script outside memdir does not take it, so checking first and renaming
/// after would let one that creates `to` in between be overwritten: the refusal has to be
/// the file system's, in the same step as the rename.
pub fn rename_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    {
        use rustix::fs::RenameFlags;
        use rustix::io::Errno;
        match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
            // File systems without RENAME_NOREPLACE take the portable way.
            Err(Errno::INVAL | Errno::NOSYS) => {}
            other => return other.map_err(io::Error::from),
        }
    }
    portable_rename_noreplace(from_dir, from, to_dir, to)
}

/// The create-only rename without `RENAME_NOREPLACE`, by what every file system refuses
/// to overwrite:
/// - a file (or symlink) gets its new name as a hard link, which fails if the name is
///   taken, and then loses its old one. Between the two steps it has two links (a
///   concurrent read of it is refused as hard-linked); a crash there leaves both names
///   (for a temp file, the next lock holder's sweep removes the temp name);
/// - a folder: on Unix the new name is first made as an empty folder, which fails if it is
///   taken, and the folder is renamed over it (`rename` replaces only an empty folder, so
///   one filled meanwhile is refused with `ENOTEMPTY`); on Windows a rename never
///   replaces a folder, and a file appearing at the name between the check and the
///   rename is the one race left.
///
/// A file system without hard links (FAT, some network shares) gets the check under the
/// store lock and a plain rename, as a last resort.
fn portable_rename_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    if from_dir.symlink_metadata(from)?.is_dir() {
        return rename_dir_noreplace(from_dir, from, to_dir, to);
    }
    match from_dir.hard_link(from, to_dir, to) {
        Ok(()) => {}
        Err(e) if no_hard_links(&e) => {
            return match to_dir.symlink_metadata(to) {
                Ok(_) => Err(already_exists()),
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    rename_replace(from_dir, from, to_dir, to)
                }
                Err(e) => Err(e),
            };
        }
        Err(e) => return Err(e),
    }
    if let Err(e) = from_dir.remove_file(from) {
        // Take the new name back, so the move did not happen rather than half happened.
        let _ = to_dir.remove_file(to);
        return Err(e);
    }
    Ok(())
}

#[cfg(unix)]
fn rename_dir_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    to_dir.create_dir(to)?;
    match from_dir.rename(from, to_dir, to) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Only removes the placeholder while it is still empty.
            let _ = to_dir.remove_dir(to);
            if matches!(
                e.kind(),
                ErrorKind::DirectoryNotEmpty | ErrorKind::AlreadyExists
            ) {
                Err(already_exists())
            } else {
                Err(e)
            }
        }
    }
}

#[cfg(not(unix))]
fn rename_dir_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    match to_dir.symlink_metadata(to) {
        Ok(_) => Err(already_exists()),
        Err(e) if e.kind() == ErrorKind::NotFound => from_dir.rename(from, to_dir, to),
        Err(e) => Err(e),
    }
}

/// Whether `link` failed because the file system has no hard links (`EPERM` on FAT,
/// `EOPNOTSUPP` elsewhere). cap-std's own refusals (a path leading out) carry no OS error
/// and do not count.
fn no_hard_links(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        let errno = e.raw_os_error().map(Errno::from_raw_os_error);
        matches!(errno, Some(Errno::PERM | Errno::OPNOTSUPP))
    }
    #[cfg(not(unix))]
    {
        e.raw_os_error().is_some()
            && matches!(
                e.kind(),
                ErrorKind::PermissionDenied | ErrorKind::Unsupported | ErrorKind::InvalidInput
            )
    }
}

fn already_exists() -> io::Error {
    io::Error::new(ErrorKind::AlreadyExists, "the destination exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is at a name before a create-only rename, or after it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum At {
        Nothing,
        File(&'static str),
        EmptyFolder,
        Folder(&'static str),
        Symlink,
    }

    fn make(dir: &Dir, name: &str, what: At) {
        match what {
            At::Nothing => {}
            At::File(text) => dir.write(name, text).unwrap(),
            At::EmptyFolder => dir.create_dir(name).unwrap(),
            At::Folder(text) => {
                dir.create_dir(name).unwrap();
                dir.write(format!("{name}/inner.md"), text).unwrap();
            }
            At::Symlink => {
                #[cfg(unix)]
                dir.symlink("dangling-target", name).unwrap();
            }
        }
    }

    fn seen(dir: &Dir, name: &str) -> At {
        let Ok(meta) = dir.symlink_metadata(name) else {
            return At::Nothing;
        };
        if meta.is_symlink() {
            return At::Symlink;
        }
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        if meta.is_dir() {
            return match dir.read_to_string(format!("{name}/inner.md")) {
                Ok(text) => At::Folder(leak(text)),
                Err(_) => At::EmptyFolder,
            };
        }
        assert_eq!(nlink(&meta), 1, "{name} is left with one link");
        At::File(leak(dir.read_to_string(name).unwrap()))
    }

    /// Renames `from` onto `to` (made as given) with `rename`, in folders `a/` and `b/`,
    /// and checks what each name holds afterwards and whether it was refused.
    fn check(
        rename: fn(&Dir, &str, &Dir, &str) -> io::Result<()>,
        from: At,
        to: At,
        expect_refused: bool,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        root.create_dir("a").unwrap();
        root.create_dir("b").unwrap();
        let a = root.open_dir("a").unwrap();
        let b = root.open_dir("b").unwrap();
        make(&a, "x", from);
        make(&b, "y", to);
        let result = rename(&a, "x", &b, "y");
        let case = format!("{from:?} onto {to:?}: {result:?}");
        if expect_refused {
            let e = result.expect_err(&case);
            assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{case}");
            assert_eq!(seen(&a, "x"), from, "{case}: the source is untouched");
            assert_eq!(seen(&b, "y"), to, "{case}: the destination is untouched");
        } else {
            result.expect(&case);
            assert_eq!(seen(&a, "x"), At::Nothing, "{case}: the old name is gone");
            assert_eq!(seen(&b, "y"), from, "{case}: the new name has it");
        }
    }

    /// Every create-only rename: the one this build uses, and the portable one (which
    /// Linux also takes where `RENAME_NOREPLACE` is refused).
    #[test]
    fn a_create_only_rename_never_replaces_anything() {
        let cases = [
            (At::File("new"), At::Nothing, false),
            (At::File("new"), At::File("old"), true),
            (At::File("new"), At::EmptyFolder, true),
            (At::File("new"), At::Folder("old"), true),
            (At::Folder("new"), At::Nothing, false),
            (At::EmptyFolder, At::Nothing, false),
            // rename(2) alone would replace an empty folder.
            (At::Folder("new"), At::EmptyFolder, true),
            (At::Folder("new"), At::Folder("old"), true),
            (At::Folder("new"), At::File("old"), true),
        ];
        #[cfg(unix)]
        let cases = cases.into_iter().chain([
            (At::Symlink, At::Nothing, false),
            (At::File("new"), At::Symlink, true),
            (At::Folder("new"), At::Symlink, true),
        ]);
        for (from, to, refused) in cases {
            check(rename_noreplace, from, to, refused);
            check(portable_rename_noreplace, from, to, refused);
        }
    }
}
