//! The schema as numbered SQL steps, one list per backend. A database records in
//! `schema_version` every step it has run; migrating runs the known steps it has not, in
//! order, in one transaction. Numbers need not be contiguous: steps written on parallel
//! branches (0002 guards, 0003 prompts) are independent of each other, and a database that ran
//! 0003 before 0002 existed runs 0002 when a build that knows it arrives.

use std::collections::BTreeSet;

use crate::error::StoreError;

/// One numbered schema change.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) version: i64,
    pub(crate) sql: &'static str,
}

pub(crate) const SQLITE: &[Step] = &[
    Step { version: 1, sql: include_str!("../migrations/sqlite/0001_initial.sql") },
    Step { version: 2, sql: include_str!("../migrations/sqlite/0002_guards.sql") },
    Step { version: 3, sql: include_str!("../migrations/sqlite/0003_prompts.sql") },
    Step { version: 4, sql: include_str!("../migrations/sqlite/0004_outbound.sql") },
    Step { version: 5, sql: include_str!("../migrations/sqlite/0005_json_as_written.sql") },
    Step { version: 6, sql: include_str!("../migrations/sqlite/0006_record_deletions.sql") },
    Step { version: 7, sql: include_str!("../migrations/sqlite/0007_seeds.sql") },
    Step { version: 8, sql: include_str!("../migrations/sqlite/0008_outcomes.sql") },
    Step { version: 9, sql: include_str!("../migrations/sqlite/0009_effects_by_turn.sql") },
    Step { version: 10, sql: include_str!("../migrations/sqlite/0010_turns_lz4.sql") },
];

pub(crate) const POSTGRES: &[Step] = &[
    Step { version: 1, sql: include_str!("../migrations/postgres/0001_initial.sql") },
    Step { version: 2, sql: include_str!("../migrations/postgres/0002_guards.sql") },
    Step { version: 3, sql: include_str!("../migrations/postgres/0003_prompts.sql") },
    Step { version: 4, sql: include_str!("../migrations/postgres/0004_outbound.sql") },
    Step { version: 5, sql: include_str!("../migrations/postgres/0005_json_as_written.sql") },
    Step { version: 6, sql: include_str!("../migrations/postgres/0006_record_deletions.sql") },
    Step { version: 7, sql: include_str!("../migrations/postgres/0007_seeds.sql") },
    Step { version: 8, sql: include_str!("../migrations/postgres/0008_outcomes.sql") },
    Step { version: 9, sql: include_str!("../migrations/postgres/0009_effects_by_turn.sql") },
    Step { version: 10, sql: include_str!("../migrations/postgres/0010_turns_lz4.sql") },
];

/// The steps a database that has run `applied` still needs, in order. A database that ran a
/// step this build does not know was migrated by a newer build, and this one must not touch it.
pub(crate) fn pending<'s>(steps: &'s [Step], applied: &BTreeSet<i64>) -> Result<Vec<&'s Step>, StoreError> {
    let known: BTreeSet<i64> = steps.iter().map(|s| s.version).collect();
    if let Some(unknown) = applied.iter().find(|v| !known.contains(v)) {
        return Err(StoreError::SchemaTooNew { found: *unknown, known: known.last().copied().unwrap_or(0) });
    }
    Ok(steps.iter().filter(|s| !applied.contains(&s.version)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(steps: &[&Step]) -> Vec<i64> {
        steps.iter().map(|s| s.version).collect()
    }

    #[test]
    fn steps_are_numbered_upwards_and_both_backends_have_the_same() {
        for steps in [SQLITE, POSTGRES] {
            assert!(steps.windows(2).all(|w| w[0].version < w[1].version));
            assert_eq!(steps.first().map(|s| s.version), Some(1));
        }
        let numbers = |steps: &[Step]| steps.iter().map(|s| s.version).collect::<Vec<_>>();
        assert_eq!(numbers(SQLITE), numbers(POSTGRES));
    }

    #[test]
    fn a_database_with_a_step_this_build_does_not_know_is_refused() {
        let applied: BTreeSet<i64> = [1, 99].into();
        assert!(matches!(pending(SQLITE, &applied), Err(StoreError::SchemaTooNew { found: 99, .. })));
        assert_eq!(pending(SQLITE, &BTreeSet::new()).map(|s| s.len()).ok(), Some(SQLITE.len()));
        let all: BTreeSet<i64> = SQLITE.iter().map(|s| s.version).collect();
        assert_eq!(pending(SQLITE, &all).map(|s| s.len()).ok(), Some(0));
    }

    #[test]
    fn a_gap_is_skipped_and_a_step_filled_in_later_runs_later() {
        const GAP: &[Step] = &[Step { version: 1, sql: "" }, Step { version: 3, sql: "" }];
        const FILLED: &[Step] =
            &[Step { version: 1, sql: "" }, Step { version: 2, sql: "" }, Step { version: 3, sql: "" }];
        assert_eq!(versions(&pending(GAP, &[1].into()).unwrap()), [3]);
        // A database that ran 1 and 3 meets a build that also knows 2: 2 runs, nothing else.
        assert_eq!(versions(&pending(FILLED, &[1, 3].into()).unwrap()), [2]);
        // A build that does not know 2 refuses a database that ran it.
        assert!(matches!(pending(GAP, &[1, 2, 3].into()), Err(StoreError::SchemaTooNew { found: 2, .. })));
    }
}
