//! A program that registers nothing (what a user gets when the linker dropped a library's tools), with options of
//! its own: `--db PATH` and `--verbose`, which it reports on stderr as `OPTIONS db=... verbose=...`.

/// The program's options.
struct Options {
    db: String,
    verbose: bool,
}

impl mcp::FromArgs for Options {
    const OPTIONS: &'static [mcp::ArgSpec] = &[
        mcp::ArgSpec::value("--db", "PATH", "The database file (default notes.db)"),
        mcp::ArgSpec::flag("--verbose", "Say more"),
    ];

    fn from_args(args: mcp::Args) -> Result<Self, String> {
        let db = args.value("--db").unwrap_or("notes.db");
        if db.is_empty() {
            return Err("`--db` needs a file name".into());
        }
        Ok(Options { db: db.to_owned(), verbose: args.flag("--verbose") })
    }
}

#[mcp::main]
async fn main(options: Options) {
    eprintln!("OPTIONS db={} verbose={}", options.db, options.verbose);
}
