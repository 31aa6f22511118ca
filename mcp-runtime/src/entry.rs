//! The runtime behind `#[mcp::main]`: the command line, tracing to stderr, the Tokio runtime, and serving.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use crate::builder::ServerBuilder;
use crate::server::Server;
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
    --http ADDR            Serve Streamable HTTP on ADDR (`127.0.0.1:8000`, or a port alone for 127.0.0.1) at /mcp
    --allow-host NAME      With --http: also accept requests whose Host is NAME (with any port, or only the port
                           given, as in `mcp.example.com:8443`); loopback names are always accepted. Repeatable
    --allow-origin ORIGIN  With --http: also accept requests whose Origin is ORIGIN (`https://app.example.com`).
                           Repeatable
    --json-response        With --http: answer each request with one JSON body instead of an SSE stream
    --stateless            With --http: no sessions; every POST stands alone
    --auth-issuer URL      With --http and --auth-resource: require a bearer JWT access token from this OAuth issuer
                           (keys from its JWKS, found through its metadata) on every request
    --auth-resource URL    With --http and --auth-issuer: this server's resource identifier, which tokens must
                           name in their audience (the endpoint's public URL, such as https://mcp.example.com/mcp)
    --list-tools           Print every tool as `tools/list` describes it (names, descriptions, JSON Schemas) and exit
    --schema               Print everything served (server info, capabilities, tools, prompts, resources,
                           templates, custom methods, with their schemas) as one JSON document, and exit
    --version              Print the program's name and version and exit
    --help                 Print this help and exit
{program}
ENVIRONMENT:
    RUST_LOG           Diagnostics to stderr, as a tracing filter (default: `info,mcp::request=off`; `info` adds a
                       `mcp.request` span with method, id, handler, era, session and client to every event of a
                       request). stdout carries only protocol messages.
    MCP_ALLOW_HOST     With --http: more names for --allow-host, comma-separated
    MCP_ALLOW_ORIGIN   With --http: more origins for --allow-origin, comma-separated
    MCP_AUTH_ISSUER    With --http: --auth-issuer, when it is not given
    MCP_AUTH_RESOURCE  With --http: --auth-resource, when it is not given
";

/// The framework's own options, for "did you mean" and for the check that a program's option does not shadow one.
const FRAMEWORK_OPTIONS: &[&str] = &[
    "--http",
    "--allow-host",
    "--allow-origin",
    "--json-response",
    "--stateless",
    "--auth-issuer",
    "--auth-resource",
    "--list-tools",
    "--schema",
    "--version",
    "--help",
];

/// The command line of an `#[mcp::main]` program as its body sees it: what is left once the framework took its own
/// options (`--http`, `--allow-host`, `--allow-origin`, `--json-response`, `--stateless`, `--list-tools`,
/// `--schema`, `--version`, `--help`), in order.
///
/// Only options the program declared get here: `main` takes a type implementing [`FromArgs`], whose
/// [`FromArgs::OPTIONS`] are listed by `--help` and accepted on the command line, and which reads them from these
/// `Args` (with [`Args::value`] and [`Args::flag`], or by handing [`Args::rest`] to a parser such as `clap`). Any
/// other option is refused with exit code 2, naming it. `Args` itself implements `FromArgs` with no options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    rest: Vec<String>,
}

impl Args {
    /// The arguments the framework did not take, in order: the program's declared options and their values.
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

    /// Every value of a repeated `--name value` (or `--name=value`), in order.
    pub fn values(&self, name: &str) -> Vec<&str> {
        let mut found = Vec::new();
        let mut it = self.rest.iter();
        while let Some(arg) = it.next() {
            if arg == name {
                found.extend(it.next().map(String::as_str));
            } else if let Some(value) = arg.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                found.push(value);
            }
        }
        found
    }

    /// Whether `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.rest.iter().any(|a| a == name)
    }
}

/// One option of the program's own: its name, the name of its value if it takes one, and a line for `--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgSpec {
    /// The option, with its dashes: `--db`.
    pub name: &'static str,
    /// What its value is called in `--help` (`PATH`), or `None` for a flag.
    pub value: Option<&'static str>,
    /// What it does, for `--help`.
    pub help: &'static str,
}

impl ArgSpec {
    /// An option that takes no value: `ArgSpec::flag("--verbose", "log every query")`.
    pub const fn flag(name: &'static str, help: &'static str) -> ArgSpec {
        ArgSpec { name, value: None, help }
    }

    /// An option with a value, given as `--db PATH` or `--db=PATH`: `ArgSpec::value("--db", "PATH", "the database
    /// file")`.
    pub const fn value(name: &'static str, value: &'static str, help: &'static str) -> ArgSpec {
        ArgSpec { name, value: Some(value), help }
    }
}

