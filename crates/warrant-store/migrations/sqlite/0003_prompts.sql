-- The prompt registry: every version of a model task's prompt, and every promotion decided.
-- migrations/postgres/0003_prompts.sql has the same tables and columns with PostgreSQL's types.
-- Independent of 0002 (guards): it may run before or after it.

-- A prompt version is its content hash; the text is kept so that any version can run again.
CREATE TABLE prompt_versions (
    task    TEXT NOT NULL,
    version TEXT NOT NULL,
    text    TEXT NOT NULL,
    CONSTRAINT prompt_versions_pkey PRIMARY KEY (task, version)
) STRICT;

-- A promotion is a recorded act: accepted or refused, with the replay report that decided it.
-- The active version of a task is the one of its latest accepted promotion.
CREATE TABLE prompt_promotions (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    task     TEXT    NOT NULL,
    version  TEXT    NOT NULL,
    accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
    report   TEXT    NOT NULL,
    CONSTRAINT prompt_promotions_version_fkey FOREIGN KEY (task, version) REFERENCES prompt_versions (task, version)
) STRICT;

CREATE INDEX prompt_promotions_task_seq ON prompt_promotions (task, seq);
