//! The `warrant` command line: glue between files, standard streams and the library. Each
//! subcommand validates what the user wrote first, then resolves it against files.
//!
//! Exit status: 0 done, 1 a check failed (a corpus case, a changed replay verdict), 2 bad input
//! or a bad contract, with a one-line message on stderr. A reader that stops reading early
//! (`warrant reasons | head`) ends the process quietly, with status 0. However a command ends
//! (those statuses, a signal, a panic), it ends by returning or unwinding through [`run`], never
//! by `std::process::exit` from inside it, so that every store it opened is dropped and closed,
//! and a SQLite file is left whole (`signals.rs`).

/// Every `println!` of this crate writes through [`stdout_line`], which ends the process quietly
/// when standard output is a closed pipe instead of panicking as the standard macro does. It is
/// defined before the modules so that their `println!` is this one.
macro_rules! println {
    () => {
        $crate::stdout_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdout_line(format_args!($($arg)*))
    };
}

mod check;
mod corpus;
mod demo;
mod engine;
mod guard;
mod mcp;
mod outbound;
mod prompt;
mod records;
mod render;
mod scheduler;
mod score;
mod serve;
mod signals;
mod store;
mod telemetry;
mod turn;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use warrant_core::Contract;

/// `warrant --version`: the package's version and the commit it was built from (`build.rs`):
/// `warrant 0.1.0 (0123456789ab)`, `+dirty` after it when tracked files differed from that
/// commit, `(unknown)` for a build without git.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WARRANT_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(name = "warrant", version = VERSION, about = "The gate between what a language model writes and what a system does")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    trace: telemetry::TraceArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Reads replies through the clause gate and prints one JSON result per reply.
    Score(score::ScoreArgs),
    /// Runs corpus cases (negative controls and positives) against a contract.
    Corpus {
        #[command(subcommand)]
        command: corpus::CorpusCommand,
    },
    /// Runs one turn request (JSON) through the gate against a store; prints the response.
    Turn(turn::TurnArgs),
    /// Records an effect's outcome (`done`, `failed`, `unknown`) as the executor reports it,
    /// with the rows as the system of record left them.
    #[command(name = "effect-outcome")]
    EffectOutcome(turn::OutcomeArgs),
    /// Re-decides every stored turn from its recorded inputs; reports each changed verdict.
    Replay(engine::StoreArgs),
    /// The guards and the ladder: findings, audits, status, samples, promotion, demotion, corpus.
    Guard {
        #[command(subcommand)]
        command: guard::GuardCommand,
    },
    /// Plays scripted retail turns through the gate on a fresh SQLite file, readably.
    Demo(demo::DemoArgs),
    /// Serves the HTTP API and the review page for the tenants of a store.
    Serve(serve::ServeArgs),
    /// Manages the tenants of a store.
    Tenant {
        #[command(subcommand)]
        command: serve::TenantCommand,
    },
    /// The prompt registry of the model tasks: add versions, list them, promote one.
    Prompt {
        #[command(subcommand)]
        command: prompt::PromptCommand,
    },
    /// Checks that a contract loads (its policies validated against the Cedar schema generated
    /// from it) with every row of its data files; prints what it loaded.
    Check {
        /// The contract file.
        #[arg(long)]
        contract: PathBuf,
        /// Prints the Cedar schema generated from the contract (Cedar's JSON schema format),
        /// which every policy was validated against, instead of the summary.
        #[arg(long)]
        cedar_schema: bool,
        /// Also compares the data files with this store (`sqlite:PATH` or `postgres://…`),
        /// seeding the rows it lacks, and reports every row stored otherwise than its file has it.
        #[arg(long)]
        store: Option<String>,
    },
    /// Lists every reason code with what it means.
    Reasons,
    /// Prints the numbered rendering of a text (from `--text` or standard input) as JSON: each
    /// word with the number a pointer's `ptr` counts, and the rendering model tasks are shown.
    Render(render::RenderArgs),
    /// Runs what is due (delivery of the outbox) once or as a daemon; lists the outbox.
    Scheduler {
        #[command(subcommand)]
        command: scheduler::SchedulerCommand,
    },
    /// Runs one outbound request (a draft for a path) through the outbound gate; prints the
    /// cleared message.
    Outbound(outbound::OutboundArgs),
    /// The records as the system of record writes them: get, put, delete and import rows, as
    /// the records routes do.
    Records {
        #[command(subcommand)]
        command: records::RecordsCommand,
    },
    /// Prints the contract's operations that an agent may propose as tool definitions, with an
    /// input schema from their argument kinds (`--format openai|anthropic|mcp`).
    Tools(mcp::ToolsArgs),
    /// The MCP gateway, served over stdio (`--actor`) or streamable HTTP (`--listen`, `--keys`),
    /// in front of a downstream MCP server started over stdio (`--downstream-stdio`) or reached
    /// over streamable HTTP (`--downstream-url`): every tool call a turn, confirmations from the
    /// user by elicitation, what commits forwarded once to the downstream.
    Mcp(mcp::McpArgs),
    /// The store as a whole: a live backup, a check of everything in it, an export of its
    /// ledger and replay records as JSON lines, and its schema's migration.
    Store {
        #[command(subcommand)]
        command: store::StoreCommand,
    },
}

