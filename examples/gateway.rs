//! A gateway: several MCP servers served as one. Each `--upstream NAME=URL` (a server over Streamable HTTP) or
//! `--upstream 'NAME=COMMAND ARGS…'` (a child process over stdio, its arguments split at spaces) is mounted under
//! `NAME`: its tools and prompts served as `NAME_tool`, its resources at their own URIs, every call relayed to it in
//! the era it speaks, whatever the caller's. `--allow GLOB` and `--deny GLOB` (repeatable, `*` and `?`) decide which
//! of the served names are listed and callable. Everything else is `#[mcp::main]`'s: stdio by default, `--http ADDR`,
//! `--allow-host`, authorization, limits.
//!
//! ```text
//! cargo run --example gateway -- --http 127.0.0.1:8080 \
//!     --upstream 'shop=target/debug/examples/bookshop' \
//!     --upstream 'everything=npx -y @modelcontextprotocol/server-everything' \
//!     --deny 'everything_*Long*'
//! ```

use mcp::compose::{Mount, Upstream};

/// The gateway's own options, beside the framework's.
struct Options {
    upstreams: Vec<(String, Upstream)>,
    allow: Vec<String>,
    deny: Vec<String>,
}

/// `NAME=URL` or `NAME=COMMAND ARGS…`.
fn upstream(spec: &str) -> Result<(String, Upstream), String> {
    let Some((name, target)) = spec.split_once('=') else {
        return Err(format!("--upstream {spec:?}: expected NAME=URL or 'NAME=COMMAND ARGS…'"));
    };
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok((name.to_owned(), Upstream::http(target)));
    }
    let mut words = target.split_whitespace();
    let program = words.next().ok_or_else(|| format!("--upstream {spec:?}: no command after `{name}=`"))?;
    Ok((name.to_owned(), Upstream::stdio(program, words)))
}

impl mcp::FromArgs for Options {
    const OPTIONS: &'static [mcp::ArgSpec] = &[
        mcp::ArgSpec::value(
            "--upstream",
            "NAME=TARGET",
            "A server to serve under NAME: a URL, or a command (repeatable)",
        ),
        mcp::ArgSpec::value("--allow", "GLOB", "Serve only the tools and prompts whose names match (repeatable)"),
        mcp::ArgSpec::value("--deny", "GLOB", "Leave out the tools and prompts whose names match (repeatable)"),
    ];

    fn from_args(args: mcp::Args) -> Result<Self, String> {
        let upstreams = args.values("--upstream").into_iter().map(upstream).collect::<Result<Vec<_>, _>>()?;
        if upstreams.is_empty() {
            return Err("a gateway needs at least one --upstream NAME=URL or 'NAME=COMMAND ARGS…'".into());
        }
        let owned = |name| args.values(name).into_iter().map(str::to_owned).collect();
        Ok(Options { upstreams, allow: owned("--allow"), deny: owned("--deny") })
    }
}

#[mcp::main]
async fn main(options: Options) -> mcp::ServerBuilder {
    let mut builder = mcp::Server::builder().instructions("A gateway: each upstream's tools are named after it.");
    for (name, upstream) in options.upstreams {
        // Listed from the start when it is up; else served once it comes up.
        if let Err(e) = upstream.connect().await {
            eprintln!("upstream {name} is not reachable yet ({e}): its tools are listed once it is");
        }
        let mut mount = Mount::new(name, upstream);
        for glob in &options.allow {
            mount = mount.allow(glob.clone());
        }
        for glob in &options.deny {
            mount = mount.deny(glob.clone());
        }
        builder = builder.compose(mount);
    }
    builder
}
