//! The ladder over a store: findings to audit, samples of unflagged replies, the audited record
//! of the guard version in force, promotion and demotion. The decisions (bars, admission of a
//! stored promotion) are warrant-core's `ladder`; this module only reads and writes.

use serde::Serialize;
use serde_json::{Value, json};

use warrant_core::guard::{ANNOUNCEMENT, AnnouncementGuard, Mode};
use warrant_core::ladder::{AuditSummary, Bars, CorpusRun, Label, Ladder, Promotion, PromotionRecord, Refusal};
use warrant_core::request::TurnRequest;
use warrant_core::turn::{self, TurnResponse};
use warrant_store::{AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, PromotionRow, Store};

use warrant_model::PromptVersion;

use crate::model::{active_prompt, prompt_subject};
use crate::{Engine, EngineError};

/// Where the guard stands: its version, the mode in force, and its audited record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardStatus {
    /// `guard:announcement`.
    pub guard: String,
    /// The version in force (a hash of its shapes and correction copy).
    pub version: String,
    /// The mode the contract asks for.
    pub declared: Mode,
    /// The mode in force: `enforce` only with a promotion the ladder admits for this version.
    pub mode: Mode,
    /// Findings of this version, audited or not.
    pub findings: u64,
    /// The audited record of this version.
    pub audits: AuditSummary,
    /// The observed false-positive rate.
    pub false_positive_rate: Option<f64>,
    /// Its exact one-sided 95% Clopper–Pearson upper bound.
    pub false_positive_upper_95: Option<f64>,
    /// The observed miss rate among audited samples.
    pub miss_rate: Option<f64>,
    /// The active promotion, if any, and whether it holds for this version.
    pub promotion: Option<Value>,
}

/// Where a model task's prompt stands on the ladder (the data of `warrant prompt list`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptStatus {
    /// The task.
    pub task: String,
    /// The built-in version (a content hash).
    pub builtin: String,
    /// The version in force: the admitted promotion's, else the built-in one.
    pub active: String,
    /// The active promotion of `prompt:TASK`, if any: its record (audits, corpus, bars) and
    /// whether it still holds.
    pub promotion: Option<Value>,
    /// Every promotion decided for the task, accepted or refused, in decision order.
    pub decisions: Vec<Value>,
}

/// Why the ladder's commands cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The contract declares no announcement guard.
    #[error("the contract declares no `[guards.announcement]`")]
    NoGuard,
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<warrant_store::StoreError> for GuardError {
    fn from(error: warrant_store::StoreError) -> GuardError {
        GuardError::Engine(EngineError::Store(error))
    }
}

/// The stored promotion of `subject`, as the ladder's record.
pub(crate) fn promotion_record<S: Store>(store: &mut S, subject: &str) -> Result<Option<PromotionRecord>, EngineError> {
    let Some(row) = store.promotion(subject)? else { return Ok(None) };
    serde_json::from_value(row.record).map(Some).map_err(|e| EngineError::Corrupt {
        what: format!("promotion {} of `{subject}`", row.seq),
        message: e.to_string(),
    })
}

impl<S: Store> Engine<S> {
    fn guard(&self) -> Result<&AnnouncementGuard, GuardError> {
        self.contract.guards().announcement().ok_or(GuardError::NoGuard)
    }

    /// Every finding of the announcement guard (all versions), with its audit.
    pub fn guard_findings(&mut self) -> Result<Vec<AuditedFinding>, GuardError> {
        self.guard()?;
        Ok(self.store.findings(ANNOUNCEMENT)?)
    }

    /// Labels a finding; `at` comes from the caller's clock.
    pub fn guard_audit(&mut self, finding: &str, label: Label, who: &str, at: &str) -> Result<AuditResult, GuardError> {
        self.guard()?;
        let row = AuditRow {
            finding: finding.to_owned(),
            label: label.as_str().to_owned(),
            who: who.to_owned(),
            at: at.to_owned(),
        };
        Ok(self.store.audit(&row)?)
    }

    /// The audited record of the version in force: only labels on findings of this exact
    /// version count, so a changed guard starts its record again.
    pub fn guard_status(&mut self) -> Result<GuardStatus, GuardError> {
        let guard = self.guard()?.clone();
        let findings: Vec<AuditedFinding> =
            self.store.findings(ANNOUNCEMENT)?.into_iter().filter(|f| f.finding.version == guard.version()).collect();
        let audits =
            AuditSummary::of(findings.iter().filter_map(|f| f.audit.as_ref().and_then(|a| Label::parse(&a.label))));
        let record = promotion_record(&mut self.store, ANNOUNCEMENT)?;
        let admitted = record.as_ref().map(|r| Promotion::admit(r, &guard.subject()));
        let mode = match (&admitted, guard.mode()) {
            (Some(Ok(_)), Mode::Enforce) => Mode::Enforce,
            _ => Mode::Observe,
        };
        let promotion = record.map(|r| {
            let holds = match &admitted {
                Some(Err(refusal)) => json!({"holds": false, "reason": refusal.code(), "detail": refusal.to_string()}),
                _ => json!({"holds": true}),
            };
            json!({"version": r.subject.version, "who": r.who, "at": r.at, "audits": r.audits, "corpus": r.corpus, "bars": r.bars, "status": holds})
        });
        Ok(GuardStatus {
            guard: ANNOUNCEMENT.to_owned(),
            version: guard.version().to_owned(),
            declared: guard.mode(),
            mode,
            findings: u64::try_from(findings.len()).unwrap_or(u64::MAX),
            false_positive_rate: audits.false_positive_rate(),
            false_positive_upper_95: audits.false_positive_upper_bound(),
            miss_rate: audits.miss_rate(),
            audits,
            promotion,
        })
    }

