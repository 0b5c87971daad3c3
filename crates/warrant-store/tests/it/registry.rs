//! The tenant registry on both backends: a key rotated replaces the old one at once, a revoked
//! tenant has no key until it is rotated, and the list says which tenants are revoked.

use warrant_store::{Added, Registry, TenantEntry};

use crate::fixture::{admin, postgres_conninfo};

fn rotation_and_revocation(registry: &mut Registry) {
    assert_eq!(registry.add("acme", "aa").unwrap(), Added::Added);
    assert_eq!(registry.add("bolt", "bb").unwrap(), Added::Added);
    assert!(registry.rotate("acme", "cc").unwrap());
    assert_eq!(registry.key_hash("acme").unwrap().as_deref(), Some("cc"), "the rotated hash replaces the old");
    assert!(!registry.rotate("nobody", "dd").unwrap());
    assert_eq!(registry.key_hash("nobody").unwrap(), None);

    assert!(registry.revoke("acme", "2026-11-29T15:00:00Z").unwrap());
    assert!(registry.revoke("acme", "2026-11-30T15:00:00Z").unwrap(), "revoking again is no error");
    assert!(!registry.revoke("nobody", "2026-11-29T15:00:00Z").unwrap());
    assert_eq!(registry.key_hash("acme").unwrap(), None, "a revoked tenant has no key");
    assert_eq!(registry.key_hash("bolt").unwrap().as_deref(), Some("bb"));
    assert_eq!(
        registry.list().unwrap(),
        [
            TenantEntry { name: "acme".into(), revoked_at: Some("2026-11-29T15:00:00Z".into()) },
            TenantEntry { name: "bolt".into(), revoked_at: None },
        ]
    );
    // Rotating gives the revoked tenant a key again.
    assert!(registry.rotate("acme", "ee").unwrap());
    assert_eq!(registry.key_hash("acme").unwrap().as_deref(), Some("ee"));
    assert_eq!(registry.list().unwrap()[0].revoked_at, None);
    assert_eq!(registry.names().unwrap(), ["acme", "bolt"]);
}

#[test]
fn sqlite_a_rotated_key_replaces_the_old_and_a_revoked_tenant_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sqlite");
    rotation_and_revocation(&mut Registry::open_sqlite(&path).unwrap());
    // Opening an existing registry again creates nothing twice.
    assert_eq!(Registry::open_sqlite(&path).unwrap().names().unwrap(), ["acme", "bolt"]);
}

/// A server reads the SQLite registry on the request's own thread, so a read must never wait for
/// a writer: the registry is in WAL mode, where a reader sees the last commit while another
/// connection holds the write lock, and sees the writer's commit as soon as it is made.
#[test]
fn sqlite_a_registry_read_does_not_wait_for_a_writer_and_sees_its_commit_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sqlite");
    let mut registry = Registry::open_sqlite(&path).unwrap();
    assert!(registry.reads_without_waiting());
    assert_eq!(registry.add("acme", "aa").unwrap(), Added::Added);
    let writer = rusqlite::Connection::open(&path).unwrap();
    let mode: String = writer.query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
    writer.execute_batch("BEGIN EXCLUSIVE; UPDATE tenants SET key_hash = 'cc' WHERE name = 'acme'").unwrap();
    // In rollback-journal mode this read would wait out the busy timeout and fail.
    let read = registry.key_hash("acme").unwrap();
    assert_eq!(read.as_deref(), Some("aa"), "the last commit, while the writer holds its lock");
    writer.execute_batch("COMMIT").unwrap();
    assert_eq!(registry.key_hash("acme").unwrap().as_deref(), Some("cc"), "the writer's commit, at once");
}

#[test]
fn postgres_a_rotated_key_replaces_the_old_and_a_revoked_tenant_has_none() {
    let conninfo = postgres_conninfo();
    let schema = format!("warrant_registry_test_{}", std::process::id());
    admin(&conninfo).batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
    let result = std::panic::catch_unwind(|| {
        let mut registry = Registry::connect_postgres(&conninfo, &schema).unwrap();
        assert!(!registry.reads_without_waiting(), "a PostgreSQL read is a round trip");
        rotation_and_revocation(&mut registry);
        assert_eq!(Registry::connect_postgres(&conninfo, &schema).unwrap().names().unwrap(), ["acme", "bolt"]);
    });
    admin(&conninfo).batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
