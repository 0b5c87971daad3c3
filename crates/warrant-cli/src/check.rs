//! `warrant check`: the contract loaded with its policies, every row of its data files read and
//! checked (an error names the file, line and column), and a summary of what it loaded; with
//! `--store`, the rows the store holds otherwise than their files have them.

use std::path::Path;

use warrant_core::Contract;
use warrant_core::records::TableSource;
use warrant_engine::Engine;

use crate::Exit;

pub(crate) fn run(path: &Path, store: Option<&str>) -> Result<(), Exit> {
    let (contract, folder) = warrant_engine::load_contract(path).map_err(|e| Exit::Input(e.to_string()))?;
    let tables = warrant_engine::data::read_tables(&contract, &folder).map_err(|e| Exit::Input(e.to_string()))?;
    summary(&contract, &tables);
    if let Some(url) = store {
        crate::signals::hold()?;
        let mut engine = Engine::builder().contract_file(path).open(url).map_err(|e| Exit::Input(e.to_string()))?;
        let differing = engine.data_differences().map_err(|e| Exit::Input(e.to_string()))?;
        let mut count = 0;
        for (table, rows) in &differing {
            for row in rows {
                count += 1;
                match &row.stored {
                    Some(stored) => println!(
                        "differs: table `{table}`, row `{}`: stored at revision {} otherwise than its data file has it",
                        row.key, stored.revision
                    ),
                    None => println!(
                        "differs: table `{table}`, row `{}`: in its data file, deleted from the store",
                        row.key
                    ),
                }
            }
        }
        if count == 0 {
            println!("store: every row of the data files is stored as its file has it");
        } else {
            println!(
                "store: {count} rows differ from their data files and are kept as stored; `warrant records import TABLE FILE` loads the rows of a changed file (JSON lines, `{{\"KEY\": ROW}}` each)"
            );
        }
    }
    Ok(())
}

fn summary(c: &Contract, tables: &[warrant_engine::data::TableData]) {
    println!(
        "{}: {} source kinds, {} scored clauses, {} passive clauses",
        c.origin(),
        c.kinds().len(),
        c.score().clauses().len(),
        c.score().passive().count()
    );
    let rows: usize = tables.iter().map(|t| t.rows.len()).sum();
    println!("{} records tables, {rows} rows, every row checked", tables.len());
    for (table, data) in c.tables().iter().zip(tables) {
        let source = match &table.source {
            TableSource::File(file) => file.clone(),
            TableSource::Nested { table, path, .. } => format!("`{path}` of each `{table}` row"),
        };
        println!("  table `{}`: {} rows from {source}", table.name, data.rows.len());
    }
    let operations: Vec<&str> = c.operations().iter().map(|o| o.name.as_str()).collect();
    println!("{} operations: {}", operations.len(), operations.join(", "));
    if !c.policies().is_empty() {
        let actions = c
            .cedar_schema()
            .get("")
            .and_then(|namespace| namespace.get("actions"))
            .and_then(serde_json::Value::as_object)
            .map_or(0, serde_json::Map::len);
        println!(
            "{} policies, each valid against the Cedar schema of {actions} actions (--cedar-schema prints it)",
            c.policies().len()
        );
    }
    let claims: Vec<&str> = c.outbound().claims().iter().map(|k| k.name.as_str()).collect();
    println!("{} claim kinds: {}", claims.len(), claims.join(", "));
    let paths: Vec<&str> = c.outbound().paths().iter().map(|p| p.name.as_str()).collect();
    println!("{} outbound paths: {}", paths.len(), paths.join(", "));
    match c.guards().announcement() {
        Some(guard) => println!(
            "announcement guard {}: {} sentences over {} tools, declared {:?}",
            guard.version(),
            guard.sentences(),
            guard.tools().len(),
            guard.mode()
        ),
        None => println!("no guards"),
    }
}