    /// Samples up to `count` stored replies the guard did not flag, for audit as `miss` or
    /// `clean`. The choice is deterministic (ordered by a hash of the turn), and a reply sampled
    /// before is not added again. Returns how many were added.
    pub fn guard_sample(&mut self, count: usize, at: &str) -> Result<usize, GuardError> {
        let version = self.guard()?.version().to_owned();
        let mut candidates: Vec<(String, FindingRow)> = Vec::new();
        let mut after = 0;
        loop {
            let batch = self.store.turns(after, 500)?;
            let Some(last) = batch.last() else { break };
            after = last.seq;
            for stored in batch {
                let corrupt = |e: serde_json::Error| EngineError::Corrupt {
                    what: format!("turn `{}`", stored.turn),
                    message: e.to_string(),
                };
                let request: TurnRequest = serde_json::from_value(stored.request.clone()).map_err(corrupt)?;
                let response: TurnResponse = serde_json::from_value(stored.response.clone()).map_err(corrupt)?;
                let Some(draft) = request.draft else { continue };
                if !response.findings.is_empty() {
                    continue;
                }
                let id = turn::derive_id("smp", &[&stored.conversation, &stored.turn]);
                let order = turn::derive_id("order", &[&stored.conversation, &stored.turn, &version]);
                let calls: Vec<&str> = request.calls.iter().map(|c| c.tool.as_str()).collect();
                candidates.push((
                    order,
                    FindingRow {
                        seq: 0,
                        id,
                        guard: ANNOUNCEMENT.to_owned(),
                        version: version.clone(),
                        conversation: stored.conversation.clone(),
                        turn: stored.turn.clone(),
                        kind: FindingKind::Sample,
                        payload: json!({"reply": draft.text, "calls": calls}),
                        at: at.to_owned(),
                    },
                ));
            }
        }
        candidates.sort_by(|a, b| a.0.cmp(&b.0));
        let samples: Vec<FindingRow> = candidates.into_iter().take(count).map(|(_, row)| row).collect();
        Ok(self.store.add_samples(&samples)?)
    }

    /// Promotes the version in force if its audited record and `corpus` (a fresh adversarial
    /// run) clear `bars`; stores the promotion record.
    pub fn guard_promote(
        &mut self,
        corpus: CorpusRun,
        bars: Bars,
        who: &str,
        at: &str,
    ) -> Result<Result<PromotionRecord, Refusal>, GuardError> {
        let subject = self.guard()?.subject();
        let audits = self.guard_status()?.audits;
        let promotion = match Ladder::promote(subject.clone(), audits, corpus, bars, who.to_owned(), at.to_owned()) {
            Ok(promotion) => promotion,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let record = promotion.record().clone();
        let json = serde_json::to_value(&record)
            .map_err(|e| EngineError::Corrupt { what: "promotion record".into(), message: e.to_string() })?;
        self.store.promote(&PromotionRow {
            seq: 0,
            subject: subject.name,
            version: subject.version,
            record: json,
            promoted_by: who.to_owned(),
            promoted_at: at.to_owned(),
            demoted: None,
        })?;
        Ok(Ok(record))
    }

    /// The ladder state of every model task's prompt.
    pub fn prompt_status(&mut self) -> Result<Vec<PromptStatus>, EngineError> {
        use warrant_model::tasks::{ClaimsCoverage, Locate, Rewrite, UncoveredRequest, ValueClassified, ValueStated};
        let builtins = [
            PromptVersion::builtin::<ValueStated>(),
            PromptVersion::builtin::<Locate>(),
            PromptVersion::builtin::<UncoveredRequest>(),
            PromptVersion::builtin::<ClaimsCoverage>(),
            PromptVersion::builtin::<Rewrite>(),
            PromptVersion::builtin::<ValueClassified>(),
        ];
        let mut statuses = Vec::with_capacity(builtins.len());
        for builtin in builtins {
            let task = builtin.task;
            let active = active_prompt(&mut self.store, &task)?;
            let promotion = promotion_record(&mut self.store, &prompt_subject(&task))?.map(|r| {
                let holds = match Promotion::admit(&r, &r.subject) {
                    Ok(_) => json!({"holds": true}),
                    Err(refusal) => json!({"holds": false, "reason": refusal.code(), "detail": refusal.to_string()}),
                };
                json!({"version": r.subject.version, "who": r.who, "at": r.at, "audits": r.audits, "corpus": r.corpus, "bars": r.bars, "status": holds})
            });
            let decisions = self
                .store
                .promotions(&task)?
                .into_iter()
                .map(|p| json!({"seq": p.seq, "version": p.version, "accepted": p.accepted, "report": p.report}))
                .collect();
            statuses.push(PromptStatus {
                active: active.unwrap_or_else(|| builtin.version.clone()),
                builtin: builtin.version,
                task,
                promotion,
                decisions,
            });
        }
        Ok(statuses)
    }

    /// Demotes the active promotion; how many were demoted.
    pub fn guard_demote(&mut self, who: &str, at: &str, reason: &str) -> Result<usize, GuardError> {
        self.guard()?;
        let demotion = Demotion { who: who.to_owned(), at: at.to_owned(), reason: reason.to_owned() };
        Ok(self.store.demote(ANNOUNCEMENT, &demotion)?)
    }
}
