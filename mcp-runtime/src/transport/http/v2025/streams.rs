//! Streams: a request's or a session's route (SSE through the event store, or one JSON body) and the SSE body a
//! connection reads it through.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use axum::body::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::session::HttpSession;
use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::base::sync::Unpoisoned;
use crate::dispatch::{FrameSink, Sink};
use crate::store::EventStore;
use crate::wire::jsonrpc::Frame;

/// One SSE event on its way to a connection: its id and its data.
pub(super) type Event = (String, Arc<str>);

/// A stream of a session: a request's (its notifications, requests to the client, then its response) or the
/// standalone one. Every event is stored; a connection, when one is attached, gets it live.
pub(super) struct Route {
    pub(super) name: String,
    pub(super) store: Arc<dyn EventStore>,
    pub(super) limits: OutboundLimits,
    /// The session's total of bytes waiting unread, which what waits on this stream counts in too.
    pub(super) total: Option<Arc<Backlog>>,
    pub(super) inner: Mutex<RouteInner>,
}

pub(super) struct RouteInner {
    /// The connection reading the stream now, and the bytes waiting for it.
    pub(super) live: Option<(mpsc::UnboundedSender<Event>, Arc<Backlog>)>,
    pub(super) closed: bool,
    /// What to cancel if the reader stops reading (a request's stream: that request).
    pub(super) on_stuck: Option<Box<dyn FnOnce() + Send>>,
}

impl Route {
    pub(super) fn new(
        name: String,
        store: Arc<dyn EventStore>,
        limits: OutboundLimits,
        total: Option<Arc<Backlog>>,
    ) -> Arc<Route> {
        Arc::new(Route {
            name,
            store,
            limits,
            total,
            inner: Mutex::new(RouteInner { live: None, closed: false, on_stuck: None }),
        })
    }

    /// Sets what a reader that stops reading cancels.
    pub(super) fn on_stuck(&self, cancel: impl FnOnce() + Send + 'static) {
        self.lock().on_stuck = Some(Box::new(cancel));
    }

    pub(super) fn push(&self, frame: String, droppable: bool) {
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        // One allocation shared by the store and the live connection.
        let frame: Arc<str> = frame.into();
        let id = self.store.store(&self.name, &frame);
        let Some((live, backlog)) = &inner.live else { return };
        match backlog.admit(frame.len(), droppable) {
            Admit::Send => {
                if live.send((id, frame)).is_err() {
                    inner.live = None; // the connection is gone; the store keeps the rest for a resume
                }
            }
            Admit::Drop => {}
            Admit::Stuck => {
                // The reader stopped reading: it is detached (what is queued for it stays bounded, and the
                // connection's write timeout closes it), and what the stream was for is cancelled.
                inner.live = None;
                if let Some(cancel) = inner.on_stuck.take() {
                    drop(inner);
                    cancel();
                }
            }
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, RouteInner> {
        self.inner.locked()
    }

    /// Attaches a connection that resumes after `last_event_id`: the events stored after it are read under the
    /// same lock as `send`, so nothing falls in between and nothing comes twice.
    pub(super) fn resume(&self, last_event_id: &str) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let inner = self.lock();
        let missed = self.store.replay_after(last_event_id).map(|(_, m)| m).unwrap_or_default();
        self.attach_locked(inner, missed)
    }

    /// Attaches a connection, first replaying `missed` to it; under the same lock as `send`.
    pub(super) fn attach(&self, missed: Vec<(String, String)>) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let inner = self.lock();
        self.attach_locked(inner, missed)
    }

    pub(super) fn attach_locked(
        &self,
        mut inner: std::sync::MutexGuard<'_, RouteInner>,
        missed: Vec<(String, String)>,
    ) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(match &self.total {
            Some(total) => Backlog::within(self.limits, total.clone()),
            None => Backlog::new(self.limits),
        });
        for (id, frame) in missed.into_iter().filter(|(_, f)| !f.is_empty()) {
            if backlog.admit(frame.len(), false) == Admit::Send {
                let _ = tx.send((id, frame.into()));
            }
        }
        if !inner.closed {
            inner.live = Some((tx, backlog.clone()));
        }
        (rx, backlog)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

impl FrameSink for Route {
    fn send(&self, frame: Frame) {
        self.push(frame.into_text(), false)
    }

