//! warrant-core's modules, and its folders, import one another without a cycle (the check is
//! warrant-contract's, shared: see its `tests/it/graph.rs`).

#[path = "../../../warrant-contract/tests/it/graph.rs"]
mod graph;

use graph::{cycles, folder_edges, module_edges, src};

#[test]
fn warrant_core_modules_have_no_cycle() {
    let edges = module_edges(&src());
    assert!(edges.get("turn").is_some_and(|t| t.contains("outbound")), "the graph reads `use crate::` paths");
    let found = cycles(&edges);
    assert!(found.is_empty(), "warrant-core's modules import each other in a cycle:\n{}", found.join("\n"));
}

#[test]
fn warrant_core_folders_have_no_cycle() {
    let folders = folder_edges(&module_edges(&src()));
    assert!(folders.get("outbound").is_some_and(|t| t.contains("facts")), "modules inside a folder count as it");
    let found = cycles(&folders);
    assert!(found.is_empty(), "warrant-core's folders import each other in a cycle:\n{}", found.join("\n"));
}
