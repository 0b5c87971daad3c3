-- Guards and the ladder: findings (flags a guard raised, and unflagged replies sampled for
-- audit), their audits, and promotions with their demotions. migrations/sqlite/0002_guards.sql
-- has the same tables and columns with SQLite's types; keep the two in step.

-- A finding is written in the same transaction as the turn it was found in (kind `flag`), or
-- later by `warrant guard sample` (kind `sample`). `guard` is what climbs the ladder
-- (`guard:announcement`), `version` the exact version that found it.
CREATE TABLE findings (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    id           text  NOT NULL,
    guard        text  NOT NULL,
    version      text  NOT NULL,
    conversation text  NOT NULL,
    turn         text  NOT NULL,
    kind         text  NOT NULL,
    payload      jsonb NOT NULL,
    at           text  NOT NULL,
    CONSTRAINT findings_pkey PRIMARY KEY (seq),
    CONSTRAINT findings_id_key UNIQUE (id),
    CONSTRAINT findings_kind_check CHECK (kind IN ('flag', 'sample'))
);

CREATE INDEX findings_guard_seq ON findings (guard, seq);

-- A person's label on a finding, at most one per finding: a flag is a true or false positive,
-- a sample is a miss or clean.
CREATE TABLE audits (
    finding text NOT NULL,
    label   text NOT NULL,
    who     text NOT NULL,
    at      text NOT NULL,
    CONSTRAINT audits_pkey PRIMARY KEY (finding),
    CONSTRAINT audits_finding_fkey FOREIGN KEY (finding) REFERENCES findings (id),
    CONSTRAINT audits_label_check
        CHECK (label IN ('true_positive', 'false_positive', 'miss', 'clean'))
);

-- Promotion records. At most one promotion of a subject is active (not demoted); promoting
-- again demotes the one before.
CREATE TABLE promotions (
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    subject        text  NOT NULL,
    version        text  NOT NULL,
    record         jsonb NOT NULL,
    promoted_by    text  NOT NULL,
    promoted_at    text  NOT NULL,
    demoted_by     text,
    demoted_at     text,
    demoted_reason text,
    CONSTRAINT promotions_pkey PRIMARY KEY (seq),
    CONSTRAINT promotions_demotion_check CHECK (
        (demoted_at IS NULL AND demoted_by IS NULL AND demoted_reason IS NULL)
        OR (demoted_at IS NOT NULL AND demoted_by IS NOT NULL AND demoted_reason IS NOT NULL)
    )
);

CREATE UNIQUE INDEX promotions_one_active ON promotions (subject) WHERE demoted_at IS NULL;
