-- What an executor reported with an effect's outcome: the rows as the system of record left
-- them and the fields where they differ from what the effect's steps predicted (NULL until an
-- outcome is reported, and for one reported without rows). An effect of an operation without
-- effect steps holds the rows it names (`effect_holds`) until its outcome is `done` or
-- `failed`. migrations/postgres/0008_outcomes.sql is the same step.
ALTER TABLE effects ADD COLUMN report TEXT;

CREATE TABLE effect_holds (
    tbl    TEXT NOT NULL,
    key    TEXT NOT NULL,
    effect TEXT NOT NULL,
    CONSTRAINT effect_holds_pkey PRIMARY KEY (tbl, key, effect),
    CONSTRAINT effect_holds_effect_fkey FOREIGN KEY (effect) REFERENCES effects (id)
) STRICT;
