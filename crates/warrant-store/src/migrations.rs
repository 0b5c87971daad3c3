//! The schema as numbered SQL steps, one list per backend. A database records in
//! `schema_version` the steps it has run; migrating runs the rest, in order, in one
//! transaction.

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
];

pub(crate) const POSTGRES: &[Step] = &[
    Step { version: 1, sql: include_str!("../migrations/postgres/0001_initial.sql") },
    Step { version: 2, sql: include_str!("../migrations/postgres/0002_guards.sql") },
];

/// The steps a database at version `current` still needs. A database at a version this build
/// does not know was migrated by a newer build, and this one must not touch it.
pub(crate) fn pending(steps: &'static [Step], current: i64) -> Result<&'static [Step], StoreError> {
    let known = steps.last().map_or(0, |s| s.version);
    if current > known {
        return Err(StoreError::SchemaTooNew { found: current, known });
    }
    let done = steps.iter().take_while(|s| s.version <= current).count();
    Ok(steps.get(done..).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_numbered_from_one_without_gaps_and_both_backends_have_the_same() {
        for steps in [SQLITE, POSTGRES] {
            for (i, step) in steps.iter().enumerate() {
                assert_eq!(step.version, i as i64 + 1);
            }
        }
        assert_eq!(SQLITE.len(), POSTGRES.len());
    }

    #[test]
    fn a_database_newer_than_the_build_is_refused() {
        assert!(matches!(pending(SQLITE, 99), Err(StoreError::SchemaTooNew { found: 99, .. })));
        assert_eq!(pending(SQLITE, 0).map(<[Step]>::len).ok(), Some(SQLITE.len()));
        assert_eq!(pending(SQLITE, SQLITE.len() as i64).map(<[Step]>::len).ok(), Some(0));
    }
}
