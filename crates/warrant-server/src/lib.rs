//! The HTTP API and the review page. Only this crate knows HTTP types.
