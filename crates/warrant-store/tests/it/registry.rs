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

#[test]
fn postgres_a_rotated_key_replaces_the_old_and_a_revoked_tenant_has_none() {
    let conninfo = postgres_conninfo();
    let schema = format!("warrant_registry_test_{}", std::process::id());
    admin(&conninfo).batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
    let result = std::panic::catch_unwind(|| {
        rotation_and_revocation(&mut Registry::connect_postgres(&conninfo, &schema).unwrap());
        assert_eq!(Registry::connect_postgres(&conninfo, &schema).unwrap().names().unwrap(), ["acme", "bolt"]);
    });
    admin(&conninfo).batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
