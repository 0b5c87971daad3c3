//! `warrant mcp` (the MCP gateway, glue over warrant-mcp) and `warrant tools` (the contract's
//! operations as tool definitions for function calling, from `warrant_core::tools`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::{Exit, load_contract};

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    /// `openai`, `anthropic` or `mcp`.
    #[arg(long, default_value = "mcp")]
    format: String,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    /// The store: `sqlite:PATH` or `postgres://…[?schema=NAME]`.
    #[arg(long)]
    store: String,
    /// Over stdio: the actor every tool call is decided for (never from the model).
    #[arg(long, required_unless_present = "listen")]
    actor: Option<String>,
    /// Serve streamable HTTP on this address (`127.0.0.1:0` picks a free port; the endpoint's
    /// URL is printed) instead of stdio.
    #[arg(long, requires = "keys", conflicts_with_all = ["actor", "session"])]
    listen: Option<String>,
    /// Over HTTP: the tenant registry (`sqlite:FOLDER` or `postgres://…`, as `warrant tenant`
    /// keeps it) whose keys open requests; a key's tenant name is the actor.
    #[arg(long)]
    keys: Option<String>,
    /// The turns' locale.
    #[arg(long, default_value = "en-US")]
    locale: String,
    /// The turns' time zone.
    #[arg(long, default_value = "UTC")]
    time_zone: String,
    /// The contract's source kind of the user's words (a text argument's entry).
    #[arg(long, default_value = "user")]
    user_kind: String,
    /// How long an elicitation waits for the user, in seconds.
    #[arg(long, default_value_t = 300)]
    elicitation_timeout: u64,
    /// Over stdio: the session (conversation) to resume after a restart; a new one by default.
    /// The same session, JSON-RPC request id, tool and arguments give the same turn key, so a
    /// call retried after a restart is answered from the record and performed at most once,
    /// and a held call sent again is put to the user again. Over HTTP a client resumes a
    /// session with the `warrant-session` header instead.
    #[arg(long)]
    session: Option<String>,
    /// The downstream MCP server, started as a child process: the command and its arguments
    /// (everything after this flag).
    #[arg(
        long,
        num_args = 1..,
        allow_hyphen_values = true,
        required_unless_present_any = ["downstream_url", "downstreams"]
    )]
    downstream_stdio: Vec<String>,
    /// The downstream MCP server at a streamable HTTP URL instead; `WARRANT_MCP_DOWNSTREAM_TOKEN`,
    /// if set, is sent as its bearer token.
    #[arg(long, conflicts_with = "downstream_stdio")]
    downstream_url: Option<String>,
    /// Several downstream MCP servers instead: a TOML file of `[[downstream]]` tables, each a
    /// `name` and a `command` or a `url` (docs/mcp.md); each operation is one server's tool.
    #[arg(long, conflicts_with_all = ["downstream_stdio", "downstream_url"])]
    downstreams: Option<PathBuf>,
}

pub(crate) fn run_tools(args: &ToolsArgs) -> Result<(), Exit> {
    let format = warrant_core::tools::ToolFormat::parse(&args.format).ok_or_else(|| {
        Exit::Input(format!("`--format {}`: give {}", args.format, warrant_core::tools::ToolFormat::CHOICES))
    })?;
    let contract = load_contract(&args.contract)?;
    let tools = warrant_core::tools::render(&warrant_core::tools::definitions(&contract), format);
    let text = serde_json::to_string_pretty(&tools).map_err(|e| Exit::Input(e.to_string()))?;
    println!("{text}");
    Ok(())
}

pub(crate) fn run_mcp(args: &McpArgs) -> Result<(), Exit> {
    let options = warrant_mcp::Options {
        contract: args.contract.clone(),
        store: args.store.clone(),
        downstreams: downstreams(args)?,
        locale: args.locale.clone(),
        time_zone: args.time_zone.clone(),
        user_kind: args.user_kind.clone(),
        elicitation_timeout: Duration::from_secs(args.elicitation_timeout),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served = serve(&runtime, args, options);
    // Ending the runtime drops what its tasks still hold, the engine among them (its store
    // closed, a SQLite file left whole). A read of standard input still waiting (a session
    // ended by a signal while its client holds the pipe open) cannot be interrupted and would
    // hold a plain drop for ever: it is given this long, and the process then ends without it.
    runtime.shutdown_timeout(STDIN_GRACE);
    served
}

/// The downstreams: the file `--downstreams` names, or the one of the other flags.
fn downstreams(args: &McpArgs) -> Result<Vec<warrant_mcp::DownstreamSpec>, Exit> {
    let Some(path) = &args.downstreams else {
        let at = match &args.downstream_url {
            Some(url) => warrant_mcp::DownstreamAt::Url(url.clone()),
            None => warrant_mcp::DownstreamAt::Command(args.downstream_stdio.clone()),
        };
        return Ok(vec![warrant_mcp::DownstreamSpec::single(at)]);
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| Exit::Input(format!("`--downstreams {}`: {e}", path.display())))?;
    warrant_mcp::downstreams::parse(&text).map_err(|e| Exit::Input(format!("`--downstreams {}`: {e}", path.display())))
}

/// How long the end of `warrant mcp` waits for its blocking threads.
const STDIN_GRACE: Duration = Duration::from_secs(2);

fn serve(runtime: &tokio::runtime::Runtime, args: &McpArgs, options: warrant_mcp::Options) -> Result<(), Exit> {
    let served = match (&args.listen, &args.keys, &args.actor) {
        (Some(listen), Some(keys), _) => runtime.block_on(warrant_mcp::serve_http(options, listen, keys)),
        (_, _, Some(actor)) => {
            let session = warrant_mcp::StdioSession { actor: actor.clone(), session: args.session.clone() };
            runtime.block_on(warrant_mcp::serve_stdio(options, session))
        }
        _ => return Err(Exit::Input("give `--actor` (stdio) or `--listen` with `--keys` (HTTP)".into())),
    };
    served.map_err(|e| Exit::Input(e.to_string()))
}
