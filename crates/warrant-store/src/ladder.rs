//! What the ladder keeps: findings (flags raised in a turn, and unflagged replies sampled for
//! audit), their audits, and promotions with their demotions. As in `txn.rs`, the steps of each
//! write and their decisions are written once here; a backend only performs the steps.

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::settled::Settled;
use crate::storable;

/// Whether a finding is a guard's flag or a sample of replies it did not flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A guard flagged it.
    Flag,
    /// Sampled from unflagged replies, so that misses are measured too.
    Sample,
}

impl FindingKind {
    /// The kind as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            FindingKind::Flag => "flag",
            FindingKind::Sample => "sample",
        }
    }

    pub(crate) fn parse(id: &str, text: &str) -> Result<FindingKind, StoreError> {
        match text {
            "flag" => Ok(FindingKind::Flag),
            "sample" => Ok(FindingKind::Sample),
            other => Err(StoreError::Corrupt { what: format!("finding `{id}` has the kind `{other}`") }),
        }
    }

    /// The labels an audit of this kind may give.
    pub const fn labels(self) -> [&'static str; 2] {
        match self {
            FindingKind::Flag => ["true_positive", "false_positive"],
            FindingKind::Sample => ["miss", "clean"],
        }
    }
}

/// A finding as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingRow {
    /// Its position in the order findings were stored, assigned by the store.
    pub seq: i64,
    /// Unique across findings, chosen by the caller.
    pub id: String,
    /// What found it, as it climbs the ladder (`guard:announcement`).
    pub guard: String,
    /// The exact version that found it.
    pub version: String,
    /// The conversation of the turn it was found in.
    pub conversation: String,
    /// The turn it was found in.
    pub turn: String,
    /// A flag or a sample.
    pub kind: FindingKind,
    /// What was found, as the guard records it.
    pub payload: serde_json::Value,
    /// When (RFC 3339): the turn's instant for a flag, the sampling clock for a sample.
    pub at: String,
}

/// A person's label on a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    /// The finding labelled.
    pub finding: String,
    /// `true_positive` or `false_positive` for a flag, `miss` or `clean` for a sample.
    pub label: String,
    /// Who labelled it.
    pub who: String,
    /// When (RFC 3339), from the caller's clock.
    pub at: String,
}

/// A finding with its audit, if it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditedFinding {
    /// The finding.
    pub finding: FindingRow,
    /// Its audit, once labelled.
    pub audit: Option<AuditRow>,
}

/// What became of an audit. Every variant but `Recorded` wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AuditResult {
    /// The label was stored.
    Recorded,
    /// No finding has that id.
    UnknownFinding,
    /// The finding was audited before; `label` is the label stored.
    AlreadyAudited {
        /// The label stored.
        label: String,
    },
    /// The label does not fit the finding's kind.
    LabelDoesNotFit {
        /// The finding's kind, whose labels it is not.
        kind: FindingKind,
    },
}

/// A demotion: who took authority away, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Demotion {
    /// Who demoted it.
    pub who: String,
    /// When (RFC 3339), from the caller's clock.
    pub at: String,
    /// Why, in words.
    pub reason: String,
}

/// A promotion record as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotionRow {
    /// Assigned by the store.
    pub seq: i64,
    /// What is promoted (`guard:announcement`).
    pub subject: String,
    /// The exact version promoted.
    pub version: String,
    /// Everything it was decided on.
    pub record: serde_json::Value,
    /// Who promoted it.
    pub promoted_by: String,
    /// When (RFC 3339), from the caller's clock.
    pub promoted_at: String,
    /// Set once it is demoted; an active promotion has none.
    pub demoted: Option<Demotion>,
}

/// The ladder of a store: findings and their audits, promotions and demotions.
pub trait LadderStore: Send {
    /// The findings of `guard` (every version), in the order they were stored, each with its
    /// audit.
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError>;

    /// Stores sampled findings whose id is not stored yet, in one transaction; how many were
    /// new. Sampling the same reply twice is a no-op.
    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError>;

    /// Labels a finding, once.
    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError>;

    /// Stores an active promotion, demoting the active one of the same subject in the same
    /// transaction; answers its sequence number.
    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError>;

    /// The active promotion of `subject`, if any.
    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError>;

    /// Demotes the active promotion of `subject`; how many were demoted (0 or 1).
    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError>;
}

