//! What the server sends, as it arrives: responses to the calls waiting for them, notifications (progress, list
//! changes, subscriptions, the notification handler), and questions answered with the registered handlers.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Error, Inner, Link, Progress, ANSWERING};
use crate::base::sync::Unpoisoned;
use crate::wire::jsonrpc::{self, Incoming};

impl Inner {
    /// Everything the server sends arrives here.
    pub(crate) fn receive(self: &Arc<Self>, message: Value) {
        self.receive_on(message, None);
    }

    /// What the server sends, on the HTTP stream of the request `on` when it came on one.
    pub(crate) fn receive_on(self: &Arc<Self>, message: Value, on: Option<&jsonrpc::RequestId>) {
        match Incoming::from_value(message) {
            Ok(Incoming::Response { id, outcome }) => self.receive_response(&id, outcome),
            Ok(Incoming::Notification { method, params, .. }) => {
                self.receive_notification(&method, params.unwrap_or(Value::Null), on)
            }
            Ok(Incoming::Request { id, method, params, .. }) => self.receive_request(id, method, params, on),
            Err(rejected) => tracing::warn!(error = %rejected.error, "the server sent something that is not JSON-RPC"),
        }
    }

    /// A response: to the call waiting for it, if one still does.
    fn receive_response(&self, id: &jsonrpc::RequestId, outcome: Result<Value, Value>) {
        let waiting = self.pending.locked().remove(id);
        match waiting {
            Some(tx) => {
                let outcome = outcome.map_err(|e| match serde_json::from_value::<crate::Error>(e.clone()) {
                    Ok(e) => Error::Rpc(e),
                    Err(_) => Error::Protocol(format!("an error response that is not a JSON-RPC error: {e}")),
                });
                let _ = tx.send(outcome);
            }
            None => tracing::debug!(%id, "a response to no waiting call (cancelled or timed out): dropped"),
        }
    }

    /// A notification: progress to its call's sink; anything else empties the cached list it changes, goes to the
    /// routes, and to the call that hears the stream it came on, else the notification handler.
    fn receive_notification(&self, method: &str, params: Value, on: Option<&jsonrpc::RequestId>) {
        if method == "notifications/progress" {
            let token = match &params["progressToken"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let progress = self.progress.locked();
            if let Some(sink) = progress.get(&token) {
                sink.reset.notify_waiters();
                if let Some(callback) = &sink.callback {
                    callback(Progress::from_params(&params));
                }
            }
            return;
        }
        let changed = match method {
            "notifications/tools/list_changed" => Some("tools/list"),
            "notifications/prompts/list_changed" => Some("prompts/list"),
            "notifications/resources/list_changed" => Some("resources/list"),
            _ => None,
        };
        if let Some(list) = changed {
            self.cache.locked().retain(|(m, _), _| m != list);
        }
        for route in self.routes().values() {
            route.offer(method, &params);
        }
        let hearer = on.and_then(|id| self.hearers.locked().get(id).cloned());
        match (hearer, &self.handlers.notification) {
            (Some(hearer), _) => hearer(method, &params),
            (None, Some(handler)) => handler(method, &params),
            (None, None) => {}
        }
    }

    /// A request of the server's: a ping answered at once, anything else by a handler in a task of its own.
    fn receive_request(
        self: &Arc<Self>,
        id: jsonrpc::RequestId,
        method: String,
        params: Option<Value>,
        on: Option<&jsonrpc::RequestId>,
    ) {
        // A ping is answered here and now: a flood of them holds no task and no memory.
        if method == "ping" {
            return self.reply(jsonrpc::encode_result(&id, &json!({})));
        }
        // Anything else runs a handler, in a task of its own, at most ANSWERING at once.
        let Ok(permit) = self.answering.clone().try_acquire_owned() else {
            tracing::warn!(%method, "the server asks more questions at once than the client answers: refused");
            let busy =
                crate::Error::internal(format!("the client is already answering {ANSWERING} requests from the server"));
            return self.reply(jsonrpc::encode_error(Some(&id), &busy));
        };
        let inner = self.clone();
        let asker = self.asker(on);
        tokio::spawn(async move {
            let params = params.unwrap_or(Value::Null);
            let outcome = match asker {
                Ok(Some(asker)) => asker(method, params).await,
                Ok(None) => inner.answer(&method, params).await,
                Err(e) => Err(e),
            };
            let frame = match outcome {
                Ok(result) => jsonrpc::encode_result(&id, &result),
                Err(e) => jsonrpc::encode_error(Some(&id), &e),
            };
            match &inner.link {
                Link::Stdio(s) => s.send(frame).await,
                Link::Http(h) => h.post_message(frame),
            }
            drop(permit);
        });
    }

    /// The call that answers a request of the server's itself ([`Call::on_question`](super::Call::on_question)):
    /// the one whose HTTP stream it came on, else the only one in flight; `None`: the client's handlers answer.
    fn asker(&self, on: Option<&jsonrpc::RequestId>) -> Result<Option<super::call::Questions>, crate::Error> {
        let askers = self.askers.locked();
        if let Some(asker) = on.and_then(|id| askers.get(id)) {
            return Ok(Some(asker.clone()));
        }
        if on.is_some() {
            return Ok(None);
        }
        match askers.len() {
            0 => Ok(None),
            1 => Ok(askers.values().next().cloned()),
            n => Err(crate::Error::internal(format!(
                "{n} calls that answer their own questions are in flight, and this request does not say which one it \
                 belongs to (stdio carries no link): none answers it"
            ))),
        }
    }

    /// Answers a question from the server with the registered handler.
    pub(super) async fn answer(&self, method: &str, params: Value) -> Result<Value, crate::Error> {
        let handler = match method {
            "ping" => return Ok(json!({})),
            "elicitation/create" => &self.handlers.elicitation,
            "sampling/createMessage" => &self.handlers.sampling,
            "roots/list" => &self.handlers.roots,
            _ => return Err(crate::Error::method_not_found(method)),
        };
        match handler {
            Some(h) => h(params).await,
            None => Err(crate::Error::method_not_found(method)),
        }
    }

    /// Sends an answer to the server without waiting (dropped, with a warning, if the stdio queue is full).
    fn reply(&self, frame: String) {
        match &self.link {
            Link::Stdio(s) => s.try_send(frame),
            Link::Http(h) => h.post_message(frame),
        }
    }
}
