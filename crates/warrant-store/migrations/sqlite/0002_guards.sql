-- Guards and the ladder: findings (flags a guard raised, and unflagged replies sampled for
-- audit), their audits, and promotions with their demotions. migrations/postgres/0002_guards.sql
-- has the same tables and columns with PostgreSQL's types; keep the two in step.

-- A finding is written in the same transaction as the turn it was found in (kind `flag`), or
-- later by `warrant guard sample` (kind `sample`). `guard` is what climbs the ladder
-- (`guard:announcement`), `version` the exact version that found it.
CREATE TABLE findings (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL,
    guard        TEXT NOT NULL,
    version      TEXT NOT NULL,
    conversation TEXT NOT NULL,
    turn         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    at           TEXT NOT NULL,
    CONSTRAINT findings_id_key UNIQUE (id),
    CONSTRAINT findings_kind_check CHECK (kind IN ('flag', 'sample'))
) STRICT;

CREATE INDEX findings_guard_seq ON findings (guard, seq);

-- A person's label on a finding, at most one per finding: a flag is a true or false positive,
-- a sample is a miss or clean.
CREATE TABLE audits (
    finding TEXT NOT NULL,
    label   TEXT NOT NULL,
    who     TEXT NOT NULL,
    at      TEXT NOT NULL,
    CONSTRAINT audits_pkey PRIMARY KEY (finding),
    CONSTRAINT audits_finding_fkey FOREIGN KEY (finding) REFERENCES findings (id),
    CONSTRAINT audits_label_check
        CHECK (label IN ('true_positive', 'false_positive', 'miss', 'clean'))
) STRICT;

-- Promotion records. At most one promotion of a subject is active (not demoted); promoting
-- again demotes the one before.
CREATE TABLE promotions (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject        TEXT NOT NULL,
    version        TEXT NOT NULL,
    record         TEXT NOT NULL,
    promoted_by    TEXT NOT NULL,
    promoted_at    TEXT NOT NULL,
    demoted_by     TEXT,
    demoted_at     TEXT,
    demoted_reason TEXT,
    CONSTRAINT promotions_demotion_check CHECK (
        (demoted_at IS NULL AND demoted_by IS NULL AND demoted_reason IS NULL)
        OR (demoted_at IS NOT NULL AND demoted_by IS NOT NULL AND demoted_reason IS NOT NULL)
    )
) STRICT;

CREATE UNIQUE INDEX promotions_one_active ON promotions (subject) WHERE demoted_at IS NULL;
