-- The tenant registry of warrant-server: one row per tenant, with the SHA-256 of its API key
-- (hex). The key itself is never stored. The same text serves SQLite and PostgreSQL.
CREATE TABLE IF NOT EXISTS tenants (
    name TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE
);
