-- Tenants whose keys are revoked: a tenant listed here is refused with every key, until its key
-- is rotated. A table of its own, so that it is created as idempotently as the first (an added
-- column could not be). The same text serves SQLite and PostgreSQL.
CREATE TABLE IF NOT EXISTS revocations (
    name TEXT PRIMARY KEY REFERENCES tenants (name),
    revoked_at TEXT NOT NULL
);
