//! warrant-contract's modules, and its folders, import one another without a cycle.

use crate::graph::{cycles, folder_edges, module_edges, src};

#[test]
fn warrant_contract_modules_have_no_cycle() {
    let edges = module_edges(&src());
    assert!(edges.get("contract").is_some_and(|t| t.contains("score")), "the graph reads `use crate::` paths");
    let found = cycles(&edges);
    assert!(found.is_empty(), "warrant-contract's modules import each other in a cycle:\n{}", found.join("\n"));
}

#[test]
fn warrant_contract_folders_have_no_cycle() {
    let folders = folder_edges(&module_edges(&src()));
    assert!(folders.get("request").is_some_and(|t| t.contains("reason")), "modules inside a folder count as it");
    let found = cycles(&folders);
    assert!(found.is_empty(), "warrant-contract's folders import each other in a cycle:\n{}", found.join("\n"));
}
