//! The command line of an `#[mcp::main]` program: the framework's options (`--http`, `--list-tools`, ...), what the
//! environment adds, the program's declared options set apart, typos answered with the nearest option, and `--help`.

use super::ArgSpec;

pub(super) const USAGE: &str = "\
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
    --trust-forwarded      With --http, behind a balancer that sets it: the client's address is the last one
                           `Forwarded` (or `X-Forwarded-For`) names, for per-client limits and logs
    --keep-alive SECONDS   With --http: a keep-alive comment on every open stream idle this long (default 15),
                           below the read timeout of the proxy in front. `/healthz` and `/readyz` answer checks
    --drain-timeout SECONDS
                           With --http: on SIGTERM, say not ready and serve what is in flight for at most this long
                           (default 30) before cancelling the rest and exiting
    --drain-notice SECONDS With --http: on SIGTERM, go on serving new requests this long (default 3) after saying
                           not ready, while the balancers take the instance out
    --auth-issuer URL      With --http and --auth-resource: require a bearer JWT access token from this OAuth issuer
                           (keys from its JWKS, found through its metadata) on every request
    --auth-resource URL    With --http and --auth-issuer: this server's resource identifier, which tokens must
                           name in their audience (the endpoint's public URL, such as https://mcp.example.com/mcp)
    --metrics ADDR         Serve Prometheus metrics at /metrics on ADDR (`127.0.0.1:9464`, or a port alone for
                           127.0.0.1), a listener of its own: each method's and tool's calls, errors and durations
                           (the OpenTelemetry conventions' mcp.server.operation.duration), sessions, requests in
                           flight
    --log-format FORMAT    How diagnostics go to stderr: `text` (the default) or `json` (one object a line, with
                           the request's span: method, tool, ids and the caller's trace id, so logs join traces)
    --redis URL            Share state with the program's other instances through this Redis
                           (`redis://127.0.0.1:6379`): changes, tasks, 2025 sessions and their streams' events
                           (resumed on any instance). Every instance needs the same MCP_REQUEST_STATE_KEY
    --list-tools           Print every tool as `tools/list` describes it (names, descriptions, JSON Schemas) and exit
    --schema               Print everything served (server info, capabilities, tools, prompts, resources,
                           templates, custom methods, with their schemas) as one JSON document, and exit
    --version              Print the program's name and version and exit
    --help                 Print this help and exit
{program}
ENVIRONMENT:
    RUST_LOG           Diagnostics to stderr, as a tracing filter (default: `info` without the spans of each request
                       and of each call the program's client makes, `mcp::request=off,mcp::client::request=off`;
                       with --log-format json, with the requests' spans). A request's `mcp.request` span adds to its
                       every event: method, request id, tool or prompt, protocol version, session, transport,
                       client, client.address, trace_id. stdout carries only protocol messages.
    MCP_LOG_FORMAT     --log-format, when it is not given
    MCP_ALLOW_HOST     With --http: more names for --allow-host, comma-separated
    MCP_ALLOW_ORIGIN   With --http: more origins for --allow-origin, comma-separated
    MCP_AUTH_ISSUER    With --http: --auth-issuer, when it is not given
    MCP_AUTH_RESOURCE  With --http: --auth-resource, when it is not given
    MCP_REDIS_URL      --redis, when it is not given
    MCP_REQUEST_STATE_KEY  The key (64 hex digits) that seals the requestState of input_required results; the
                       same on every instance of the program (`openssl rand -hex 32`)
";

/// The framework's own options, for "did you mean" and for the check that a program's option does not shadow one.
const FRAMEWORK_OPTIONS: &[&str] = &[
    "--http",
    "--allow-host",
    "--allow-origin",
    "--json-response",
    "--stateless",
    "--trust-forwarded",
    "--keep-alive",
    "--drain-timeout",
    "--drain-notice",
    "--auth-issuer",
    "--auth-resource",
    "--redis",
    "--metrics",
    "--log-format",
    "--list-tools",
    "--schema",
    "--version",
    "--help",
];

/// The HTTP options the command line sets (`--json-response`, `--stateless`, `--allow-host`, `--allow-origin`).
#[cfg(feature = "http")]
pub(super) type HttpOptions = crate::HttpOptions;

/// Without the `http` feature the HTTP options are never used: `--http` is refused.
#[cfg(not(feature = "http"))]
#[derive(Default)]
pub(super) struct HttpOptions;

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
    fn trust_forwarded(self, _: bool) -> Self {
        self
    }
    fn keep_alive(self, _: std::time::Duration) -> Self {
        self
    }
    fn drain_timeout(self, _: std::time::Duration) -> Self {
        self
    }
    fn drain_notice(self, _: std::time::Duration) -> Self {
        self
    }
    fn allow_host(self, _: String) -> Self {
        self
    }
    fn allow_origin(self, _: String) -> Self {
        self
    }
}

pub(super) enum Command {
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
pub(super) struct AuthArgs {
    pub(super) issuer: String,
    pub(super) resource: String,
}

/// What the environment adds to the command line: `MCP_ALLOW_HOST` and `MCP_ALLOW_ORIGIN`, comma-separated;
/// `MCP_AUTH_ISSUER` and `MCP_AUTH_RESOURCE`.
#[derive(Default)]
pub(super) struct Environment {
    allow_hosts: Vec<String>,
    allow_origins: Vec<String>,
    auth_issuer: Option<String>,
    auth_resource: Option<String>,
    redis: Option<String>,
    log_format: Option<String>,
}

impl Environment {
    pub(super) fn read() -> Environment {
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
            redis: text("MCP_REDIS_URL"),
            log_format: text("MCP_LOG_FORMAT"),
        }
    }
}

/// A number of seconds an option takes, from `least` to an hour.
fn seconds(option: &str, given: &str, least: f64) -> Result<std::time::Duration, String> {
    given
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= least && *s <= 3600.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{option} {given}`: not a number of seconds from {least} to 3600"))
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

/// What the command line asks for, and the options that go with any command.
pub(super) struct Parsed {
    pub(super) command: Command,
    /// `--redis` (or `MCP_REDIS_URL`): the Redis the instances share.
    pub(super) redis: Option<String>,
    /// `--metrics`: where to serve Prometheus metrics.
    pub(super) metrics: Option<std::net::SocketAddr>,
    /// `--log-format` (or `MCP_LOG_FORMAT`): how diagnostics are written to stderr.
    pub(super) log_format: LogFormat,
}

/// How diagnostics are written to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum LogFormat {
    /// Lines for a person.
    #[default]
    Text,
    /// One JSON object a line, for a log pipeline: with the request's span (method, tool, ids, the trace id).
    Json,
}

impl LogFormat {
    fn parse(flag: &str, value: &str) -> Result<LogFormat, String> {
        match value {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("`{flag} {other}`: the formats are `text` and `json`")),
        }
    }
}

pub(super) fn parse_args(
    args: impl Iterator<Item = String>,
    program: &[ArgSpec],
    mut env: Environment,
    rest: &mut Vec<String>,
) -> Result<Parsed, String> {
    let (mut redis, mut metrics, mut log_format) = (None, None, None);
    let command = parse_command(args, program, &mut env, rest, (&mut redis, &mut metrics, &mut log_format))?;
    let log_format = match (log_format, env.log_format.take()) {
        (Some(format), _) => format,
        (None, Some(format)) => LogFormat::parse("MCP_LOG_FORMAT", &format)?,
        (None, None) => LogFormat::Text,
    };
    Ok(Parsed { command, redis: redis.or(env.redis.take()), metrics, log_format })
}

fn parse_command(
    mut args: impl Iterator<Item = String>,
    program: &[ArgSpec],
    env: &mut Environment,
    rest: &mut Vec<String>,
    (redis, metrics, log_format): (&mut Option<String>, &mut Option<std::net::SocketAddr>, &mut Option<LogFormat>),
) -> Result<Command, String> {
    let mut command = Command::Serve;
    let mut http: Option<std::net::SocketAddr> = None;
    let mut options = HttpOptions::new();
    let mut http_only: Option<String> = None;
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
        if let Some(feature) = missing_feature(name) {
            return Err(format!(
                "`{name}` needs the `{feature}` feature of mcp-runtime, which this program was built without"
            ));
        }
        let (set, taken) = http_option(name, &mut value, options)?;
        options = set;
        if taken {
            http_only = Some(name.to_owned());
            continue;
        }
        match name {
            "--help" | "-h" => return Ok(Command::Help),
            "--list-tools" => command = Command::ListTools,
            "--schema" => command = Command::Schema,
            "--version" | "-V" => return Ok(Command::Version),
            "--http" => http = Some(address(name, &value("127.0.0.1:8000")?, "127.0.0.1:8000")?),
            "--metrics" => *metrics = Some(address(name, &value("127.0.0.1:9464")?, "127.0.0.1:9464")?),
            "--log-format" => *log_format = Some(LogFormat::parse(name, &value("json")?)?),
            "--redis" => *redis = Some(value("redis://127.0.0.1:6379")?),
            "--auth-issuer" => {
                auth_issuer = Some(value("https://login.example.com")?);
                http_only = Some(name.to_owned());
            }
            "--auth-resource" => {
                auth_resource = Some(value("https://mcp.example.com/mcp")?);
                http_only = Some(name.to_owned());
            }
            other => program_option(&arg, other, inline.is_some(), &mut value, program, rest)?,
        }
    }
    match (http, http_only) {
        (Some(addr), _) if matches!(command, Command::Serve) => {
            serve_http(addr, options, env, (auth_issuer, auth_resource))
        }
        (None, Some(flag)) => Err(format!("`{flag}` goes with `--http`")),
        _ => Ok(command),
    }
}

/// An option of the program's own (`name`, written as `arg`), set apart in `rest` with its value; anything else is
/// an error, which names the nearest option there is.
fn program_option(
    arg: &str,
    name: &str,
    inline: bool,
    value: &mut impl FnMut(&str) -> Result<String, String>,
    program: &[ArgSpec],
    rest: &mut Vec<String>,
) -> Result<(), String> {
    match program.iter().find(|spec| spec.name == name) {
        Some(spec) => match spec.value {
            Some(what) => {
                let value = value(what)?;
                rest.push(name.to_owned());
                rest.push(value);
            }
            None if inline => return Err(format!("`{name}` takes no value")),
            None => rest.push(arg.to_owned()),
        },
        None if !name.starts_with('-') => return Err(format!("unexpected argument `{name}`; see --help")),
        None => {
            return Err(match closest(name, program) {
                Some(near) => format!("unknown option `{name}`; did you mean `{near}`? (see --help)"),
                None => format!("unknown option `{name}`; see --help"),
            })
        }
    }
    Ok(())
}

/// `--http ADDR`'s command: `options` with the environment's hosts and origins, and the authorization the command
/// line (else the environment) asks for.
fn serve_http(
    addr: std::net::SocketAddr,
    mut options: HttpOptions,
    env: &mut Environment,
    (auth_issuer, auth_resource): (Option<String>, Option<String>),
) -> Result<Command, String> {
    for host in std::mem::take(&mut env.allow_hosts) {
        options = options.allow_host(host);
    }
    for origin in std::mem::take(&mut env.allow_origins) {
        options = options.allow_origin(origin);
    }
    let auth = auth_args(auth_issuer.or(env.auth_issuer.take()), auth_resource.or(env.auth_resource.take()))?;
    Ok(Command::Http(addr, Box::new(options), auth))
}

/// The feature of mcp-runtime an option needs that this program was built without, if any.
fn missing_feature(name: &str) -> Option<&'static str> {
    match name {
        "--http" | "--metrics" | "--allow-host" | "--allow-origin" | "--keep-alive" | "--drain-timeout"
        | "--drain-notice"
            if cfg!(not(feature = "http")) =>
        {
            Some("http")
        }
        "--redis" if cfg!(not(feature = "redis")) => Some("redis"),
        "--auth-issuer" | "--auth-resource" if cfg!(not(feature = "auth")) => Some("auth"),
        _ => None,
    }
}

/// `options` with what an option of the HTTP transport sets (`--allow-host`, `--keep-alive`, ...), and whether
/// `name` is one of them.
fn http_option(
    name: &str,
    value: &mut impl FnMut(&str) -> Result<String, String>,
    options: HttpOptions,
) -> Result<(HttpOptions, bool), String> {
    Ok((
        match name {
            "--allow-host" => options.allow_host(value("mcp.example.com")?),
            "--allow-origin" => options.allow_origin(value("https://app.example.com")?),
            "--json-response" => options.json_response(true),
            "--stateless" => options.stateless(true),
            "--trust-forwarded" => options.trust_forwarded(true),
            "--keep-alive" => options.keep_alive(seconds(name, &value("15")?, 0.01)?),
            "--drain-timeout" => options.drain_timeout(seconds(name, &value("30")?, 0.0)?),
            "--drain-notice" => options.drain_notice(seconds(name, &value("3")?, 0.0)?),
            _ => return Ok((options, false)),
        },
        true,
    ))
}

/// `--auth-issuer` and `--auth-resource` (or their variables): both, or neither.
fn auth_args(issuer: Option<String>, resource: Option<String>) -> Result<Option<AuthArgs>, String> {
    match (issuer, resource) {
        (Some(issuer), Some(resource)) => Ok(Some(AuthArgs { issuer, resource })),
        (None, None) => Ok(None),
        (Some(_), None) => {
            Err("`--auth-issuer` needs `--auth-resource` (or MCP_AUTH_RESOURCE): the URL tokens must be \
                                issued for"
                .into())
        }
        (None, Some(_)) => Err("`--auth-resource` needs `--auth-issuer` (or MCP_AUTH_ISSUER): the OAuth issuer whose \
                                tokens to accept"
            .into()),
    }
}

/// A listening address: `host:port`, or a port alone for 127.0.0.1.
fn address(flag: &str, addr: &str, example: &str) -> Result<std::net::SocketAddr, String> {
    let parsed = match addr.parse::<u16>() {
        Ok(port) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => addr.parse(),
    };
    parsed.map_err(|_| format!("`{flag} {addr}`: not an address like {example}"))
}

/// The "PROGRAM OPTIONS" section of `--help`, empty when the program has none.
pub(super) fn program_usage(program: &[ArgSpec]) -> String {
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
