//! Runs a turn: the pure decisions of warrant-core, the facts of warrant-store and the answers
//! of warrant-model, in the order DESIGN.md §3 gives.
