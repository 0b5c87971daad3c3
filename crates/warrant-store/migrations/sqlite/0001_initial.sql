-- Records, turns, interactions, effects and events. migrations/postgres/0001_initial.sql has
-- the same tables and columns with PostgreSQL's types; keep the two in step (a conformance test
-- compares them).

-- Authoritative rows the deployment owns. Every write names the revision it was decided on.
CREATE TABLE records (
    tbl      TEXT    NOT NULL,
    key      TEXT    NOT NULL,
    revision INTEGER NOT NULL CHECK (revision >= 1),
    value    TEXT    NOT NULL,
    CONSTRAINT records_pkey PRIMARY KEY (tbl, key)
) STRICT;

-- One row per committed turn; (conversation, turn) is the turn's idempotency key. AUTOINCREMENT
-- keeps sequence numbers from ever being reused.
CREATE TABLE turns (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    turn         TEXT NOT NULL,
    request      TEXT NOT NULL,
    response     TEXT NOT NULL,
    replay       TEXT NOT NULL,
    CONSTRAINT turns_conversation_turn_key UNIQUE (conversation, turn)
) STRICT;

CREATE TABLE interactions (
    id            TEXT NOT NULL,
    conversation  TEXT NOT NULL,
    turn          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    options       TEXT NOT NULL,
    state         TEXT NOT NULL,
    answer_option TEXT,
    answer_turn   TEXT,
    CONSTRAINT interactions_pkey PRIMARY KEY (id),
    CONSTRAINT interactions_state_check CHECK (
        (state = 'open' AND answer_option IS NULL AND answer_turn IS NULL)
        OR (state = 'answered' AND answer_option IS NOT NULL AND answer_turn IS NOT NULL)
    )
) STRICT;

CREATE TABLE effects (
    id              TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    conversation    TEXT NOT NULL,
    turn            TEXT NOT NULL,
    op              TEXT NOT NULL,
    payload         TEXT NOT NULL,
    outcome         TEXT,
    CONSTRAINT effects_pkey PRIMARY KEY (id),
    CONSTRAINT effects_idempotency_key_key UNIQUE (idempotency_key),
    CONSTRAINT effects_outcome_check CHECK (outcome IN ('done', 'failed', 'unknown'))
) STRICT;

CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL,
    conversation TEXT NOT NULL,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    effect       TEXT,
    CONSTRAINT events_id_key UNIQUE (id),
    CONSTRAINT events_effect_fkey FOREIGN KEY (effect) REFERENCES effects (id)
) STRICT;

-- The outbound gate reads one conversation's events, in order.
CREATE INDEX events_conversation_seq ON events (conversation, seq);
