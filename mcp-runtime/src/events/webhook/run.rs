//! A webhook subscription's delivery loop: it follows its type (an emitted type's buffer, or a checked type's check
//! function) from where the subscription started, and POSTs each event, one at a time and in order, retried as
//! [`Webhooks::retries`](super::Webhooks::retries) says; a gap is a `gap` envelope, a removed type or a check that
//! ends the subscription a `terminated` one. It ends when the subscription is unsubscribed, expires, or its type is
//! removed.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::deliver::Answer;
use super::{Registry, Sub};
use crate::base::sync::Unpoisoned;
use crate::context::Context;
use crate::events::def::{Check, CheckFn, Checked, Source};
use crate::events::methods::{delivers, stored_json};
use crate::events::random_id;
use crate::events::{Entry, Hub};
use crate::wire::error::Error;

/// How many events one read of a buffer, or one check, takes at most.
pub(super) const BATCH: usize = 100;

/// The largest body POSTed: 256 KiB, SEP-3415's bound, which receivers and their gateways may enforce with `413`.
const MAX_BODY: usize = 256 * 1024;

/// Where a subscription's delivery starts.
pub(crate) enum Start {
    /// After this position of an emitted type's buffer; with a `gap` envelope first if events were lost before it
    /// (a subscription taken over from a watermark the buffer no longer holds).
    Buffer { after: u64, gap: bool },
    /// With the events (and cursor) of a checked type's first check, and the context its checks are called with.
    /// `from` is the cursor that check was asked from, and `gap` says whether a `gap` envelope goes first (a
    /// subscription taken over from a watermark the upstream no longer holds).
    Checked { first: Box<Checked>, context: Context, from: Option<String>, gap: bool },
    /// Nowhere: it was terminated ([`Emitter::terminate`](crate::events::Emitter::terminate)) while nobody
    /// delivered it; only its `terminated` envelope is posted.
    #[cfg(feature = "redis")]
    Ended,
}

/// Why a subscription's delivery ended.
#[derive(Debug)]
enum End {
    /// Unsubscribed, or the server is gone.
    Stopped,
    /// Not refreshed in time.
    Expired,
    /// Its type was removed or changed incompatibly, or it was terminated: the endpoint hears `terminated` with
    /// this error.
    Terminate(Error),
}

struct Run {
    hub: Arc<Hub>,
    registry: Arc<Registry>,
    entry: Arc<Entry>,
    sub: Arc<Sub>,
}

/// Delivers a subscription's events until it ends, then forgets it.
pub(crate) async fn deliver(
    hub: Arc<Hub>,
    registry: Arc<Registry>,
    sub: Arc<Sub>,
    start: Start,
    ending: crate::events::hooks::Ending,
) {
    let run = Run { hub, registry, entry: sub.entry.clone(), sub };
    let every = run.hub.settings().reauthorize;
    let subscribed = run.sub.subscribed();
    let _reauthorizing = crate::events::hooks::reauthorizing(&run.entry, subscribed, every, run.sub.ended.clone());
    let end = match (start, &run.entry.def.source) {
        (Start::Buffer { after, gap }, _) => run.emitted(after, gap).await,
        (Start::Checked { first, context, from, gap }, Source::Checked(check)) => {
            run.checked(check, *first, &context, (from, gap)).await
        }
        (Start::Checked { .. }, Source::Emitted { .. }) => End::Stopped,
        #[cfg(feature = "redis")]
        (Start::Ended, _) => End::Terminate(
            run.sub.ended.error().cloned().unwrap_or_else(|| Error::internal("the subscription was terminated")),
        ),
    };
    tracing::debug!(subscription = %run.sub.id, ?end, "a webhook subscription ended");
    // Gone before its `terminated` envelope is posted: a client that subscribes again when it hears it (a type
    // changed, say) makes a new subscription, not a refresh of this one.
    run.registry.ended(&run.sub, !matches!(end, End::Stopped)).await;
    if let End::Terminate(error) = &end {
        run.terminate(error).await;
    }
    // The type's `on_unsubscribe`, now that nothing more is delivered.
    drop(ending);
}

impl Run {
    /// Runs `wake` until it is done, or the subscription ends meanwhile.
    async fn wait<F: Future>(&self, wake: F) -> Result<F::Output, End> {
        tokio::pin!(wake);
        loop {
            let expires = self.sub.state.locked().expires;
            tokio::select! {
                out = &mut wake => return Ok(out),
                () = self.sub.stop.cancelled() => return Err(End::Stopped),
                error = self.entry.ended.ended() => return Err(End::Terminate(error)),
                error = self.sub.ended.ended() => return Err(End::Terminate(error)),
                () = self.sub.refreshed.notified() => {}
                () = tokio::time::sleep_until(expires.into()) => {
                    if self.sub.state.locked().expires <= Instant::now() {
                        return Err(End::Expired);
                    }
                }
            }
        }
    }

