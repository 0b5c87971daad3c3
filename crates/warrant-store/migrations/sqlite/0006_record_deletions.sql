-- A record deleted by the system of record stays as a tombstone: its revision goes on counting,
-- so a row created again under the same key never comes back at a revision that a decision
-- made against the deleted row could name. Every read skips tombstones; seeding never revives
-- one. migrations/postgres/0006_record_deletions.sql is the same step.
ALTER TABLE records ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1));
