-- Delivery: the outbox (every message stored before it is sent) and the scheduler's due jobs.
-- migrations/sqlite/0004_outbound.sql has the same tables and columns with SQLite's types and
-- explains them; keep the two in step. Times are milliseconds since the Unix epoch.

CREATE TABLE outbox (
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    id              text   NOT NULL,
    conversation    text   NOT NULL,
    path            text   NOT NULL,
    channel         text   NOT NULL,
    body            jsonb  NOT NULL,
    record          jsonb  NOT NULL,
    idempotency_key text   NOT NULL,
    state           text   NOT NULL,
    attempts        bigint NOT NULL DEFAULT 0,
    next_attempt_at bigint NOT NULL,
    lease_holder    text,
    lease_until     bigint,
    last_error      text,
    created_at      bigint NOT NULL,
    sent_at         bigint,
    CONSTRAINT outbox_pkey PRIMARY KEY (seq),
    CONSTRAINT outbox_id_key UNIQUE (id),
    CONSTRAINT outbox_idempotency_key_key UNIQUE (idempotency_key),
    CONSTRAINT outbox_state_check CHECK (state IN ('queued', 'sending', 'sent', 'dead'))
);

CREATE INDEX outbox_deliverable ON outbox (state, next_attempt_at);

CREATE TABLE due_jobs (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    id           text   NOT NULL,
    conversation text   NOT NULL,
    due_at       bigint NOT NULL,
    draft        jsonb  NOT NULL,
    state        text   NOT NULL,
    lease_holder text,
    lease_until  bigint,
    result       text,
    CONSTRAINT due_jobs_pkey PRIMARY KEY (seq),
    CONSTRAINT due_jobs_id_key UNIQUE (id),
    CONSTRAINT due_jobs_state_check CHECK (state IN ('pending', 'taken', 'done'))
);

CREATE INDEX due_jobs_due ON due_jobs (state, due_at);
