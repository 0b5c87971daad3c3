-- Records, turns, interactions, effects and events. migrations/sqlite/0001_initial.sql has the
-- same tables and columns with SQLite's types; keep the two in step (a conformance test
-- compares them).
--
-- Commits take row locks and short advisory locks only, never a table lock and never
-- SERIALIZABLE, so a later job table whose due rows are taken with FOR UPDATE SKIP LOCKED
-- fits beside these tables without waiting on them.

-- Authoritative rows the deployment owns. Every write names the revision it was decided on.
CREATE TABLE records (
    tbl      text   NOT NULL,
    key      text   NOT NULL,
    revision bigint NOT NULL CHECK (revision >= 1),
    value    jsonb  NOT NULL,
    CONSTRAINT records_pkey PRIMARY KEY (tbl, key)
);

-- One row per committed turn; (conversation, turn) is the turn's idempotency key. Sequence
-- numbers are taken under the commit-order lock, so they follow commit order.
CREATE TABLE turns (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    conversation text  NOT NULL,
    turn         text  NOT NULL,
    request      jsonb NOT NULL,
    response     jsonb NOT NULL,
    replay       jsonb NOT NULL,
    CONSTRAINT turns_pkey PRIMARY KEY (seq),
    CONSTRAINT turns_conversation_turn_key UNIQUE (conversation, turn)
);

CREATE TABLE interactions (
    id            text  NOT NULL,
    conversation  text  NOT NULL,
    turn          text  NOT NULL,
    payload       jsonb NOT NULL,
    options       jsonb NOT NULL,
    state         text  NOT NULL,
    answer_option text,
    answer_turn   text,
    CONSTRAINT interactions_pkey PRIMARY KEY (id),
    CONSTRAINT interactions_state_check CHECK (
        (state = 'open' AND answer_option IS NULL AND answer_turn IS NULL)
        OR (state = 'answered' AND answer_option IS NOT NULL AND answer_turn IS NOT NULL)
    )
);

CREATE TABLE effects (
    id              text  NOT NULL,
    idempotency_key text  NOT NULL,
    conversation    text  NOT NULL,
    turn            text  NOT NULL,
    op              text  NOT NULL,
    payload         jsonb NOT NULL,
    outcome         text,
    CONSTRAINT effects_pkey PRIMARY KEY (id),
    CONSTRAINT effects_idempotency_key_key UNIQUE (idempotency_key),
    CONSTRAINT effects_outcome_check CHECK (outcome IN ('done', 'failed', 'unknown'))
);

CREATE TABLE events (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    id           text  NOT NULL,
    conversation text  NOT NULL,
    kind         text  NOT NULL,
    payload      jsonb NOT NULL,
    effect       text,
    CONSTRAINT events_pkey PRIMARY KEY (seq),
    CONSTRAINT events_id_key UNIQUE (id),
    CONSTRAINT events_effect_fkey FOREIGN KEY (effect) REFERENCES effects (id)
);

-- The outbound gate reads one conversation's events, in order.
CREATE INDEX events_conversation_seq ON events (conversation, seq);