    fn send_droppable(&self, frame: Frame) {
        self.push(frame.into_text(), true)
    }

    fn close(&self) {
        let mut inner = self.lock();
        if !inner.closed {
            self.store.ended(&self.name);
        }
        inner.closed = true;
        inner.live = None;
    }
}

/// JSON-response mode: the response goes to the waiting POST; anything else to the standalone stream.
pub(super) struct JsonRoute {
    pub(super) response: Mutex<Option<oneshot::Sender<Frame>>>,
    pub(super) standalone: Sink,
}

impl FrameSink for JsonRoute {
    fn send(&self, frame: Frame) {
        self.standalone.send(frame);
    }

    fn send_droppable(&self, frame: Frame) {
        self.standalone.send_droppable(frame);
    }

    fn finish(&self, frame: Frame) {
        if let Some(tx) = self.response.locked().take() {
            let _ = tx.send(frame);
        }
    }

    fn close(&self) {
        self.response.locked().take();
    }
}

/// An SSE body: a priming event (id and `retry:`), then the route's events until it closes. In stateless mode a
/// client that goes away before the response cancels the request.
pub(super) struct SseBody {
    pub(super) priming: Option<String>,
    pub(super) events: mpsc::UnboundedReceiver<Event>,
    /// The bytes waiting for this connection; each event taken leaves it.
    pub(super) backlog: Option<Arc<Backlog>>,
    pub(super) on_disconnect: Option<Box<dyn FnOnce() + Send>>,
    /// Counts this stream among its session's open streams while it lives.
    pub(super) _open: Option<OpenStream>,
    /// The store and stream to tell when the body was read to its end.
    pub(super) delivered: Option<(Arc<dyn EventStore>, String)>,
    /// A comment while nothing else is sent, so that a proxy in front does not cut an idle stream.
    pub(super) keep_alive: tokio::time::Interval,
    /// With metrics: counted among the open streams while it lives.
    pub(super) _counted: Option<crate::metrics::StreamOpen>,
}

/// One open stream of a session: an open stream keeps the session from expiring.
pub(super) struct OpenStream(Arc<HttpSession>);

impl OpenStream {
    pub(super) fn new(session: &Arc<HttpSession>) -> OpenStream {
        session.open_streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(session.clone())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
        // The idle time counts from the end of the last stream.
        self.0.touch();
    }
}

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    /// Everything ready goes out as one chunk (priming event included), so a quick answer is one write.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let mut chunk = self.priming.take().unwrap_or_default();
        let mut ended = false;
        loop {
            match self.events.poll_recv(cx) {
                Poll::Ready(Some((id, data))) => {
                    if let Some(backlog) = &self.backlog {
                        backlog.sent(data.len());
                    }
                    chunk.push_str("id: ");
                    chunk.push_str(&id);
                    chunk.push_str("\nevent: message\ndata: ");
                    chunk.push_str(&data);
                    chunk.push_str("\n\n");
                }
                Poll::Ready(None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if !chunk.is_empty() {
            // Something was sent: the next comment is due a whole interval from now.
            self.keep_alive.reset();
            if ended {
                // The route closed: the next poll ends the body, and this was no disconnect.
                self.on_disconnect = None;
            }
            return Poll::Ready(Some(Ok(Bytes::from(chunk))));
        }
        if ended {
            self.on_disconnect = None;
            // Polled again after its last chunk was written: the stream reached the connection whole.
            if let Some((store, stream)) = self.delivered.take() {
                store.delivered(&stream);
                // Nothing will resume it through its route: an idle session keeps no map of finished streams.
                if let Some(OpenStream(session)) = &self._open {
                    session.forget_route(&stream);
                }
            }
            return Poll::Ready(None);
        }
        if self.keep_alive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Bytes::from_static(crate::transport::http::KEEP_ALIVE_COMMENT))));
        }
        Poll::Pending
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // What still waits for this connection goes with it: its session's total no longer counts it.
        if let Some(backlog) = &self.backlog {
            backlog.abandon();
        }
        if let Some(f) = self.on_disconnect.take() {
            f();
        }
    }
}
