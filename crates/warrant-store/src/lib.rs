//! Where warrant keeps what it decided: records with revisions, effects, events, interactions
//! and replay records, in SQLite (the embedded default) or PostgreSQL. Only this crate knows SQL.