    /// The secrets that sign now: the current one, and the one it replaced while its grace lasts.
    fn secrets(&self) -> Vec<String> {
        let state = self.sub.state.locked();
        let mut secrets = vec![state.secret.clone()];
        if let Some((previous, until)) = &state.previous {
            if *until > Instant::now() {
                secrets.push(previous.clone());
            }
        }
        secrets
    }

    /// POSTs one body (message `id`) until it is accepted, refused for good, or its attempts run out.
    async fn send(&self, id: &str, body: &str) -> Result<(), End> {
        if body.len() > MAX_BODY {
            tracing::warn!(
                subscription = %self.sub.id,
                message = id,
                bytes = body.len(),
                "a webhook body over 256 KiB (SEP-3415's bound, which receivers may enforce with 413) is not posted: \
                 it is given up as a 413 would be; keep the event's payload small (a reference to the data, not the \
                 data)"
            );
            return Ok(());
        }
        let settings = &self.registry.settings;
        let mut backoff = settings.first_retry;
        let mut attempt = 1;
        loop {
            let secrets = self.secrets();
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            let post = self.registry.sender.post(&self.sub.url, &self.sub.id, id, body, &secrets);
            let answer = self.wait(post).await?;
            // A `410` or `413` refuses one body, not the endpoint (SEP-3415: "without affecting the subscription
            // itself"): it does not count toward a suspension.
            if let (Some(rule), Answer::Accepted | Answer::Failed(_)) = (&settings.suspension, answer) {
                let failed = answer != Answer::Accepted;
                self.sub.state.locked().outcomes.record(failed, rule.window, Instant::now());
            }
            match answer {
                Answer::Accepted => {
                    let mut state = self.sub.state.locked();
                    state.last_delivery_at = Some(SystemTime::now());
                    state.last_error = None;
                    state.failed_since = None;
                    return Ok(());
                }
                Answer::Refused(category) => {
                    self.failed(category).await;
                    return Ok(());
                }
                Answer::Failed(category) => {
                    self.failed(category).await;
                    if self.suspended().await? {
                        // Reactivated by a refresh: this event's retries start afresh, at once.
                        (attempt, backoff) = (1, settings.first_retry);
                        continue;
                    }
                    if attempt >= settings.attempts {
                        break;
                    }
                    self.wait(tokio::time::sleep(backoff)).await?;
                    backoff = backoff.saturating_mul(2);
                    attempt += 1;
                }
            }
        }
        tracing::warn!(subscription = %self.sub.id, message = id, "a webhook delivery was given up after its retries");
        Ok(())
    }

    /// Suspends the subscription if its recent attempts call for it ([`Webhooks::suspend_after`]), and then waits
    /// until its client refreshes it: whether it was suspended.
    ///
    /// [`Webhooks::suspend_after`]: super::Webhooks::suspend_after
    async fn suspended(&self) -> Result<bool, End> {
        let Some(rule) = self.registry.settings.suspension else { return Ok(false) };
        {
            let mut state = self.sub.state.locked();
            if !state.outcomes.suspends(&rule, Instant::now()) {
                return Ok(false);
            }
            state.suspended_since = Some(SystemTime::now());
        }
        tracing::warn!(
            subscription = %self.sub.id,
            url = %self.sub.url,
            "a webhook subscription's deliveries keep failing: suspended until its client refreshes it"
        );
        self.registry.persist(&self.sub).await;
        self.wait(self.sub.resumed.notified()).await?;
        {
            let mut state = self.sub.state.locked();
            state.suspended_since = None;
            state.outcomes = super::suspend::Outcomes::new(Instant::now());
        }
        tracing::info!(subscription = %self.sub.id, "a suspended webhook subscription was refreshed: delivering again");
        self.registry.persist(&self.sub).await;
        Ok(true)
    }

    async fn failed(&self, category: &'static str) {
        {
            let mut state = self.sub.state.locked();
            state.last_error = Some(category.to_owned());
            state.failed_since.get_or_insert_with(SystemTime::now);
        }
        self.registry.persist(&self.sub).await;
    }

    /// Moves the watermark (kept where the other instances read it, on a shared server).
    async fn advance(&self, cursor: Option<String>) {
        {
            let mut state = self.sub.state.locked();
            if state.watermark == cursor {
                return;
            }
            state.watermark = cursor;
        }
        self.registry.persist(&self.sub).await;
    }