/// A failure that ends the command: the message goes to stderr on one line.
#[derive(Debug)]
pub(crate) enum Exit {
    /// Bad input or a bad contract: exit status 2.
    Input(String),
    /// A check failed: exit status 1 (the details are already printed).
    Failed,
    /// Exit with this status; the answer is already printed.
    Quiet(u8),
    /// A signal (its number) stopped a long command before its end: exit status 128 + it.
    Signalled(i32),
}

/// Unwinds the main thread to `main`, which exits with this status: how a closed standard output
/// ends the process without skipping the drops that close its stores.
struct QuietEnd(u8);

impl From<std::io::Error> for Exit {
    fn from(error: std::io::Error) -> Exit {
        // Only standard output is written as a pipe: its reader went away, nothing failed.
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return Exit::Quiet(0);
        }
        Exit::Input(format!("i/o error: {error}"))
    }
}

/// Writes one line to standard output. A reader that has gone away ends the process quietly
/// (status 0: whatever was asked was done, only its answer was not read to the end); any other
/// failure to write is said on stderr, status 2.
pub(crate) fn stdout_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    let status = match written {
        Ok(()) => return,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(error) => {
            eprintln!("warrant: cannot write to standard output: {error}");
            2
        }
    };
    drop(out);
    if std::thread::current().name() == Some("main") {
        // Caught in `main`; unwinding drops (and so closes) every store on the way.
        std::panic::resume_unwind(Box::new(QuietEnd(status)));
    }
    std::process::exit(i32::from(status));
}

/// Reads and checks a contract file with its companion files.
pub(crate) fn load_contract(path: &Path) -> Result<Contract, Exit> {
    warrant_engine::load_contract(path).map(|(contract, _)| contract).map_err(|e| Exit::Input(e.to_string()))
}

/// Runs the command line on `args` (the program's name first, as `std::env::args_os` gives
/// them) and returns the status the process exits with: what `warrant` does, for the binary
/// (`src/bin/warrant.rs`) and for the Python package's `warrant` console script, which calls
/// this inside its native module. Run it on a thread named `main` with the stack a main thread
/// has: `stdout_line` unwinds only that thread to here (any other it ends with
/// `std::process::exit`), and a contract's expressions are parsed recursively.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // `--help` and `--version` (status 0, on stdout) or a usage error (status 2, on stderr).
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(cli))) {
        Ok(result) => result,
        Err(payload) => match payload.downcast::<QuietEnd>() {
            Ok(end) => return end.0,
            // A panic, already told on stderr by the hook, every store dropped on the way here:
            // the status an unwinding `main` exits with.
            Err(_) => return 101,
        },
    };
    match result {
        Ok(()) => 0,
        Err(Exit::Failed) => 1,
        Err(Exit::Quiet(code)) => code,
        Err(Exit::Signalled(signal)) => {
            eprintln!("warrant: stopped by signal {signal}");
            u8::try_from(128 + signal).unwrap_or(u8::MAX)
        }
        Err(Exit::Input(message)) => {
            eprintln!("warrant: {}", message.replace('\n', " "));
            2
        }
    }
}

/// Runs the command; every store it opens is closed by the time this returns or unwinds.
fn execute(cli: Cli) -> Result<(), Exit> {
    // Only the commands that trace start an exporter; it is flushed when `_flush` drops.
    let _flush = match cli.command {
        Command::Turn(_) | Command::Serve(_) | Command::Scheduler { .. } => Some(telemetry::start(&cli.trace)?),
        _ => None,
    };
    match cli.command {
        Command::Score(args) => score::run(&args),
        Command::Corpus { command } => corpus::run(&command),
        Command::Turn(args) => turn::run_turn(&args),
        Command::EffectOutcome(args) => turn::run_outcome(&args),
        Command::Replay(args) => turn::run_replay(&args),
        Command::Guard { command } => guard::run(&command),
        Command::Demo(args) => demo::run(&args),
        Command::Serve(args) => serve::run_serve(&args),
        Command::Tenant { command } => serve::run_tenant(&command),
        Command::Prompt { command } => prompt::run(&command),
        Command::Check { contract, cedar_schema: true, .. } => load_contract(&contract).and_then(|c| {
            let schema = serde_json::to_string_pretty(c.cedar_schema())
                .map_err(|e| Exit::Input(format!("the schema cannot be written: {e}")))?;
            println!("{schema}");
            Ok(())
        }),
        Command::Check { contract, cedar_schema: false, store } => check::run(&contract, store.as_deref()),
        Command::Scheduler { command } => scheduler::run(&command),
        Command::Outbound(args) => outbound::run(&args),
        Command::Records { command } => records::run(&command),
        Command::Render(args) => render::run(&args),
        Command::Tools(args) => mcp::run_tools(&args),
        Command::Mcp(args) => mcp::run_mcp(&args),
        Command::Store { command } => store::run(&command),
        Command::Reasons => {
            for code in warrant_core::ReasonCode::ALL {
                println!("{}\n    {}\n", code.as_str(), code.description().replace('\n', "\n    "));
            }
            Ok(())
        }
    }
}
