//! The handlers of what a mount relays: a tool call, a prompt, a read, a custom method and a completion, each sent
//! to the mount's upstream in its era, with the upstream's questions asked of this request's caller meanwhile
//! ([`asking`]), its progress and log messages passed on, and its result adopted as this server's ([`adopt`]).

use std::future::Future;
use std::pin::Pin;

use serde_json::{json, Value};

use super::Composer;
use crate::base::future::BoxFuture;
use crate::base::sync::UnpoisonedRw;
use crate::handler::tool::Arguments;
use crate::server::Server;
use crate::wire::error::Error;
use crate::{CallToolResult, Context, GetPromptResult, ReadResourceResult};

fn composer(ctx: &Context) -> Result<&Composer, Error> {
    ctx.server()
        .inner
        .parts()
        .get::<Composer>()
        .map(|c| &**c)
        .ok_or_else(|| Error::internal("the server has no mounts"))
}

/// An upstream's result as this server's: the upstream's own `io.modelcontextprotocol/*` members of `_meta` (its
/// server info) are left out, since the result is this server's.
fn adopt<T: serde::de::DeserializeOwned>(mut raw: Value, what: &str) -> Result<T, Error> {
    if let Some(Value::Object(meta)) = raw.get_mut("_meta") {
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
        if meta.is_empty() {
            raw.as_object_mut().map(|r| r.remove("_meta"));
        }
    }
    if let Value::Object(r) = &mut raw {
        r.remove("resultType");
    }
    serde_json::from_value(raw).map_err(|e| Error::internal(format!("the upstream's {what} result does not fit: {e}")))
}

/// A question an upstream asks during a relayed call, and where its answer goes.
type Asked = (String, Value, tokio::sync::oneshot::Sender<Result<Value, Error>>);

/// Runs a relayed call, handing each question the upstream asks meanwhile (elicitation, sampling, roots) to this
/// request's caller, in the caller's era: a 2025 caller is sent the request; a 2026 caller gets an `input_required`
/// round, whose retry runs the call upstream again, and the question, asked again, is answered from the round.
/// A caller that did not declare what the question needs is not asked: the upstream gets the error a client without
/// the capability gives. The questions are asked from this handler's own future, beside the call (one that ends
/// first drops a question still waiting), so a round that ends, or a cancel, drops them with it.
async fn asking<T: Send + 'static>(ctx: &Context, call: crate::client::Call<T>) -> Result<T, crate::client::Error> {
    let (tx, mut questions) = tokio::sync::mpsc::channel::<Asked>(4);
    let call = call.on_question(move |method, params| {
        let tx = tx.clone();
        async move {
            let ended = || Error::internal("the relayed call ended before its question was answered");
            let (reply, answer) = tokio::sync::oneshot::channel();
            tx.send((method, params, reply)).await.map_err(|_| ended())?;
            answer.await.unwrap_or_else(|_| Err(ended()))
        }
    });
    let mut call = std::pin::pin!(std::future::IntoFuture::into_future(call));
    type Asking<'a> = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send + 'a>>;
    let mut waiting: Option<(Asking<'_>, tokio::sync::oneshot::Sender<Result<Value, Error>>)> = None;
    loop {
        let idle = waiting.is_none();
        let answered = async {
            match waiting.as_mut() {
                Some((question, _)) => question.as_mut().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut call => return result,
            answer = answered => {
                if let Some((_, reply)) = waiting.take() {
                    let _ = reply.send(answer);
                }
            }
            Some((method, params, reply)) = questions.recv(), if idle => {
                let method: String = method;
                let needs: &[&str] = match method.as_str() {
                    "elicitation/create" => &["elicitation"],
                    "sampling/createMessage" => &["sampling"],
                    "roots/list" => &["roots"],
                    _ => &[],
                };
                if needs.is_empty() || !ctx.client_supports(needs) {
                    let _ = reply.send(Err(Error::method_not_found(&method)));
                    continue;
                }
                let ctx = ctx.clone();
                let question: Asking<'_> = Box::pin(async move {
                    ctx.request_client(&method, params).await.map_err(|e| Error::internal(e.to_string()))
                });
                waiting = Some((question, reply));
            }
        }
    }
}

