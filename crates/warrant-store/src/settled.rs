//! What a backend does with its transaction once a write's steps are done: the one answer
//! every write of the store (a commit, a record write, an audit, an enqueue) ends with.

/// What the backend does with the transaction once the steps are done.
#[derive(Debug)]
pub(crate) enum Settled<T> {
    /// Commit it, and answer `T`.
    Keep(T),
    /// Roll it back, and answer `T`.
    Discard(T),
}
