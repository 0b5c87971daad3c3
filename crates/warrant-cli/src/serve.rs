//! `warrant serve` and `warrant tenant add`: the HTTP service and its tenants, from the command
//! line. The server itself is warrant-server; this is glue.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::Exit;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    /// Where the tenants live: `sqlite:FOLDER` or `postgres://…[?schema=REGISTRY]`.
    #[arg(long)]
    store: String,
    /// The address to listen on (`127.0.0.1:0` picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Engines (store connections) per tenant; default 4 on PostgreSQL, 1 on SQLite.
    #[arg(long)]
    engines: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TenantCommand {
    /// Adds a tenant and prints its API key, once: only its hash is kept.
    Add {
        /// The tenant's name: lowercase letters, digits and `_`, starting with a letter.
        name: String,
        /// Where the tenants live: `sqlite:FOLDER` or `postgres://…[?schema=REGISTRY]`.
        #[arg(long)]
        store: String,
    },
}

pub(crate) fn run_serve(args: &ServeArgs) -> Result<(), Exit> {
    let mut config = warrant_server::ServeConfig::new(args.contract.clone(), args.store.clone(), args.listen.clone());
    if let Some(engines) = args.engines {
        if engines == 0 {
            return Err(Exit::Input("`--engines` must be at least 1".into()));
        }
        config.engines_per_tenant = engines;
    }
    warrant_server::serve(&config, |addr, model| {
        // Whether a model is configured decides whether any semantic check can pass: say it
        // at start, where whoever starts the server reads it (never the key).
        eprintln!("warrant serve: {model}");
        // The first line of standard output is the address, for whoever started the server.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{addr}");
        let _ = out.flush();
    })
    .map_err(|e| Exit::Input(e.to_string()))
}

pub(crate) fn run_tenant(command: &TenantCommand) -> Result<(), Exit> {
    match command {
        TenantCommand::Add { name, store } => {
            let location = warrant_server::StoreLocation::parse(store).map_err(|e| Exit::Input(e.to_string()))?;
            let key = warrant_server::add_tenant(&location, name).map_err(|e| Exit::Input(e.to_string()))?;
            println!("{key}");
            Ok(())
        }
    }
}
