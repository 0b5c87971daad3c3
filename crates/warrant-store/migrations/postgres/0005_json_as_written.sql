-- JSON is kept as the text warrant wrote, not as jsonb: jsonb normalizes numbers (a float
-- written as 3.1181339865760794e18 reads back as the integer 3118133986576079400) and reorders
-- keys, and a replay must read back the very values a decision was made on.
ALTER TABLE records ALTER COLUMN value TYPE json USING value::json;
ALTER TABLE turns ALTER COLUMN request TYPE json USING request::json;
ALTER TABLE turns ALTER COLUMN response TYPE json USING response::json;
ALTER TABLE turns ALTER COLUMN replay TYPE json USING replay::json;
ALTER TABLE interactions ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE interactions ALTER COLUMN options TYPE json USING options::json;
ALTER TABLE effects ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE events ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE findings ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE promotions ALTER COLUMN record TYPE json USING record::json;
ALTER TABLE prompt_promotions ALTER COLUMN report TYPE json USING report::json;
ALTER TABLE outbox ALTER COLUMN body TYPE json USING body::json;
ALTER TABLE outbox ALTER COLUMN record TYPE json USING record::json;
ALTER TABLE due_jobs ALTER COLUMN draft TYPE json USING draft::json;
