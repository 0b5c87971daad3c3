//! The ladder on PostgreSQL: the statements of its writes (`ladder.rs` holds the rules) and
//! the reads of findings and promotions.

use super::{LOCK_PROMOTION, PgStore, PgTxn, Session, settle};
use crate::error::StoreError;
use crate::ladder::{
    self, AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, LadderStore, LadderTxn,
    PromotionRow,
};
use crate::ladder::{check_audit, check_demotion, check_finding, check_promotion};
use crate::storable::storable;

impl LadderStore for PgStore {
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError> {
        if !storable(guard) {
            return Ok(Vec::new());
        }
        let rows = self.query(
            "SELECT f.seq, f.id, f.version, f.conversation, f.turn, f.kind, f.payload, f.at,
                    a.label, a.who, a.at
             FROM findings f LEFT JOIN audits a ON a.finding = f.id
             WHERE f.guard = $1 ORDER BY f.seq",
            &[&guard],
        )?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(1)?;
                let kind: String = row.try_get(5)?;
                let audit = match (row.try_get(8)?, row.try_get(9)?, row.try_get(10)?) {
                    (Some(label), Some(who), Some(at)) => Some(AuditRow { finding: id.clone(), label, who, at }),
                    _ => None,
                };
                Ok(AuditedFinding {
                    finding: FindingRow {
                        seq: row.try_get(0)?,
                        kind: FindingKind::parse(&id, &kind)?,
                        id,
                        guard: guard.to_owned(),
                        version: row.try_get(2)?,
                        conversation: row.try_get(3)?,
                        turn: row.try_get(4)?,
                        payload: row.try_get(6)?,
                        at: row.try_get(7)?,
                    },
                    audit,
                })
            })
            .collect()
    }

    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError> {
        for (i, sample) in samples.iter().enumerate() {
            check_finding(|| format!("samples[{i}]"), sample)?;
        }
        let (mut tx, statements, schema) = self.begin()?;
        let added = ladder::add_samples(&mut PgTxn { tx: &mut tx, statements, schema }, samples)?;
        tx.commit()?;
        Ok(added)
    }

    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError> {
        check_audit(audit)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = ladder::audit(&mut PgTxn { tx: &mut tx, statements, schema }, audit)?;
        settle(tx, settled)
    }

    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        check_promotion(promotion)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = ladder::promote(&mut PgTxn { tx: &mut tx, statements, schema }, promotion)?;
        settle(tx, settled)
    }

    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError> {
        if !storable(subject) {
            return Ok(None);
        }
        let row = self.query_opt(
            "SELECT seq, version, record, promoted_by, promoted_at FROM promotions
             WHERE subject = $1 AND demoted_at IS NULL",
            &[&subject],
        )?;
        row.map(|row| {
            Ok(PromotionRow {
                seq: row.try_get(0)?,
                subject: subject.to_owned(),
                version: row.try_get(1)?,
                record: row.try_get(2)?,
                promoted_by: row.try_get(3)?,
                promoted_at: row.try_get(4)?,
                demoted: None,
            })
        })
        .transpose()
    }

    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        check_demotion(subject, demotion)?;
        let (mut tx, statements, schema) = self.begin()?;
        let demoted = ladder::demote(&mut PgTxn { tx: &mut tx, statements, schema }, subject, demotion)?;
        tx.commit()?;
        Ok(demoted)
    }
}

impl<C: Session> LadderTxn for PgTxn<'_, C> {
    fn insert_finding(&mut self, finding: &FindingRow) -> Result<bool, StoreError> {
        Ok(super::commit::wrote_one(&self.run(&super::commit::insert_finding(finding))?))
    }

    fn finding_kind(&mut self, id: &str) -> Result<Option<FindingKind>, StoreError> {
        let row = self.query_opt("SELECT kind FROM findings WHERE id = $1", &[&id])?;
        row.map(|row| {
            let kind: String = row.try_get(0)?;
            FindingKind::parse(id, &kind)
        })
        .transpose()
    }

    fn audit_label(&mut self, id: &str) -> Result<Option<String>, StoreError> {
        // Locks the finding, so two concurrent audits of it are decided one after the other.
        self.query_opt("SELECT 1 FROM findings WHERE id = $1 FOR UPDATE", &[&id])?;
        let row = self.query_opt("SELECT label FROM audits WHERE finding = $1", &[&id])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn insert_audit(&mut self, audit: &AuditRow) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO audits (finding, label, who, at) VALUES ($1, $2, $3, $4)",
            &[&audit.finding, &audit.label, &audit.who, &audit.at],
        )?;
        Ok(())
    }

    fn demote_active(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        // One promotion change per subject at a time: the partial unique index would otherwise
        // fail the second of two concurrent promotions instead of letting it supersede.
        let schema = self.schema;
        self.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2::text || '/' || $3::text))",
            &[&LOCK_PROMOTION, &schema, &subject],
        )?;
        let demoted = self.execute(
            "UPDATE promotions SET demoted_by = $2, demoted_at = $3, demoted_reason = $4
             WHERE subject = $1 AND demoted_at IS NULL",
            &[&subject, &demotion.who, &demotion.at, &demotion.reason],
        )?;
        Ok(usize::try_from(demoted).unwrap_or(usize::MAX))
    }

    fn insert_promotion(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        let row = self.query_one(
            "INSERT INTO promotions (subject, version, record, promoted_by, promoted_at)
             VALUES ($1, $2, $3, $4, $5) RETURNING seq",
            &[
                &promotion.subject,
                &promotion.version,
                &promotion.record,
                &promotion.promoted_by,
                &promotion.promoted_at,
            ],
        )?;
        Ok(row.try_get(0)?)
    }
}