pub(super) fn relay_tool(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<CallToolResult, Error>> {
    Box::pin(async move {
        let (mounted, name) = composer(ctx)?
            .tool(ctx.name())
            .ok_or_else(|| Error::invalid_params(format!("unknown tool: {}", ctx.name())))?;
        let client = mounted.client().await?;
        let progress = ctx.clone();
        let call = client
            .call_tool(&name, Value::Object(args.into_map()))
            .timeout(mounted.shared().timeout)
            .on_progress(move |p| {
                relayed(progress.server(), "progress");
                progress.report_progress(p.progress, p.total, p.message.as_deref())
            })
            .on_notification(logs_to(ctx));
        match asking(ctx, call).await {
            Ok(result) => adopt(result.raw, "tools/call"),
            Err(e) => Err(mounted.error(Some(&client), e).await),
        }
    })
}

/// What relays the log messages of a call's own stream to its caller (at the caller's level).
fn logs_to(ctx: &Context) -> impl Fn(&str, &Value) + Send + Sync + 'static {
    let ctx = ctx.clone();
    move |method, params| {
        if method != "notifications/message" {
            return;
        }
        let level = params["level"].as_str().and_then(|l| l.parse().ok()).unwrap_or(crate::LogLevel::Info);
        relayed(ctx.server(), "message");
        ctx.log_to(level, params["logger"].as_str(), &params["data"]);
    }
}

/// Counts what an upstream sent that the server passes on (`mcp_server_proxy_events_total`), with metrics.
pub(super) fn relayed(server: &Server, kind: &'static str) {
    if let Some(metrics) = server.inner.metrics() {
        metrics.relayed(kind);
    }
}

pub(super) fn relay_prompt(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<GetPromptResult, Error>> {
    Box::pin(async move {
        let (mounted, name) = composer(ctx)?
            .prompt(ctx.name())
            .ok_or_else(|| Error::invalid_params(format!("unknown prompt: {}", ctx.name())))?;
        let client = mounted.client().await?;
        match asking(ctx, client.get_prompt(&name, Value::Object(args.into_map())).timeout(mounted.shared().timeout))
            .await
        {
            Ok(result) => adopt(result.raw, "prompts/get"),
            Err(e) => Err(mounted.error(Some(&client), e).await),
        }
    })
}

pub(super) fn relay_read(ctx: &Context, _args: Arguments) -> BoxFuture<'_, Result<ReadResourceResult, Error>> {
    Box::pin(async move {
        let mounted = composer(ctx)?.by_key(ctx.name()).ok_or_else(|| Error::internal("a relayed read of no mount"))?;
        let uri = ctx.meta().resource_uri.clone().ok_or_else(|| Error::internal("a read without a URI"))?;
        let client = mounted.client().await?;
        match asking(ctx, client.read_resource(&uri).timeout(mounted.shared().timeout)).await {
            Ok(result) => adopt(result.raw, "resources/read"),
            Err(e) => Err(mounted.error(Some(&client), e).await),
        }
    })
}

/// A mounted server's custom method: the same request, to it.
pub(super) fn relay_method(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
    Box::pin(async move {
        let composer = composer(ctx)?;
        let index = composer.routes.read_locked().methods.get(ctx.name()).copied();
        let mounted = index.map(|i| composer.mounts[i].clone()).ok_or_else(|| Error::method_not_found(ctx.name()))?;
        let client = mounted.client().await?;
        let call = client.request(ctx.name(), Value::Object(args.into_map())).timeout(mounted.shared().timeout);
        match asking(ctx, call).await {
            Ok(result) => adopt(result, ctx.name()),
            Err(e) => Err(mounted.error(Some(&client), e).await),
        }
    })
}

/// Completes an argument of a prompt or template another server serves: the same request, to it (the prompt under its
/// name there). Runs under the prompt's served name, or the template's URI template.
pub(crate) fn relay_completion(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
    Box::pin(async move {
        let composer = composer(ctx)?;
        let mut reference = args.as_map().get("ref").cloned().unwrap_or(Value::Null);
        let mounted = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let (mounted, upstream) = composer
                    .prompt(ctx.name())
                    .ok_or_else(|| Error::invalid_params(format!("unknown prompt: {}", ctx.name())))?;
                reference["name"] = json!(upstream);
                mounted
            }
            _ => composer
                .template(ctx.name())
                .ok_or_else(|| Error::invalid_params(format!("unknown resource template: {}", ctx.name())))?,
        };
        let mut params =
            json!({ "ref": reference, "argument": args.as_map().get("argument").cloned().unwrap_or(Value::Null) });
        if let Some(context) = args.as_map().get("context") {
            params["context"] = context.clone();
        }
        let client = mounted.client().await?;
        match client.request("completion/complete", params).timeout(mounted.shared().timeout).await {
            Ok(result) => adopt(result, "completion/complete"),
            Err(e) => Err(mounted.error(Some(&client), e).await),
        }
    })
}
