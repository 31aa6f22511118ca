//! The runtime behind `#[mcp::main]`: the command line, tracing to stderr, the Tokio runtime, and serving.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use crate::builder::ServerBuilder;
use crate::server::Server;
use crate::wire::protocol::Implementation;

mod args;
mod command_line;

pub use args::{ArgSpec, Args, FromArgs};
use command_line::{parse_args, program_usage, Command, Environment, LogFormat, Parsed, USAGE};

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

/// How an `#[mcp::main]` program starts (options of the attribute).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MainOptions {
    /// Install the framework's stderr subscriber (`#[mcp::main(tracing = false)]` turns it off).
    pub subscriber: bool,
}

#[cfg(all(feature = "opentelemetry", feature = "subscriber"))]
mod otlp;

/// What the subscriber holds while the program runs: the OTLP exporter, when the `OTEL_*` variables started one.
#[cfg(all(feature = "opentelemetry", feature = "subscriber"))]
type Tracing = Option<otlp::Exporting>;
#[cfg(not(all(feature = "opentelemetry", feature = "subscriber")))]
type Tracing = ();
/// Nothing held: no exporter was started.
#[cfg(all(feature = "opentelemetry", feature = "subscriber"))]
const NO_EXPORTER: Tracing = None;
#[cfg(not(all(feature = "opentelemetry", feature = "subscriber")))]
const NO_EXPORTER: Tracing = ();

#[cfg(not(feature = "subscriber"))]
fn init_tracing(_: LogFormat, _: &str) -> Result<Tracing, String> {
    Ok(NO_EXPORTER)
}

