//! Closing the listener without losing a request.
//!
//! Closing a listening socket resets every connection whose handshake the kernel has completed but the server has
//! not accepted yet, and a client (a balancer) has usually sent its request on such a connection already: that
//! request is lost, and a balancer does not resend a POST it has sent. A connection tried after the close is
//! refused instead, which a balancer retries on another instance. So, on Linux, the server first stops the kernel
//! from completing new handshakes (a socket filter drops every SYN that opens one: its client sends it again a
//! second later and is refused then), waits for the handshakes under way to complete, takes every connection
//! queued, and only then closes the listener. Measured with clients connecting in a loop while the server stops
//! (`tests/it/http.rs`, `stopping_resets_no_connection`): without the filter about one stop in three reset a
//! connection.

use std::time::Duration;

/// How long the handshakes under way get to complete once no new one starts: one round trip of the balancer's
/// network (a SYN-ACK is out, its ACK is coming), with a wide margin.
pub(super) const HANDSHAKES_UNDER_WAY: Duration = Duration::from_millis(100);

/// Makes the kernel complete no new handshake on `listener` (a SYN without ACK is dropped, everything else passes,
/// so the handshakes under way complete). Returns whether it could: only Linux can.
pub(super) fn refuse_new_handshakes(listener: &tokio::net::TcpListener) -> bool {
    imp::refuse_new_handshakes(listener)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::AsRawFd;

    pub(super) fn refuse_new_handshakes(listener: &tokio::net::TcpListener) -> bool {
        // Classic BPF over the TCP header (a TCP socket's filter sees the segment from its TCP header on): the flags
        // are byte 13; SYN alone (0x02 of SYN|ACK 0x12) is dropped (0 bytes kept), anything else kept whole.
        let op = |code: u32| code as u16;
        let mut program = [
            libc::sock_filter { code: op(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS), jt: 0, jf: 0, k: 13 },
            libc::sock_filter { code: op(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K), jt: 0, jf: 0, k: 0x12 },
            libc::sock_filter { code: op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K), jt: 0, jf: 1, k: 0x02 },
            libc::sock_filter { code: op(libc::BPF_RET | libc::BPF_K), jt: 0, jf: 0, k: 0 },
            libc::sock_filter { code: op(libc::BPF_RET | libc::BPF_K), jt: 0, jf: 0, k: u32::MAX },
        ];
        let filter = libc::sock_fprog { len: program.len() as u16, filter: program.as_mut_ptr() };
        // SAFETY: the descriptor is the listener's, open for the whole call; the kernel copies the program.
        let done = unsafe {
            libc::setsockopt(
                listener.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                std::ptr::from_ref(&filter).cast(),
                size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if done != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not filter the listener's handshakes");
        }
        done == 0
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn refuse_new_handshakes(_: &tokio::net::TcpListener) -> bool {
        false
    }
}
