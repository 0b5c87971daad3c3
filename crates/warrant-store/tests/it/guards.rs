//! What the ladder keeps, on both backends: findings written with their turn, audits given
//! once, samples added once, promotions superseded and demoted.

use serde_json::json;
use warrant_store::{AuditResult, CommitOutcome, Demotion, FindingKind, StoreError};

use crate::build::{audit, commit, finding, promotion, sample, write};
use crate::fixture::Fixture;

pub fn a_commit_stores_its_findings_with_the_turn(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.findings.push(finding("f1", &c));
    c.findings.push(finding("f2", &c));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    let found = fx.open().findings("guard:announcement").unwrap();
    let ids: Vec<&str> = found.iter().map(|f| f.finding.id.as_str()).collect();
    assert_eq!(ids, ["f1", "f2"]);
    assert!(found[0].finding.seq < found[1].finding.seq);
    let mut expected = c.findings[0].clone();
    expected.seq = found[0].finding.seq;
    assert_eq!(found[0].finding, expected);
    assert_eq!(found[0].audit, None);
    assert!(store.findings("guard:other").unwrap().is_empty());
}

pub fn a_rolled_back_commit_stores_no_findings(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W0404", 1, json!({})));
    c.findings.push(finding("f1", &c));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::StaleRevision { .. }));
    assert!(store.findings("guard:announcement").unwrap().is_empty());
    // A finding id taken by an earlier turn is an error, and the later turn is not stored.
    let mut first = commit("c1", "t2");
    first.findings.push(finding("f1", &first));
    assert!(matches!(store.commit(&first).unwrap(), CommitOutcome::Committed { .. }));
    let mut second = commit("c1", "t3");
    second.findings.push(finding("f1", &second));
    assert!(matches!(store.commit(&second), Err(StoreError::IdTaken { kind: "finding", .. })));
    assert_eq!(store.turn("c1", "t3").unwrap(), None);
}

pub fn a_finding_is_audited_once_with_a_label_that_fits_its_kind(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.findings.push(finding("f1", &c));
    store.commit(&c).unwrap();
    store.add_samples(&[sample("s1", &c)]).unwrap();
    assert_eq!(store.audit(&audit("nope", "true_positive")).unwrap(), AuditResult::UnknownFinding);
    assert_eq!(store.audit(&audit("f1", "miss")).unwrap(), AuditResult::LabelDoesNotFit { kind: FindingKind::Flag });
    assert_eq!(
        store.audit(&audit("s1", "false_positive")).unwrap(),
        AuditResult::LabelDoesNotFit { kind: FindingKind::Sample }
    );
    assert_eq!(store.audit(&audit("f1", "false_positive")).unwrap(), AuditResult::Recorded);
    assert_eq!(
        store.audit(&audit("f1", "true_positive")).unwrap(),
        AuditResult::AlreadyAudited { label: "false_positive".to_owned() }
    );
    assert_eq!(store.audit(&audit("s1", "miss")).unwrap(), AuditResult::Recorded);
    let found = fx.open().findings("guard:announcement").unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].audit, Some(audit("f1", "false_positive")));
    assert_eq!(found[1].audit, Some(audit("s1", "miss")));
    assert_eq!(found[1].finding.kind, FindingKind::Sample);
}

pub fn sampling_the_same_reply_twice_adds_it_once(fx: &Fixture) {
    let mut store = fx.open();
    let c = commit("c1", "t1");
    store.commit(&c).unwrap();
    assert_eq!(store.add_samples(&[sample("s1", &c), sample("s2", &c)]).unwrap(), 2);
    assert_eq!(store.add_samples(&[sample("s1", &c), sample("s3", &c)]).unwrap(), 1);
    assert_eq!(store.findings("guard:announcement").unwrap().len(), 3);
}

pub fn a_promotion_supersedes_the_active_one_and_a_demotion_leaves_none(fx: &Fixture) {
    let mut store = fx.open();
    assert_eq!(store.promotion("guard:announcement").unwrap(), None);
    let first = store.promote(&promotion("v1")).unwrap();
    let active = store.promotion("guard:announcement").unwrap().unwrap();
    assert_eq!((active.seq, active.version.as_str()), (first, "v1"));
    assert_eq!(active.record, promotion("v1").record);
    let second = store.promote(&promotion("v2")).unwrap();
    assert!(second > first);
    assert_eq!(fx.open().promotion("guard:announcement").unwrap().map(|p| p.version), Some("v2".to_owned()));
    let demotion = Demotion { who: "bo".into(), at: "2026-12-01T00:00:00Z".into(), reason: "shapes changed".into() };
    assert_eq!(store.demote("guard:announcement", &demotion).unwrap(), 1);
    assert_eq!(store.promotion("guard:announcement").unwrap(), None);
    assert_eq!(store.demote("guard:announcement", &demotion).unwrap(), 0);
}

pub fn ladder_input_with_nul_is_refused(fx: &Fixture) {
    let mut store = fx.open();
    let c = commit("c1", "t1");
    let mut bad = finding("f\0", &c);
    assert!(matches!(store.add_samples(std::slice::from_ref(&bad)), Err(StoreError::NulCharacter { .. })));
    bad.id = "f1".into();
    bad.payload = json!({"text": "a\u{0}"});
    let mut with = commit("c1", "t1");
    with.findings.push(bad);
    assert!(matches!(store.commit(&with), Err(StoreError::NulCharacter { .. })));
    assert!(matches!(store.audit(&audit("f1", "a\0")), Err(StoreError::NulCharacter { .. })));
    let mut p = promotion("v1");
    p.promoted_by = "\0".into();
    assert!(matches!(store.promote(&p), Err(StoreError::NulCharacter { .. })));
    assert_eq!(store.promotion("guard:\0").unwrap(), None);
    assert!(store.findings("guard:\0").unwrap().is_empty());
}