/// The options of a program's own, as the parameter of its `#[mcp::main]` function: declared for `--help` and the
/// command line's check, then read from [`Args`].
///
/// ```no_run
/// struct Options {
///     db: String,
///     verbose: bool,
/// }
///
/// impl mcp::FromArgs for Options {
///     const OPTIONS: &'static [mcp::ArgSpec] = &[
///         mcp::ArgSpec::value("--db", "PATH", "The SQLite database (default notes.db)"),
///         mcp::ArgSpec::flag("--verbose", "Log every query"),
///     ];
///
///     fn from_args(args: mcp::Args) -> Result<Self, String> {
///         Ok(Options { db: args.value("--db").unwrap_or("notes.db").to_owned(), verbose: args.flag("--verbose") })
///     }
/// }
///
/// #[mcp::main]
/// async fn main(options: Options) -> Result<mcp::ServerBuilder, String> {
///     let note = format!("db {}, verbose {}", options.db, options.verbose);
///     Ok(mcp::Server::builder().registered().instructions(note))
/// }
/// ```
///
/// `notes --db x.db --http 8000` serves HTTP with `x.db`; `notes --dbb x.db` exits with code 2 and
/// ``error: unknown option `--dbb`; did you mean `--db`?``; `notes --help` lists `--db PATH` and `--verbose` under
/// "PROGRAM OPTIONS". An error from [`FromArgs::from_args`] is printed the same way, with the same exit code.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the parameter of an `#[mcp::main]` function",
    note = "`main` takes no parameter, `args: mcp::Args`, or a type of yours implementing `mcp::FromArgs` (which \
            declares the program's options)"
)]
pub trait FromArgs: Sized {
    /// The program's options: accepted on the command line and listed by `--help`. Anything else is refused.
    const OPTIONS: &'static [ArgSpec];

    /// Reads the options from what the framework left; an `Err` is a usage error (exit code 2).
    fn from_args(args: Args) -> Result<Self, String>;
}

impl FromArgs for Args {
    const OPTIONS: &'static [ArgSpec] = &[];

    fn from_args(args: Args) -> Result<Self, String> {
        Ok(args)
    }
}

/// How an `#[mcp::main]` program starts (options of the attribute).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MainOptions {
    /// Install the framework's stderr subscriber (`#[mcp::main(tracing = false)]` turns it off).
    pub subscriber: bool,
}

/// The HTTP options the command line sets (`--json-response`, `--stateless`, `--allow-host`, `--allow-origin`).
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
    fn allow_host(self, _: String) -> Self {
        self
    }
    fn allow_origin(self, _: String) -> Self {
        self
    }
}

enum Command {
    Serve,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Http(std::net::SocketAddr, Box<HttpOptions>, #[cfg_attr(not(feature = "auth"), allow(dead_code))] Option<AuthArgs>),
    ListTools,
    Schema,
    Version,
    Help,
}

/// `--auth-issuer` and `--auth-resource`: the HTTP endpoint needs a JWT from the issuer for the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AuthArgs {
    issuer: String,
    resource: String,
}

/// What the environment adds to the command line: `MCP_ALLOW_HOST` and `MCP_ALLOW_ORIGIN`, comma-separated;
/// `MCP_AUTH_ISSUER` and `MCP_AUTH_RESOURCE`.
#[derive(Default)]
struct Environment {
    allow_hosts: Vec<String>,
    allow_origins: Vec<String>,
    auth_issuer: Option<String>,
    auth_resource: Option<String>,
}

impl Environment {
    fn read() -> Environment {
        let list = |name: &str| -> Vec<String> {
            std::env::var(name)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let text = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        Environment {
            allow_hosts: list("MCP_ALLOW_HOST"),
            allow_origins: list("MCP_ALLOW_ORIGIN"),
            auth_issuer: text("MCP_AUTH_ISSUER"),
            auth_resource: text("MCP_AUTH_RESOURCE"),
        }
    }
}

/// The option closest to `typed` among the framework's and the program's, if it is close enough to be a typo.
fn closest<'a>(typed: &str, program: &'a [ArgSpec]) -> Option<&'a str> {
    FRAMEWORK_OPTIONS
        .iter()
        .copied()
        .chain(program.iter().map(|spec| spec.name))
        .map(|name| (edit_distance(typed, name), name))
        .filter(|&(distance, name)| distance <= (name.len() / 3).max(1))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

