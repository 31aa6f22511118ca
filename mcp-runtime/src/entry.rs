//! The runtime behind `#[mcp::main]`: the command line, tracing to stderr, the Tokio runtime, and serving.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use crate::server::{Server, ServerBuilder};
use crate::wire::protocol::Implementation;

/// What the body of an `#[mcp::main]` function may return: nothing (serve everything registered), a
/// [`ServerBuilder`] to serve, or a `Result` of either whose `Err` stops the program before anything is served.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an `#[mcp::main]` function",
    note = "return `()`, an `mcp::ServerBuilder`, or a `Result` of one of them whose error implements `Display`"
)]
pub trait MainOutput {
    /// The builder to serve, or the reason start-up failed.
    fn into_builder(self) -> Result<ServerBuilder, String>;
}

impl MainOutput for () {
    fn into_builder(self) -> Result<ServerBuilder, String> {
        Ok(Server::builder().registered())
    }
}

impl MainOutput for ServerBuilder {
    fn into_builder(self) -> Result<ServerBuilder, String> {
        Ok(self)
    }
}

impl<T: MainOutput, E: Display> MainOutput for Result<T, E> {
    fn into_builder(self) -> Result<ServerBuilder, String> {
        self.map_err(|e| e.to_string()).and_then(T::into_builder)
    }
}

const USAGE: &str = "\
USAGE:
    {bin} [OPTIONS]

Serves this program's MCP tools, prompts and resources over stdio (newline-delimited JSON-RPC on stdin and
stdout), or over Streamable HTTP with --http.

OPTIONS:
    --http ADDR        Serve Streamable HTTP on ADDR (`127.0.0.1:8000`, or a port alone for 127.0.0.1) at /mcp
    --json-response    With --http: answer each request with one JSON body instead of an SSE stream
    --stateless        With --http: no sessions; every POST stands alone
    --list-tools       Print every tool as `tools/list` describes it (names, descriptions, JSON Schemas) and exit
    --schema           Print everything served (server info, capabilities, tools, prompts, resources, templates,
                       custom methods, with their schemas) as one JSON document, and exit
    --version          Print the program's name and version and exit
    --help             Print this help and exit

ENVIRONMENT:
    RUST_LOG         Diagnostics to stderr, as a tracing filter (default: `info,mcp::request=off`; `info` adds a
                     `mcp.request` span with method, id, handler, era, session and client to every event of a
                     request). stdout carries only protocol messages.
";

/// The command line of an `#[mcp::main]` program as its body sees it: what is left once the framework took its own
/// options (`--http`, `--json-response`, `--stateless`, `--list-tools`, `--schema`, `--version`, `--help`).
///
/// Declare `main` with one parameter to receive it; the program then accepts options of its own (without that
/// parameter an unknown option is an error). Parse them by hand with [`Args::value`] and [`Args::flag`], or hand
/// [`Args::rest`] to a parser such as `clap` (`Cli::parse_from(std::iter::once(bin).chain(args.rest()))`).
///
/// ```no_run
/// #[mcp::main]
/// async fn main(args: mcp::Args) -> Result<mcp::ServerBuilder, String> {
///     let db = args.value("--db-url").unwrap_or("sqlite::memory:").to_owned();
///     let verbose = args.flag("--verbose");
///     Ok(mcp::Server::builder().registered().instructions(format!("db {db}, verbose {verbose}")))
/// }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    rest: Vec<String>,
}

impl Args {
    /// The arguments the framework did not take, in order.
    pub fn rest(&self) -> &[String] {
        &self.rest
    }

    /// The value of `--name value` or `--name=value` (the last one given).
    pub fn value(&self, name: &str) -> Option<&str> {
        let mut found = None;
        let mut it = self.rest.iter();
        while let Some(arg) = it.next() {
            if arg == name {
                found = it.next().map(String::as_str);
            } else if let Some(value) = arg.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                found = Some(value);
            }
        }
        found
    }

    /// Whether `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.rest.iter().any(|a| a == name)
    }
}

/// How an `#[mcp::main]` program starts (options of the attribute).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MainOptions {
    /// Install the framework's stderr subscriber (`#[mcp::main(tracing = false)]` turns it off).
    pub subscriber: bool,
    /// `main` takes [`Args`]: options the framework does not know are the program's.
    pub takes_args: bool,
}

/// The HTTP options the command line sets (`--json-response`, `--stateless`).
#[cfg(feature = "http")]
type HttpOptions = crate::HttpOptions;

/// Without the `http` feature the HTTP options are never used: `--http` is refused.
#[cfg(not(feature = "http"))]
#[derive(Default)]
struct HttpOptions;

#[cfg(not(feature = "http"))]
impl HttpOptions {
    fn new() -> Self {
        HttpOptions
    }
    fn json_response(self, _: bool) -> Self {
        self
    }
    fn stateless(self, _: bool) -> Self {
        self
    }
}

enum Command {
    Serve,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Http(std::net::SocketAddr, Box<HttpOptions>),
    ListTools,
    Schema,
    Version,
    Help,
}

