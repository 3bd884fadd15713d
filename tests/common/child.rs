//! Waiting for a child process to exit, on the exit itself (a pidfd becomes readable
//! when the process ends) rather than by polling, with a deadline.

#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits at most `limit` for `child` to exit and reaps it; `None` if it still runs (it is
/// left running, so the caller can kill it: an unreaped pid cannot be reused).
pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child pid");
    let pidfd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Only a child that has already exited and been reaped has no pidfd.
        Err(_) => return Some(child.wait().expect("wait for the child")),
    };
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut ready = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, and its count.
        let n = unsafe { libc::poll(&mut ready, 1, ms) };
        if n > 0 {
            return Some(child.wait().expect("wait for the child"));
        }
        if n == 0 {
            return None;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::Interrupted,
            "poll a pidfd: {e}"
        );
    }
}