/// The steps of the ladder's writes, as one backend performs them inside one open transaction.
/// The rules (a label fits its finding's kind, a finding is audited once, a promotion
/// supersedes the active one of its subject) are the functions below, written once.
pub(crate) trait LadderTxn {
    /// Inserts the finding unless its id is stored; whether it did.
    fn insert_finding(&mut self, finding: &FindingRow) -> Result<bool, StoreError>;
    /// The finding's kind, `None` when there is no such finding.
    fn finding_kind(&mut self, id: &str) -> Result<Option<FindingKind>, StoreError>;
    /// The label of the finding's audit, if it has one.
    fn audit_label(&mut self, id: &str) -> Result<Option<String>, StoreError>;
    /// Inserts the audit of a finding that has none.
    fn insert_audit(&mut self, audit: &AuditRow) -> Result<(), StoreError>;
    /// Demotes the active promotion of `subject`, if any; how many it demoted.
    fn demote_active(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError>;
    /// Inserts an active promotion and answers its sequence number.
    fn insert_promotion(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError>;
}

/// Stores the samples not stored yet; how many were new.
pub(crate) fn add_samples(tx: &mut impl LadderTxn, samples: &[FindingRow]) -> Result<usize, StoreError> {
    let mut added = 0;
    for sample in samples {
        if tx.insert_finding(sample)? {
            added += 1;
        }
    }
    Ok(added)
}

/// Labels a finding once, with a label its kind allows.
pub(crate) fn audit(tx: &mut impl LadderTxn, audit: &AuditRow) -> Result<Settled<AuditResult>, StoreError> {
    let Some(kind) = tx.finding_kind(&audit.finding)? else {
        return Ok(Settled::Discard(AuditResult::UnknownFinding));
    };
    if !kind.labels().contains(&audit.label.as_str()) {
        return Ok(Settled::Discard(AuditResult::LabelDoesNotFit { kind }));
    }
    if let Some(label) = tx.audit_label(&audit.finding)? {
        return Ok(Settled::Discard(AuditResult::AlreadyAudited { label }));
    }
    tx.insert_audit(audit)?;
    Ok(Settled::Keep(AuditResult::Recorded))
}

/// A new promotion supersedes the active one of the same subject, which is demoted first.
pub(crate) fn promote(tx: &mut impl LadderTxn, promotion: &PromotionRow) -> Result<Settled<i64>, StoreError> {
    let superseded = Demotion {
        who: promotion.promoted_by.clone(),
        at: promotion.promoted_at.clone(),
        reason: format!("superseded by the promotion of version `{}`", promotion.version),
    };
    tx.demote_active(&promotion.subject, &superseded)?;
    Ok(Settled::Keep(tx.insert_promotion(promotion)?))
}

/// Ends the active promotion of `subject`, if it has one; how many it ended (0 or 1).
pub(crate) fn demote(tx: &mut impl LadderTxn, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
    tx.demote_active(subject, demotion)
}

pub(crate) fn check_finding(at: impl Fn() -> String, finding: &FindingRow) -> Result<(), StoreError> {
    for (name, value) in [
        ("id", &finding.id),
        ("guard", &finding.guard),
        ("version", &finding.version),
        ("conversation", &finding.conversation),
        ("turn", &finding.turn),
        ("at", &finding.at),
    ] {
        storable::text(|| format!("`{}.{name}`", at()), value)?;
    }
    storable::json(|| format!("`{}.payload`", at()), &finding.payload)
}

pub(crate) fn check_audit(audit: &AuditRow) -> Result<(), StoreError> {
    for (name, value) in [("finding", &audit.finding), ("label", &audit.label), ("who", &audit.who), ("at", &audit.at)]
    {
        storable::text(|| format!("`{name}`"), value)?;
    }
    Ok(())
}

pub(crate) fn check_promotion(promotion: &PromotionRow) -> Result<(), StoreError> {
    for (name, value) in [
        ("subject", &promotion.subject),
        ("version", &promotion.version),
        ("promoted_by", &promotion.promoted_by),
        ("promoted_at", &promotion.promoted_at),
    ] {
        storable::text(|| format!("`{name}`"), value)?;
    }
    storable::json(|| "`record`".to_owned(), &promotion.record)
}

pub(crate) fn check_demotion(subject: &str, demotion: &Demotion) -> Result<(), StoreError> {
    for (name, value) in
        [("subject", subject), ("who", &demotion.who), ("at", &demotion.at), ("reason", &demotion.reason)]
    {
        storable::text(|| format!("`{name}`"), value)?;
    }
    Ok(())
}
