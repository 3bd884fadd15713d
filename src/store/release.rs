//! Releasing a replaced or deleted file's inode off the request's path.
//!
//! When a write's rename replaces a file (or a delete unlinks one), the file's last name
//! goes, and the kernel frees its inode and blocks inside that system call. On some file
//! systems that is slow: on ext4 mounted with `discard` the freed blocks are trimmed
//! synchronously, and `rename` took 0.15–0.2 ms instead of 0.015 ms in a measured loop.
//! A handle opened on the old file first keeps the inode alive, so the rename (or unlink)
//! only changes names; the handle is then closed on a helper thread, where the freeing
//! happens. Durability is unchanged: the new file is in place and fsynced either way, and
//! an inode whose last name is gone is reclaimed by the kernel (or by fsck after a crash)
//! as for any deleted file still open.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};

use cap_std::fs::Dir;
use rustix::fs::{Mode, OFlags};

/// A handle on the file named `name` in `parent` that keeps its inode alive, without
/// following a symlink (`O_PATH`: no read access is needed and nothing is read).
/// `None` when it cannot be opened; the caller then simply does not defer the release.
pub fn hold(parent: &Dir, name: &str) -> Option<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// Closes `fd` on the release thread (started on first use); inline if that thread
/// cannot be started or has gone.
pub fn release_later(fd: OwnedFd) {
    static RELEASER: Mutex<Option<Sender<OwnedFd>>> = Mutex::new(None);
    let mut guard = RELEASER.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        let (tx, rx) = channel::<OwnedFd>();
        let spawned = std::thread::Builder::new()
            .name("memdir-release".into())
            .spawn(move || {
                for fd in rx {
                    drop(fd);
                }
            });
        if spawned.is_err() {
            return drop(fd);
        }
        *guard = Some(tx);
    }
    if let Some(tx) = guard.as_ref()
        && let Err(unsent) = tx.send(fd)
    {
        *guard = None;
        drop(unsent.0);
    }
}
