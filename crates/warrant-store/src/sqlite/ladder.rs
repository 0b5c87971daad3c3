//! The ladder on SQLite: the statements of its writes (`ladder.rs` holds the rules) and the
//! reads of findings and promotions.

use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, SqliteTxn, json, settle};
use crate::error::StoreError;
use crate::ladder::{
    self, AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, LadderStore, LadderTxn,
    PromotionRow,
};
use crate::ladder::{check_audit, check_demotion, check_finding, check_promotion};
use crate::storable::storable;

impl LadderStore for SqliteStore {
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError> {
        if !storable(guard) {
            return Ok(Vec::new());
        }
        type Raw = (
            (i64, String, String, String, String, String, String, String),
            (Option<String>, Option<String>, Option<String>),
        );
        let raws: Vec<Raw> = self
            .conn
            .prepare_cached(
                "SELECT f.seq, f.id, f.version, f.conversation, f.turn, f.kind, f.payload, f.at,
                        a.label, a.who, a.at
                 FROM findings f LEFT JOIN audits a ON a.finding = f.id
                 WHERE f.guard = ?1 ORDER BY f.seq",
            )?
            .query_map([guard], |row| {
                Ok((
                    (
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                        row.get(6)?,
                        row.get(7)?,
                    ),
                    (row.get(8)?, row.get(9)?, row.get(10)?),
                ))
            })?
            .collect::<Result<_, _>>()?;
        raws.into_iter()
            .map(|((seq, id, version, conversation, turn, kind, payload, at), audit)| {
                let audit = match audit {
                    (Some(label), Some(who), Some(when)) => {
                        Some(AuditRow { finding: id.clone(), label, who, at: when })
                    }
                    _ => None,
                };
                Ok(AuditedFinding {
                    finding: FindingRow {
                        seq,
                        kind: FindingKind::parse(&id, &kind)?,
                        payload: json(&payload, || format!("the payload of finding `{id}`"))?,
                        id,
                        guard: guard.to_owned(),
                        version,
                        conversation,
                        turn,
                        at,
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
        let tx = self.begin()?;
        let added = ladder::add_samples(&mut SqliteTxn::on(&tx), samples)?;
        tx.commit()?;
        Ok(added)
    }

    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError> {
        check_audit(audit)?;
        let tx = self.begin()?;
        let settled = ladder::audit(&mut SqliteTxn::on(&tx), audit)?;
        settle(tx, settled)
    }

    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        check_promotion(promotion)?;
        let tx = self.begin()?;
        let settled = ladder::promote(&mut SqliteTxn::on(&tx), promotion)?;
        settle(tx, settled)
    }

    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError> {
        if !storable(subject) {
            return Ok(None);
        }
        type Raw = (i64, String, String, String, String);
        let raw: Option<Raw> = self
            .conn
            .prepare_cached(
                "SELECT seq, version, record, promoted_by, promoted_at FROM promotions
                 WHERE subject = ?1 AND demoted_at IS NULL",
            )?
            .query_row([subject], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)))
            .optional()?;
        raw.map(|(seq, version, record, promoted_by, promoted_at)| {
            Ok(PromotionRow {
                seq,
                subject: subject.to_owned(),
                version,
                record: json(&record, || format!("the record of promotion {seq}"))?,
                promoted_by,
                promoted_at,
                demoted: None,
            })
        })
        .transpose()
    }

    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        check_demotion(subject, demotion)?;
        let tx = self.begin()?;
        let demoted = ladder::demote(&mut SqliteTxn::on(&tx), subject, demotion)?;
        tx.commit()?;
        Ok(demoted)
    }
}

impl LadderTxn for SqliteTxn<'_> {
    fn insert_finding(&mut self, finding: &FindingRow) -> Result<bool, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO findings (id, guard, version, conversation, turn, kind, payload, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![
                finding.id,
                finding.guard,
                finding.version,
                finding.conversation,
                finding.turn,
                finding.kind.as_str(),
                finding.payload.to_string(),
                finding.at
            ])?;
        Ok(inserted == 1)
    }

    fn finding_kind(&mut self, id: &str) -> Result<Option<FindingKind>, StoreError> {
        let kind: Option<String> = self
            .0
            .prepare_cached("SELECT kind FROM findings WHERE id = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?;
        kind.map(|k| FindingKind::parse(id, &k)).transpose()
    }

    fn audit_label(&mut self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT label FROM audits WHERE finding = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?)
    }

    fn insert_audit(&mut self, audit: &AuditRow) -> Result<(), StoreError> {
        self.0
            .prepare_cached("INSERT INTO audits (finding, label, who, at) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![audit.finding, audit.label, audit.who, audit.at])?;
        Ok(())
    }

    fn demote_active(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        Ok(self
            .0
            .prepare_cached(
                "UPDATE promotions SET demoted_by = ?2, demoted_at = ?3, demoted_reason = ?4
                 WHERE subject = ?1 AND demoted_at IS NULL",
            )?
            .execute(params![subject, demotion.who, demotion.at, demotion.reason])?)
    }

    fn insert_promotion(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        Ok(self
            .0
            .prepare_cached(
                "INSERT INTO promotions (subject, version, record, promoted_by, promoted_at)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
            )?
            .query_row(
                params![
                    promotion.subject,
                    promotion.version,
                    promotion.record.to_string(),
                    promotion.promoted_by,
                    promotion.promoted_at
                ],
                |row| row.get(0),
            )?)
    }
}
