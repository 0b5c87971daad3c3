//! Integration tests of warrant-contract: the invariants of its source tree.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod graph;
mod module_graph;
