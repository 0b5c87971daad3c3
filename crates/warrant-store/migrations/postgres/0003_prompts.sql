-- The prompt registry: every version of a model task's prompt, and every promotion decided.
-- migrations/sqlite/0003_prompts.sql has the same tables and columns with SQLite's types.
-- Independent of 0002 (guards): it may run before or after it.

CREATE TABLE prompt_versions (
    task    text NOT NULL,
    version text NOT NULL,
    text    text NOT NULL,
    CONSTRAINT prompt_versions_pkey PRIMARY KEY (task, version)
);

CREATE TABLE prompt_promotions (
    seq      bigserial PRIMARY KEY,
    task     text    NOT NULL,
    version  text    NOT NULL,
    accepted boolean NOT NULL,
    report   jsonb   NOT NULL,
    CONSTRAINT prompt_promotions_version_fkey FOREIGN KEY (task, version) REFERENCES prompt_versions (task, version)
);

CREATE INDEX prompt_promotions_task_seq ON prompt_promotions (task, seq);
