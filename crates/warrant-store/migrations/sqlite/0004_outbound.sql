-- Delivery: the outbox (every message stored before it is sent) and the scheduler's due jobs.
-- migrations/postgres/0004_outbound.sql has the same tables and columns with PostgreSQL's
-- types; keep the two in step. Independent of 0002 and 0003. Times are milliseconds since the
-- Unix epoch, given by the caller, so that the store reads no clock and tests choose the time.

-- A message the outbound gate cleared, waiting for (or done with) delivery. The idempotency
-- key is unique, so storing the same message twice stores it once, and the receiver gets the
-- same key on every attempt. A row is taken under a lease (`sending`); a lease that expires
-- because its holder died makes the row deliverable again.
CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    conversation    TEXT    NOT NULL,
    path            TEXT    NOT NULL,
    channel         TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    record          TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL UNIQUE,
    state           TEXT    NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_holder    TEXT,
    lease_until     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    sent_at         INTEGER
) STRICT;

CREATE INDEX outbox_deliverable ON outbox (state, next_attempt_at);

-- A follow-up due at a time: the draft request is composed and cleared by the gate when it is
-- taken, and its result is the outbox message it became.
CREATE TABLE due_jobs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    conversation TEXT    NOT NULL,
    due_at       INTEGER NOT NULL,
    draft        TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('pending', 'taken', 'done')),
    lease_holder TEXT,
    lease_until  INTEGER,
    result       TEXT
) STRICT;

CREATE INDEX due_jobs_due ON due_jobs (state, due_at);
