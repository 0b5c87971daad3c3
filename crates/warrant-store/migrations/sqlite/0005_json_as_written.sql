-- SQLite already keeps JSON as the text warrant wrote (PostgreSQL's step 5 changes jsonb to
-- json for that); the step is here so both backends have the same numbered steps.
SELECT 1;
