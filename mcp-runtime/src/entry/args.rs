//! The program's own options, as its `#[mcp::main]` function takes them: what the framework left of the command
//! line (Args), each option declared (ArgSpec), and the type that reads them (FromArgs).

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
    pub(super) rest: Vec<String>,
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
