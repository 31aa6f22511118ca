//! Transports: bytes to JSON-RPC messages and back. No MCP semantics live here.

#[cfg(unix)]
pub(crate) mod fd_io;
#[cfg(feature = "http")]
pub(crate) mod http;
mod std_io;
pub(crate) mod stdio;
pub(crate) use std_io::{spawn_stdout, ThreadStdin};

/// A frame as it goes on a stream: its bytes and the newline that ends it.
pub(crate) fn line(frame: String) -> Vec<u8> {
    let mut bytes = frame.into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Completes on Ctrl-C, or on SIGTERM where there is one.
pub(crate) async fn stop_signal() {
    which_stop_signal().await;
}

/// How the process was asked to stop.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopSignal {
    /// Ctrl-C (SIGINT): a person at a terminal.
    Interrupt,
    /// SIGTERM: a service manager or an orchestrator (systemd, Kubernetes, a rolling restart).
    Terminate,
}

/// Waits for Ctrl-C or SIGTERM, and says which came.
pub(crate) async fn which_stop_signal() -> StopSignal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {
                        tracing::info!("interrupted: shutting down");
                        StopSignal::Interrupt
                    }
                    _ = term.recv() => {
                        tracing::info!("terminated: shutting down");
                        StopSignal::Terminate
                    }
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                StopSignal::Interrupt
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("interrupted: shutting down");
        StopSignal::Interrupt
    }
}