#[cfg(feature = "subscriber")]
fn init_tracing(format: LogFormat, program: &str) -> Result<Tracing, String> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    // Without RUST_LOG, text: info, but not the spans of each request (see `dispatch::run::REQUEST_SPAN_TARGET`),
    // nor of each call a client makes. JSON logs are read by a pipeline that joins them to the requests and their
    // traces: the request's span is on (its fields on every event of a request, at some cost per request).
    let default = match format {
        LogFormat::Text => "info,mcp::request=off,mcp::client::request=off",
        LogFormat::Json => "info,mcp::client::request=off",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    use std::io::IsTerminal;
    let stderr = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        // One object a line: the event's fields at the top, the request's span under `span`.
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    #[cfg(feature = "opentelemetry")]
    if let wanted @ ((true, _) | (_, true)) = otlp::wanted()? {
        let (exporting, tracer) = otlp::start(program, wanted)?;
        // The exporter's filter of its own: the request spans are exported even where stderr leaves them out.
        let spans = tracer.map(|tracer| {
            let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
            tracing_opentelemetry::layer().with_tracer(tracer).with_filter(filter)
        });
        let _ = tracing_subscriber::registry().with(stderr).with(spans).try_init();
        return Ok(Some(exporting));
    }
    let _ = program;
    let _ = tracing_subscriber::registry().with(stderr).try_init();
    Ok(NO_EXPORTER)
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
/// `--list-tools`, `--schema`, `--version`, `--help`; the program's own options through [`FromArgs`]), the stderr
/// subscriber, the Tokio runtime, and serving what `body` returns.
///
/// ```no_run
/// struct Metrics {
///     port: u16,
/// }
///
/// impl mcp::FromArgs for Metrics {
///     const OPTIONS: &'static [mcp::ArgSpec] = &[mcp::ArgSpec::value("--metrics-port", "PORT", "Serve metrics here")];
///
///     fn from_args(args: mcp::Args) -> Result<Self, String> {
///         let port = args.value("--metrics-port").unwrap_or("9000");
///         Ok(Metrics { port: port.parse().map_err(|_| format!("`--metrics-port {port}`: not a port"))? })
///     }
/// }
///
/// fn main() -> std::process::ExitCode {
///     // Your own subscriber (JSON, OpenTelemetry, ...) first; then the framework's command line.
///     mcp::run(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"), false, |metrics: Metrics| async move {
///         Ok::<_, String>(mcp::Server::builder().registered().instructions(format!("metrics on {}", metrics.port)))
///     })
/// }
/// ```
pub fn run<A, B, F>(name: &str, version: &str, default_subscriber: bool, body: B) -> ExitCode
where
    A: FromArgs,
    B: FnOnce(A) -> F,
    F: Future,
    F::Output: MainOutput,
{
    run_main(name, version, MainOptions { subscriber: default_subscriber }, body)
}

/// Runs an `#[mcp::main]` program. Called by the generated `main`; a hand-written `main` calls [`run`].
#[doc(hidden)]
pub fn run_main<A, B, F>(name: &str, version: &str, options: MainOptions, body: B) -> ExitCode
where
    A: FromArgs,
    B: FnOnce(A) -> F,
    F: Future,
    F::Output: MainOutput,
{
    let mut rest = Vec::new();
    let parsed = parse_args(std::env::args().skip(1), A::OPTIONS, Environment::read(), &mut rest);
    let Parsed { command, redis, metrics, log_format } = match parsed {
        Ok(p) => p,
        Err(e) => return Stop::usage(e).exit(),
    };
    match command {
        Command::Help => {
            return print_out(&USAGE.replace("{bin}", name).replace("{program}", &program_usage(A::OPTIONS)))
        }
        Command::Version => return print_out(&format!("{name} {version}\n")),
        _ => {}
    }
    // Held until the program ends: an OTLP exporter sends the spans it holds when dropped.
    let tracing = match options.subscriber.then(|| init_tracing(log_format, name)).transpose() {
        Ok(tracing) => tracing,
        Err(e) => return Stop::usage(e).exit(),
    };
    let args = match A::from_args(Args { rest }) {
        Ok(args) => args,
        Err(e) => return Stop::usage(e).exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return Stop::failure(format!("could not start the Tokio runtime: {e}")).exit(),
    };
    let info = Implementation::new(name, version);
    #[cfg_attr(not(all(feature = "opentelemetry", feature = "subscriber")), allow(unused_variables))]
    let tracing = tracing.as_ref();
    let code = runtime.block_on(async move {
        let builder = match body(args).await.into_builder() {
            Ok(b) => b,
            // Once, on stderr itself: the subscriber writes there too, so a log event as well would say it twice.
            Err(e) => return Stop::failure(format!("start-up failed: {e}")).exit(),
        };
        let builder = match configure(builder, &command, redis).await {
            Ok(b) => b,
            Err(stop) => return stop.exit(),
        };
        #[cfg_attr(not(all(feature = "opentelemetry", feature = "subscriber")), allow(unused_mut))]
        let mut exported = match served_metrics(metrics, &command).await {
            Ok(exported) => exported,
            Err(stop) => return stop.exit(),
        };
        // The OTEL_* variables asked for OTLP metrics: the conventions' histograms go to the exporter's meter.
        #[cfg(all(feature = "opentelemetry", feature = "subscriber"))]
        if let Some(meter) = tracing.and_then(|t| t.as_ref()).and_then(otlp::Exporting::meter) {
            exported.get_or_insert_with(crate::Metrics::new).export_to(&meter);
        }
        let builder = match &exported {
            Some(metrics) => builder.metrics(metrics),
            None => builder,
        };
        match builder.default_info(info).build() {
            Ok(server) => run_command(server, command).await,
            Err(e) => Stop::failure(e).exit(),
        }
    });
    // Shutdown kept its deadline already; a blocking handler that ignored its cancel flag is abandoned.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// Why a program generated by `#[mcp::main]` stops before it serves: the message it writes on stderr, and its exit
/// code (2 for a command line or set-up it cannot use, 1 for a failure).
struct Stop(ExitCode, String);

impl Stop {
    fn usage(message: impl Display) -> Stop {
        Stop(ExitCode::from(2), message.to_string())
    }

    fn failure(message: impl Display) -> Stop {
        Stop(ExitCode::FAILURE, message.to_string())
    }

    /// Says why on stderr, and ends with the code.
    fn exit(self) -> ExitCode {
        eprintln!("error: {}", self.1);
        self.0
    }
}

/// What the command line adds to the program's builder: `--auth-issuer`'s authorization, `--redis`'s shared state.
async fn configure(builder: ServerBuilder, command: &Command, redis: Option<String>) -> Result<ServerBuilder, Stop> {
    let builder = match command {
        #[cfg(feature = "auth")]
        Command::Http(_, _, Some(auth)) if builder.has_authorization() => {
            return Err(Stop::usage(format!(
                "--auth-issuer {} was given, but the program configures its own authorization \
                 (ServerBuilder::authorization); drop one",
                auth.issuer
            )))
        }
        #[cfg(feature = "auth")]
        Command::Http(_, _, Some(auth)) => {
            builder.authorization(crate::auth::Authorization::jwt(auth.issuer.clone(), auth.resource.clone()))
        }
        _ => builder,
    };
    #[cfg(feature = "redis")]
    if let Some(url) = redis {
        // Unreachable at start: the program does not start as if its state were shared.
        let redis = crate::redis::Redis::connect(&url).await.map_err(|e| Stop::failure(format!("--redis: {e}")))?;
        return Ok(builder.shared(&redis));
    }
    #[cfg(not(feature = "redis"))]
    let _ = redis;
    Ok(builder)
}

/// `--metrics`: the metrics served on that address while the program serves (none for the commands that only
/// print). Bound here, before serving, so that an address in use stops the program now, not silently later.
async fn served_metrics(
    metrics: Option<std::net::SocketAddr>,
    command: &Command,
) -> Result<Option<crate::Metrics>, Stop> {
    #[cfg(feature = "http")]
    if let Some(addr) = metrics.filter(|_| matches!(command, Command::Serve | Command::Http(..))) {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Stop::failure(format!("could not serve metrics on {addr} (--metrics): {e}")))?;
        let served = crate::Metrics::new();
        tokio::spawn(served.clone().serve_on(listener));
        return Ok(Some(served));
    }
    #[cfg(not(feature = "http"))]
    let _ = (metrics, command);
    Ok(None)
}

/// Runs the command on the built server: lists or prints what it serves, or serves it until it is stopped.
async fn run_command(server: Server, command: Command) -> ExitCode {
    match command {
        Command::ListTools => {
            let list = server.tools_list();
            print_out(&format!("{}\n", serde_json::to_string_pretty(&list).unwrap_or_default()))
        }
        Command::Schema => {
            print_out(&format!("{}\n", serde_json::to_string_pretty(&server.schema()).unwrap_or_default()))
        }
        #[cfg(feature = "http")]
        Command::Http(addr, options, _) => match server.serve_http(addr, *options).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => Stop::failure(format!("could not serve HTTP on {addr}: {e}")).exit(),
        },
        _ => match server.serve_stdio().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("stdio transport failed: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
