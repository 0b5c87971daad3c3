-- A turn's row (its request, response and replay record, about 3 KB of JSON on the retail
-- example) is over the size past which PostgreSQL compresses a row's largest values as it
-- stores them, so every commit compressed its replay record; with the server's default method
-- (pglz) that was the server's costliest function under load. lz4 compresses several times
-- faster, at a ratio close to pglz's. A server built without lz4 keeps its default, and one
-- older than PostgreSQL 14 (which has no per-column method) is left as it is: the statements
-- are run only where the server lists lz4 among its methods. Values stored before this step
-- keep the method they were stored with; each is read back the same either way.
-- migrations/sqlite/0010_turns_lz4.sql is this step's number on SQLite, where it does nothing.
DO $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)
    ) THEN
        EXECUTE 'ALTER TABLE turns
                     ALTER COLUMN request SET COMPRESSION lz4,
                     ALTER COLUMN response SET COMPRESSION lz4,
                     ALTER COLUMN replay SET COMPRESSION lz4';
    END IF;
END
$$;
