//! A request's sink while the dispatcher's eager first poll of its handler runs. A POST that knows what the handler
//! did in that poll can answer a response that came alone as one JSON body, with no stream, channel or stored event
//! made for it; anything else opens the request's stream, and what was kept goes into it first. Both eras' POSTs use
//! it: a 2025 request opens its SSE `Route`, a 2026 request the channel its POST waits on.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::base::sync::Unpoisoned;
use crate::dispatch::FrameSink;
use crate::wire::jsonrpc::Frame;

/// Keeps a request's frames until [`FirstPoll::decide`], then forwards them to the sink it opened. What it keeps is
/// bounded as any outbound queue is: past the soft bound, progress and log notifications are dropped (a handler that
/// logs without ever yielding cannot grow the server). Other frames (requests to the client) each wait for an
/// answer, so a handler can send only a few of them before its first `.await`.
pub(super) struct FirstPoll<S> {
    state: Mutex<Held<S>>,
    kept: Backlog,
}

enum Held<S> {
    /// What the handler sent so far (and whether each frame may be dropped), its response, whether it ended.
    Waiting {
        early: Vec<(Frame, bool)>,
        response: Option<Frame>,
        ended: bool,
    },
    Open(Arc<S>),
}

impl<S: FrameSink> FirstPoll<S> {
    /// A request's first-poll sink, within the soft bound of `limits`.
    pub(super) fn new(limits: OutboundLimits) -> Arc<FirstPoll<S>> {
        Arc::new(FirstPoll {
            state: Mutex::new(Held::Waiting { early: Vec::new(), response: None, ended: false }),
            kept: Backlog::new(OutboundLimits::new(limits.soft_bytes, usize::MAX)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Held<S>> {
        self.state.locked()
    }

    /// After the first poll: `Ok` with the response, if it came with nothing before it. Otherwise `open` makes the
    /// request's stream (and what the POST answers with, given back as `Err`); the stream gets what was kept (under
    /// the lock, so that nothing the handler sends now overtakes it) and then everything else.
    pub(super) fn decide<T>(&self, open: impl FnOnce() -> (Arc<S>, T)) -> Result<Frame, T> {
        let mut state = self.lock();
        let Held::Waiting { early, response, ended } = &mut *state else {
            unreachable!("a request's stream is opened once, by its POST")
        };
        if early.is_empty() {
            if let Some(frame) = response.take() {
                return Ok(frame);
            }
        }
        let (early, response, ended) = (std::mem::take(early), response.take(), *ended);
        let (sink, opened) = open();
        for (frame, droppable) in early {
            if droppable {
                sink.send_droppable(frame);
            } else {
                sink.send(frame);
            }
        }
        match response {
            Some(frame) => sink.finish(frame),
            None if ended => sink.close(),
            None => *state = Held::Open(sink),
        }
        Err(opened)
    }

    /// The open stream; or, while the answer is undecided, `keep` takes what the handler sent.
    fn open_or(&self, keep: impl FnOnce(&mut Vec<(Frame, bool)>, &mut Option<Frame>, &mut bool)) -> Option<Arc<S>> {
        match &mut *self.lock() {
            Held::Waiting { early, response, ended } => {
                keep(early, response, ended);
                None
            }
            Held::Open(sink) => Some(sink.clone()),
        }
    }

    fn push(&self, frame: Frame, droppable: bool) {
        let mut frame = Some(frame);
        if let Some(sink) = self.open_or(|early, _, ended| {
            let Some(f) = frame.take() else { return };
            if !*ended && self.kept.admit(f.len(), droppable) == Admit::Send {
                early.push((f, droppable));
            }
        }) {
            // Still here: only a stream that was not open yet takes the frame.
            let Some(frame) = frame else { return };
            if droppable {
                sink.send_droppable(frame);
            } else {
                sink.send(frame);
            }
        }
    }
}

impl<S: FrameSink> FrameSink for FirstPoll<S> {
    fn send(&self, frame: Frame) {
        self.push(frame, false)
    }

    fn send_droppable(&self, frame: Frame) {
        self.push(frame, true)
    }

    fn finish(&self, frame: Frame) {
        let mut frame = Some(frame);
        let keep = |_: &mut Vec<_>, response: &mut Option<Frame>, ended: &mut bool| {
            if !std::mem::replace(ended, true) {
                *response = frame.take();
            }
        };
        if let (Some(sink), Some(frame)) = (self.open_or(keep), frame) {
            sink.finish(frame);
        }
    }

    fn close(&self) {
        if let Some(sink) = self.open_or(|_, _, ended| *ended = true) {
            sink.close();
        }
    }
}
