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
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
                    _ = term.recv() => tracing::info!("terminated: shutting down"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("interrupted: shutting down");
    }
}
