//! `sendmsg`/`recvmsg` with `SCM_RIGHTS` (`libc`): the socket calls sharing
//! needs that std does not offer on stable, and nothing else.
//!
//! Every file descriptor `recvmsg` delivers becomes an [`OwnedFd`] at once,
//! so none leaks, whatever else the message holds. Each `unsafe` block argues
//! its own soundness from what is in sight; the functions here are safe and
//! rely on no caller.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Room for the control data of one message, as `u64`s for `cmsghdr`'s
/// alignment: 64 bytes, a header and up to 12 descriptors on Linux (more
/// are reported with `MSG_CTRUNC`, and the kernel closes them).
const CONTROL_WORDS: usize = 8;

/// The most descriptors one message sends: the memory's and a semaphore's.
pub(super) const MAX_SEND_FDS: usize = 2;

/// Sends `bytes` with `fds` attached (`SCM_RIGHTS`, in order, at most
/// [`MAX_SEND_FDS`]); returns how many bytes went (the fds go with the first
/// of them).
pub(super) fn send_with_fds(
    socket: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<usize> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    // SAFETY: `msghdr` is a plain C struct of integers and pointers, for
    // which all-zero bytes are a valid value (null pointers, zero lengths);
    // zeroing also clears the private padding fields some libcs have.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if fds.len() > MAX_SEND_FDS {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    if !fds.is_empty() {
        // At most 2 * 4 bytes.
        let fd_len = u32::try_from(size_of::<RawFd>() * fds.len()).unwrap_or(u32::MAX);
        // SAFETY: `CMSG_SPACE` is arithmetic on its argument.
        let space = unsafe { libc::CMSG_SPACE(fd_len) } as usize;
        if space > size_of_val(&control) {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: `msg` points to `control`, `space` bytes (checked to fit
        // it), enough for one header, so `CMSG_FIRSTHDR` returns a pointer
        // to its start, suitably aligned (`control` is `u64`-aligned, as
        // `cmsghdr` needs); the writes stay inside `CMSG_SPACE(fd_len)`
        // bytes: the header, then `CMSG_DATA`, `fd_len` bytes (4 per fd,
        // `fds.len()` of them), each written unaligned at `i * 4`.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
            if cmsg.is_null() {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            }
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_len) as _;
            let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                std::ptr::write_unaligned(data.add(i), fd.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: `socket` is an open descriptor (borrowed); `msg` points to
        // one iovec over `bytes` (read-only for the kernel, alive through
        // the call) and to `control` (initialised above, or null with 0
        // length); the kernel reads the fd numbers, which are open (`fds`
        // are borrowed).
        let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &raw const msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n.unsigned_abs());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives up to `buf.len()` bytes; every file descriptor that comes with
/// them is pushed onto `fds` (as owned, close-on-exec). Returns the bytes
/// read (0: the peer closed) and whether the kernel dropped control data
/// for lack of room (`MSG_CTRUNC`).
pub(super) fn recv_with_fds(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
) -> io::Result<(usize, bool)> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `send_with_fd`: all-zero is a valid `msghdr`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    let n = loop {
        // SAFETY: `socket` is open (borrowed); `msg` points to one iovec
        // over `buf` (writable, alive through the call) and to `control`,
        // whose length it states; the kernel writes at most those lengths.
        let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n.unsigned_abs();
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let fd_size = size_of::<RawFd>();
    // SAFETY: `msg` is the header `recvmsg` filled: its control pointer and
    // the length the kernel wrote back describe initialised bytes inside
    // `control`. `CMSG_FIRSTHDR`/`CMSG_NXTHDR` walk only headers that lie
    // wholly inside that length (they return null otherwise), so each
    // `cmsg` read is in bounds; for an `SCM_RIGHTS` header the kernel wrote
    // `cmsg_len - CMSG_LEN(0)` bytes of `int`s after `CMSG_DATA`, read
    // unaligned one by one. Each is a descriptor the kernel just installed
    // in this process for us alone, so owning it is sound, and it is closed
    // exactly once (when the `OwnedFd` drops).
    unsafe {
        let header = libc::CMSG_LEN(0) as usize;
        let mut cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*cmsg).cmsg_len as usize).saturating_sub(header) / fd_size;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..count {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&raw const msg, cmsg);
        }
    }
    Ok((n, msg.msg_flags & libc::MSG_CTRUNC != 0))
}