fn parse_args(mut args: impl Iterator<Item = String>, rest: Option<&mut Vec<String>>) -> Result<Command, String> {
    let mut rest = rest;
    let mut command = Command::Serve;
    let mut http: Option<std::net::SocketAddr> = None;
    let mut options = HttpOptions::new();
    let mut http_only = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(Command::Help),
            "--list-tools" => command = Command::ListTools,
            "--schema" => command = Command::Schema,
            "--version" | "-V" => return Ok(Command::Version),
            "--http" if cfg!(not(feature = "http")) => {
                return Err(
                    "`--http` needs the `http` feature of mcp-runtime, which this program was built without".into()
                )
            }
            "--http" => {
                let addr = args.next().ok_or("`--http` needs an address, such as 127.0.0.1:8000")?;
                let parsed = match addr.parse::<u16>() {
                    Ok(port) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
                    Err(_) => addr.parse(),
                };
                http = Some(parsed.map_err(|_| format!("`--http {addr}`: not an address like 127.0.0.1:8000"))?);
            }
            "--json-response" => {
                options = options.json_response(true);
                http_only = Some("--json-response");
            }
            "--stateless" => {
                options = options.stateless(true);
                http_only = Some("--stateless");
            }
            other => match rest.as_deref_mut() {
                Some(rest) => rest.push(other.to_owned()),
                None => return Err(format!("unknown option `{other}`; see --help")),
            },
        }
    }
    match (http, http_only) {
        (Some(addr), _) if matches!(command, Command::Serve) => Ok(Command::Http(addr, Box::new(options))),
        (None, Some(flag)) => Err(format!("`{flag}` goes with `--http`")),
        _ => Ok(command),
    }
}

#[cfg(not(feature = "subscriber"))]
fn init_tracing() {}

#[cfg(feature = "subscriber")]
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    // Without RUST_LOG: info, but not the per-request span (see `dispatch::REQUEST_SPAN_TARGET`).
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,mcp::request=off"));
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Writes `text` to stdout. A reader that went away (`--list-tools | head`) ends the output quietly, with success:
/// `println!` would panic there.
fn print_out(text: &str) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: could not write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a program the way `#[mcp::main]` does, for a hand-written `main`: the same command line (`--http`,
/// `--list-tools`, `--schema`, `--version`, `--help`; the rest is the program's, in [`Args`]), the stderr subscriber,
/// the Tokio runtime, and serving what `body` returns.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     // Your own subscriber (JSON, OpenTelemetry, ...) first; then the framework's command line.
///     mcp::run(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"), false, |args: mcp::Args| async move {
///         let port = args.value("--metrics-port").unwrap_or("9000").to_owned();
///         Ok::<_, String>(mcp::Server::builder().registered().instructions(format!("metrics on {port}")))
///     })
/// }
/// ```
pub fn run<B, F>(name: &str, version: &str, default_subscriber: bool, body: B) -> ExitCode
where
    B: FnOnce(Args) -> F,
    F: Future,
    F::Output: MainOutput,
{
    run_main(name, version, MainOptions { subscriber: default_subscriber, takes_args: true }, body)
}

/// Runs an `#[mcp::main]` program. Called by the generated `main`; a hand-written `main` calls [`run`].
#[doc(hidden)]
pub fn run_main<B, F>(name: &str, version: &str, options: MainOptions, body: B) -> ExitCode
where
    B: FnOnce(Args) -> F,
    F: Future,
    F::Output: MainOutput,
{
    let bin = name.to_owned();
    let mut rest = Vec::new();
    let parsed = parse_args(std::env::args().skip(1), options.takes_args.then_some(&mut rest));
    let command = match parsed {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command::Help = command {
        return print_out(&USAGE.replace("{bin}", &bin));
    }
    if let Command::Version = command {
        return print_out(&format!("{name} {version}\n"));
    }
    if options.subscriber {
        init_tracing();
    }
    let args = Args { rest };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the Tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let info = Implementation::new(name, version);
    let code = runtime.block_on(async move {
        let builder = match body(args).await.into_builder() {
            Ok(b) => b,
            // Once, on stderr itself: the subscriber writes there too, so a log event as well would say it twice.
            Err(e) => {
                eprintln!("error: start-up failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let server = match builder.default_info(info).build() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        match command {
            Command::ListTools => {
                let list = server.tools_list();
                print_out(&format!("{}\n", serde_json::to_string_pretty(&list).unwrap_or_default()))
            }
            Command::Schema => {
                print_out(&format!("{}\n", serde_json::to_string_pretty(&server.schema()).unwrap_or_default()))
            }
            #[cfg(feature = "http")]
            Command::Http(addr, options) => match server.serve_http(addr, *options).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: could not serve HTTP on {addr}: {e}");
                    ExitCode::FAILURE
                }
            },
            _ => match server.serve_stdio().await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("stdio transport failed: {e}");
                    ExitCode::FAILURE
                }
            },
        }
    });
    // Shutdown kept its deadline already; a blocking handler that ignored its cancel flag is abandoned.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}
