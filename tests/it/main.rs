//! The integration tests, one crate: each module an area (its file's doc says what it covers), sharing the harness
//! in `tests/common`. One binary links the crate once, where a binary per file linked it 56 times. A test that needs
//! a process of its own stays a binary beside this one: `tests/auth_client.rs`, `tests/otel.rs` and
//! `tests/tracing_spans.rs` install a global `tracing` subscriber, `tests/client_robustness.rs` measures its
//! process's memory, and `tests/ui.rs` runs trybuild.
//!
//! Run one area with `cargo test --test it balancers::`, one test by its path (`balancers::our_2025_client::nginx`).

#[path = "../common/auth_tools.rs"]
mod auth_tools;
#[path = "../common/mod.rs"]
mod common;

mod apps;
mod apps_browser;
mod auth_dpop;
mod auth_python;
mod auth_server;
mod balancers;
mod cancellation;
mod caps;
mod client;
mod client_python_server;
mod client_requests;
mod client_typed;
mod compose;
mod compose_auth;
mod conformance;
mod dashboard;
mod events;
mod events_attribute;
mod events_hooks;
mod events_shared;
mod events_webhook_client;
mod events_webhooks;
mod events_webhooks_bookshop;
mod events_webhooks_shared;
mod extensions;
mod first_hour;
mod flatten;
mod gateway;
mod http;
mod http_2026;
mod in_process;
mod inspector;
mod json_logs;
mod limits;
mod logging;
mod metrics;
mod metrics_state;
mod middleware;
mod module_graph;
mod oidc_harness;
mod otel_metrics;
mod otlp;
mod outbound_limits;
mod progress;
mod prometheus_harness;
mod prompts_resources;
mod public_api;
mod python_2026;
mod python_interop;
mod questions;
mod scale_out;
mod scale_out_balanced;
mod scale_out_balanced_2025;
mod skills;
mod state_lifespan;
mod stdio_2026;
mod stdio_cancellation;
mod stdio_protocol;
mod task_limits;
mod tasks_2025;
mod tasks_2026;
mod tasks_interop;
mod typescript_interop;
mod visibility;
mod webhook_receiver;
