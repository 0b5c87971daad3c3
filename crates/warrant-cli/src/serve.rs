//! `warrant serve` and `warrant tenant add|list|rotate|revoke`: the HTTP service and its
//! tenants, from the command line. The server itself is warrant-server; this is glue. The
//! server logs one line per request on stderr; standard output has the address alone.

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
    /// Engines (store connections) per tenant (default 4).
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
    /// Lists the tenants, one JSON object per line, with whether each is revoked.
    List {
        /// Where the tenants live: `sqlite:FOLDER` or `postgres://…[?schema=REGISTRY]`.
        #[arg(long)]
        store: String,
    },
    /// Gives a tenant a new API key and prints it, once; the old key stops working at once
    /// (a revoked tenant gets a working key again).
    Rotate {
        /// The tenant's name.
        name: String,
        /// Where the tenants live: `sqlite:FOLDER` or `postgres://…[?schema=REGISTRY]`.
        #[arg(long)]
        store: String,
    },
    /// Revokes a tenant: every key of it is refused until it is rotated.
    Revoke {
        /// The tenant's name.
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
    config.telemetry = crate::telemetry::get();
    // One line per request and the server's warnings, on stderr: standard output has the
    // address alone, for whoever started the server.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .try_init();
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
    crate::signals::hold()?;
    let input = |e: warrant_server::ServerError| Exit::Input(e.to_string());
    let location = |store: &str| warrant_server::StoreLocation::parse(store).map_err(input);
    match command {
        TenantCommand::Add { name, store } => {
            let key = warrant_server::add_tenant(&location(store)?, name).map_err(input)?;
            println!("{key}");
        }
        TenantCommand::List { store } => {
            for tenant in warrant_server::list_tenants(&location(store)?).map_err(input)? {
                let line = match tenant.revoked_at {
                    None => serde_json::json!({"tenant": tenant.name, "state": "active"}),
                    Some(at) => serde_json::json!({"tenant": tenant.name, "state": "revoked", "revoked_at": at}),
                };
                println!("{line}");
            }
        }
        TenantCommand::Rotate { name, store } => {
            let key = warrant_server::rotate_key(&location(store)?, name).map_err(input)?;
            println!("{key}");
        }
        TenantCommand::Revoke { name, store } => {
            let at = jiff::Timestamp::now().to_string();
            warrant_server::revoke_tenant(&location(store)?, name, &at).map_err(input)?;
            println!("{}", serde_json::json!({"tenant": name, "state": "revoked", "revoked_at": at}));
        }
    }
    Ok(())
}
