-- What each records table was last seeded from: a mark of its data file (and of how its rows
-- are drawn from it). An engine whose contract names the same mark seeds nothing and reads no
-- data file. migrations/postgres/0007_seeds.sql is the same step.
CREATE TABLE seeds (
    tbl    TEXT NOT NULL PRIMARY KEY,
    source TEXT NOT NULL
) STRICT;
