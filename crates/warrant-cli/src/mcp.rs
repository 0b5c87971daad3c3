//! `warrant mcp` (the MCP gateway, glue over warrant-mcp) and `warrant tools` (the contract's
//! operations as tool definitions for function calling).

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
    /// The actor every tool call is decided for (over stdio, never from the model).
    #[arg(long)]
    actor: String,
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
    /// The session (conversation) to resume after a restart; a new one by default. The same
    /// session and JSON-RPC request id give the same turn key, so a call retried after a
    /// restart is answered from the record and performed at most once.
    #[arg(long)]
    session: Option<String>,
    /// The downstream MCP server, started as a child process: the command and its arguments
    /// (everything after this flag).
    #[arg(long, num_args = 1.., allow_hyphen_values = true, required = true)]
    downstream_stdio: Vec<String>,
}

pub(crate) fn run_tools(args: &ToolsArgs) -> Result<(), Exit> {
    let format = warrant_mcp::ToolFormat::parse(&args.format)
        .ok_or_else(|| Exit::Input(format!("`--format {}`: give openai, anthropic or mcp", args.format)))?;
    let contract = load_contract(&args.contract)?;
    let tools = warrant_mcp::tools::render(&warrant_mcp::tools::definitions(&contract), format);
    let text = serde_json::to_string_pretty(&tools).map_err(|e| Exit::Input(e.to_string()))?;
    println!("{text}");
    Ok(())
}

pub(crate) fn run_mcp(args: &McpArgs) -> Result<(), Exit> {
    let options = warrant_mcp::StdioOptions {
        contract: args.contract.clone(),
        store: args.store.clone(),
        actor: args.actor.clone(),
        downstream: args.downstream_stdio.clone(),
        locale: args.locale.clone(),
        time_zone: args.time_zone.clone(),
        user_kind: args.user_kind.clone(),
        elicitation_timeout: Duration::from_secs(args.elicitation_timeout),
        session: args.session.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(warrant_mcp::serve_stdio(options)).map_err(|e| Exit::Input(e.to_string()))
}