fn parse_args(
    mut args: impl Iterator<Item = String>,
    program: &[ArgSpec],
    env: Environment,
    rest: &mut Vec<String>,
) -> Result<Command, String> {
    let mut command = Command::Serve;
    let mut http: Option<std::net::SocketAddr> = None;
    let mut options = HttpOptions::new();
    let mut http_only = None;
    let (mut auth_issuer, mut auth_resource) = (None, None);
    while let Some(arg) = args.next() {
        // `--name=value` as well as `--name value`.
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| {
            inline.clone().or_else(|| args.next()).ok_or_else(|| format!("`{name}` needs a value, such as {what}"))
        };
        match name {
            "--help" | "-h" => return Ok(Command::Help),
            "--list-tools" => command = Command::ListTools,
            "--schema" => command = Command::Schema,
            "--version" | "-V" => return Ok(Command::Version),
            "--http" | "--allow-host" | "--allow-origin" if cfg!(not(feature = "http")) => {
                return Err(format!(
                    "`{name}` needs the `http` feature of mcp-runtime, which this program was built without"
                ))
            }
            "--http" => {
                let addr = value("127.0.0.1:8000")?;
                let parsed = match addr.parse::<u16>() {
                    Ok(port) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
                    Err(_) => addr.parse(),
                };
                http = Some(parsed.map_err(|_| format!("`--http {addr}`: not an address like 127.0.0.1:8000"))?);
            }
            "--allow-host" => {
                options = options.allow_host(value("mcp.example.com")?);
                http_only = Some("--allow-host");
            }
            "--allow-origin" => {
                options = options.allow_origin(value("https://app.example.com")?);
                http_only = Some("--allow-origin");
            }
            "--json-response" => {
                options = options.json_response(true);
                http_only = Some("--json-response");
            }
            "--stateless" => {
                options = options.stateless(true);
                http_only = Some("--stateless");
            }
            "--auth-issuer" | "--auth-resource" if cfg!(not(feature = "auth")) => {
                return Err(format!(
                    "`{name}` needs the `auth` feature of mcp-runtime, which this program was built without"
                ))
            }
            "--auth-issuer" => {
                auth_issuer = Some(value("https://login.example.com")?);
                http_only = Some("--auth-issuer");
            }
            "--auth-resource" => {
                auth_resource = Some(value("https://mcp.example.com/mcp")?);
                http_only = Some("--auth-resource");
            }
            other => match program.iter().find(|spec| spec.name == other) {
                Some(spec) => match spec.value {
                    Some(what) => {
                        let value = value(what)?;
                        rest.push(other.to_owned());
                        rest.push(value);
                    }
                    None if inline.is_some() => return Err(format!("`{other}` takes no value")),
                    None => rest.push(arg.clone()),
                },
                None if !other.starts_with('-') => return Err(format!("unexpected argument `{other}`; see --help")),
                None => {
                    return Err(match closest(other, program) {
                        Some(near) => format!("unknown option `{other}`; did you mean `{near}`? (see --help)"),
                        None => format!("unknown option `{other}`; see --help"),
                    })
                }
            },
        }
    }
    match (http, http_only) {
        (Some(addr), _) if matches!(command, Command::Serve) => {
            for host in env.allow_hosts {
                options = options.allow_host(host);
            }
            for origin in env.allow_origins {
                options = options.allow_origin(origin);
            }
            let auth = match (auth_issuer.or(env.auth_issuer), auth_resource.or(env.auth_resource)) {
                (Some(issuer), Some(resource)) => Some(AuthArgs { issuer, resource }),
                (None, None) => None,
                (Some(_), None) => {
                    return Err("`--auth-issuer` needs `--auth-resource` (or MCP_AUTH_RESOURCE): the URL tokens \
                                must be issued for"
                        .into())
                }
                (None, Some(_)) => {
                    return Err("`--auth-resource` needs `--auth-issuer` (or MCP_AUTH_ISSUER): the OAuth issuer \
                                whose tokens to accept"
                        .into())
                }
            };
            Ok(Command::Http(addr, Box::new(options), auth))
        }
        (None, Some(flag)) => Err(format!("`{flag}` goes with `--http`")),
        _ => Ok(command),
    }
}

/// The "PROGRAM OPTIONS" section of `--help`, empty when the program has none.
fn program_usage(program: &[ArgSpec]) -> String {
    if program.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nPROGRAM OPTIONS:\n");
    for spec in program {
        let left = match spec.value {
            Some(value) => format!("{} {value}", spec.name),
            None => spec.name.to_owned(),
        };
        out.push_str(&format!("    {left:<22} {}\n", spec.help));
    }
    out
}

#[cfg(not(feature = "subscriber"))]
fn init_tracing() {}

#[cfg(feature = "subscriber")]
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    // Without RUST_LOG: info, but not the per-request span (see `dispatch::run::REQUEST_SPAN_TARGET`).
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
    let bin = name.to_owned();
    let mut rest = Vec::new();
    let parsed = parse_args(std::env::args().skip(1), A::OPTIONS, Environment::read(), &mut rest);
    let command = match parsed {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command::Help = command {
        return print_out(&USAGE.replace("{bin}", &bin).replace("{program}", &program_usage(A::OPTIONS)));
    }
    if let Command::Version = command {
        return print_out(&format!("{name} {version}\n"));
    }
    if options.subscriber {
        init_tracing();
    }
    let args = match A::from_args(Args { rest }) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
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
        let builder = match &command {
            #[cfg(feature = "auth")]
            Command::Http(_, _, Some(auth)) if builder.has_authorization() => {
                eprintln!(
                    "error: --auth-issuer {} was given, but the program configures its own authorization \
                     (ServerBuilder::authorization); drop one",
                    auth.issuer
                );
                return ExitCode::from(2);
            }
            #[cfg(feature = "auth")]
            Command::Http(_, _, Some(auth)) => {
                builder.authorization(crate::auth::Authorization::jwt(auth.issuer.clone(), auth.resource.clone()))
            }
            _ => builder,
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
            Command::Http(addr, options, _) => match server.serve_http(addr, *options).await {
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