    /// A `gap` envelope: events were skipped before `cursor`.
    async fn gap(&self, cursor: Option<String>) -> Result<(), End> {
        let body = json!({ "type": "gap", "cursor": cursor }).to_string();
        self.send(&format!("msg_gap_{}", random_id()), &body).await?;
        self.advance(cursor).await;
        Ok(())
    }

    /// A `terminated` envelope, tried once: the subscription no longer exists.
    async fn terminate(&self, error: &Error) {
        let body = json!({ "type": "terminated", "error": error }).to_string();
        let secrets = self.secrets();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        let id = format!("msg_terminated_{}", random_id());
        let _ = self.registry.sender.post(&self.sub.url, &self.sub.id, &id, &body, &secrets).await;
    }

    /// Follows an emitted type's buffer from `position`, after a `gap` envelope if `gap`.
    async fn emitted(&self, mut position: u64, gap: bool) -> End {
        let Some(buffer) = self.entry.buffer.clone() else { return End::Stopped };
        let mut latest = buffer.watch();
        let arguments = &self.sub.arguments;
        if gap {
            if let Err(end) = self.gap(Some(self.hub.cursor(position))).await {
                return end;
            }
        }
        loop {
            let bounds = self.hub.settings().bounds;
            let read =
                buffer.read(bounds, position, None, BATCH, |e| delivers(&self.entry, &self.sub.id, arguments, e));
            if read.truncated {
                if let Err(end) = self.gap(Some(self.hub.cursor(read.start))).await {
                    return end;
                }
            }
            for event in &read.events {
                let cursor = self.hub.cursor(event.position);
                let body = stored_json(&self.entry, arguments, event, Some(&cursor)).to_string();
                if let Err(end) = self.send(&event.id, &body).await {
                    return end;
                }
                self.advance(Some(cursor)).await;
            }
            position = read.position;
            self.advance(Some(self.hub.cursor(position))).await;
            if !read.more {
                match self.wait(latest.changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return End::Stopped,
                    Err(end) => return end,
                }
            }
        }
    }

    /// Calls a checked type's function every `next_poll` (at once while it has more), from the first check's cursor
    /// (asked `from` the cursor given, after a `gap` envelope if one is due).
    async fn checked(
        &self,
        check: &CheckFn,
        first: Checked,
        ctx: &Context,
        (from, gap): (Option<String>, bool),
    ) -> End {
        let next_poll = self.hub.settings().next_poll;
        if gap {
            if let Err(end) = self.gap(first.cursor.clone()).await {
                return end;
            }
        }
        let mut next = Some(first);
        let mut cursor = from;
        loop {
            let wait = match next.take() {
                Some(checked) => match self.deliver_checked(&checked, cursor.clone()).await {
                    Ok(()) => {
                        cursor = checked.cursor.clone();
                        self.advance(cursor.clone()).await;
                        if checked.has_more {
                            Duration::ZERO
                        } else {
                            checked.next_poll.unwrap_or(next_poll)
                        }
                    }
                    Err(end) => return end,
                },
                None => next_poll,
            };
            if let Err(end) = self.wait(tokio::time::sleep(wait)).await {
                return end;
            }
            let asked = Check {
                context: ctx.clone(),
                arguments: self.sub.arguments.clone(),
                cursor: cursor.clone(),
                max_age: None,
                max_events: BATCH,
            };
            match self.wait(check(asked)).await {
                Ok(Ok(checked)) => {
                    if checked.truncated {
                        if let Err(end) = self.gap(checked.cursor.clone()).await {
                            return end;
                        }
                    }
                    next = Some(checked);
                }
                Ok(Err(e)) if crate::events::hooks::ends_subscription(&e) => return End::Terminate(e),
                Ok(Err(e)) => tracing::warn!(subscription = %self.sub.id, error = %e, "a check for a webhook failed"),
                Err(end) => return end,
            }
        }
    }

    /// POSTs a check's events, each with its own cursor or, for the last, the batch's; the watermark follows each
    /// event that has its own.
    async fn deliver_checked(&self, checked: &Checked, before: Option<String>) -> Result<(), End> {
        let last = checked.events.len().saturating_sub(1);
        for (i, event) in checked.events.iter().enumerate() {
            let at = event.cursor.clone().or_else(|| if i == last { checked.cursor.clone() } else { before.clone() });
            let body: Value = event.to_json(&self.sub.name, Some(at.as_deref()));
            self.send(&event.event_id, &body.to_string()).await?;
            // An event with a cursor of its own moves the watermark at once, as an emitted type's does: an instance
            // taking the subscription over then posts again at most the event in flight, not the whole batch.
            if event.cursor.is_some() {
                self.advance(at).await;
            }
        }
        Ok(())
    }
}
