-- SQLite stores a value as it is given: it compresses nothing, so this step, which moves
-- PostgreSQL's compression of a turn's JSON to lz4 (migrations/postgres/0010_turns_lz4.sql),
-- changes nothing here. It keeps the two backends' steps numbered alike.
SELECT 1;
