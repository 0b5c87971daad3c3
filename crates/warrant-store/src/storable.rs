//! Input both backends can keep. PostgreSQL refuses U+0000 in text and in JSONB while SQLite
//! keeps it; checking before either backend sees the input makes them behave the same.

use serde_json::Value;

use crate::commit::{Commit, OutcomeReport, RecordWrite};
use crate::error::StoreError;
use crate::ladder::{AuditRow, Demotion, FindingRow, PromotionRow};
use crate::rows::{EventRow, JsonText, PromptPromotionRow, PromptRow};

/// Whether a text can be stored, and so can have been stored: a lookup by a key that is not
/// storable finds nothing, in both backends.
pub(crate) fn storable(text: &str) -> bool {
    !text.contains('\0')
}

fn text(field: impl FnOnce() -> String, value: &str) -> Result<(), StoreError> {
    if storable(value) { Ok(()) } else { Err(StoreError::NulCharacter { field: field() }) }
}

fn json(field: impl FnOnce() -> String, value: &Value) -> Result<(), StoreError> {
    if json_storable(value) { Ok(()) } else { Err(StoreError::NulCharacter { field: field() }) }
}

/// JSON text checked as [`json`] checks a value. serde_json writes U+0000 as `\u0000`, so the
/// text holds one wherever that escape follows an even run of backslashes (after an odd run,
/// its backslash is the second half of an escaped backslash, and `u0000` is plain text).
fn json_text(field: impl FnOnce() -> String, value: &JsonText) -> Result<(), StoreError> {
    let text = value.as_str();
    let nul = text.match_indices(r"\u0000").any(|(at, _)| {
        let before = text.get(..at).unwrap_or_default();
        before.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 0
    });
    if nul { Err(StoreError::NulCharacter { field: field() }) } else { Ok(()) }
}

fn json_storable(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
        Value::String(s) => storable(s),
        Value::Array(items) => items.iter().all(json_storable),
        Value::Object(map) => map.iter().all(|(k, v)| storable(k) && json_storable(v)),
    }
}

pub(crate) fn check_seed(table: &str, rows: &[(String, Value)]) -> Result<(), StoreError> {
    text(|| "the table name".to_owned(), table)?;
    for (i, (key, value)) in rows.iter().enumerate() {
        text(|| format!("the key of seed row {i}"), key)?;
        json(|| format!("the value of seed row {i} (`{}`)", key.escape_debug()), value)?;
    }
    Ok(())
}

pub(crate) fn check_commit(commit: &Commit) -> Result<(), StoreError> {
    let turn = &commit.turn;
    text(|| "`turn.conversation`".to_owned(), &turn.conversation)?;
    text(|| "`turn.turn`".to_owned(), &turn.turn)?;
    json_text(|| "`turn.request`".to_owned(), &turn.request)?;
    json_text(|| "`turn.response`".to_owned(), &turn.response)?;
    json_text(|| "`turn.replay`".to_owned(), &turn.replay)?;
    for (i, write) in commit.writes.iter().enumerate() {
        check_write(|| format!("writes[{i}]"), write)?;
    }
    for (i, read) in commit.reads.iter().enumerate() {
        text(|| format!("`reads[{i}].table`"), &read.table)?;
        text(|| format!("`reads[{i}].key`"), &read.key)?;
    }
    for (i, effect) in commit.effects.iter().enumerate() {
        let at = |f: &str| format!("`effects[{i}].{f}`");
        text(|| at("id"), &effect.id)?;
        text(|| at("idempotency_key"), &effect.idempotency_key)?;
        text(|| at("conversation"), &effect.conversation)?;
        text(|| at("turn"), &effect.turn)?;
        text(|| at("op"), &effect.op)?;
        json(|| at("payload"), &effect.payload)?;
    }
    for (i, event) in commit.events.iter().enumerate() {
        check_event(|| format!("events[{i}]"), event)?;
    }
    for (i, hold) in commit.holds.iter().enumerate() {
        let at = |f: &str| format!("`holds[{i}].{f}`");
        text(|| at("effect"), &hold.effect)?;
        text(|| at("table"), &hold.table)?;
        text(|| at("key"), &hold.key)?;
    }
    for (i, opened) in commit.opened.iter().enumerate() {
        let at = |f: &str| format!("`opened[{i}].{f}`");
        text(|| at("id"), &opened.id)?;
        text(|| at("conversation"), &opened.conversation)?;
        text(|| at("turn"), &opened.turn)?;
        json(|| at("payload"), &opened.payload)?;
        for (j, option) in opened.options.iter().enumerate() {
            text(|| at(&format!("options[{j}]")), option)?;
        }
    }
    for (i, answer) in commit.answered.iter().enumerate() {
        text(|| format!("`answered[{i}].interaction`"), &answer.interaction)?;
        text(|| format!("`answered[{i}].option`"), &answer.option)?;
    }
    for (i, finding) in commit.findings.iter().enumerate() {
        check_finding(|| format!("findings[{i}]"), finding)?;
    }
    Ok(())
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
        text(|| format!("`{}.{name}`", at()), value)?;
    }
    json(|| format!("`{}.payload`", at()), &finding.payload)
}

pub(crate) fn check_audit(audit: &AuditRow) -> Result<(), StoreError> {
    for (name, value) in [("finding", &audit.finding), ("label", &audit.label), ("who", &audit.who), ("at", &audit.at)]
    {
        text(|| format!("`{name}`"), value)?;
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
        text(|| format!("`{name}`"), value)?;
    }
    json(|| "`record`".to_owned(), &promotion.record)
}

pub(crate) fn check_demotion(subject: &str, demotion: &Demotion) -> Result<(), StoreError> {
    for (name, value) in
        [("subject", subject), ("who", &demotion.who), ("at", &demotion.at), ("reason", &demotion.reason)]
    {
        text(|| format!("`{name}`"), value)?;
    }
    Ok(())
}

pub(crate) fn check_prompt(prompt: &PromptRow) -> Result<(), StoreError> {
    text(|| "`task`".to_owned(), &prompt.task)?;
    text(|| "`version`".to_owned(), &prompt.version)?;
    text(|| "`text`".to_owned(), &prompt.text)
}

pub(crate) fn check_prompt_promotion(promotion: &PromptPromotionRow) -> Result<(), StoreError> {
    text(|| "`task`".to_owned(), &promotion.task)?;
    text(|| "`version`".to_owned(), &promotion.version)?;
    json(|| "`report`".to_owned(), &promotion.report)
}

pub(crate) fn check_report(report: &OutcomeReport) -> Result<(), StoreError> {
    if !crate::commit::EFFECT_OUTCOMES.contains(&report.outcome.as_str()) {
        return Err(StoreError::UnknownOutcome { outcome: report.outcome.clone() });
    }
    text(|| "`effect`".to_owned(), &report.effect)?;
    check_event(|| "event".to_owned(), &report.event)?;
    for (i, write) in report.writes.iter().enumerate() {
        check_write(|| format!("writes[{i}]"), write)?;
    }
    let mut rows = std::collections::BTreeMap::new();
    for row in &report.rows {
        rows.entry(row.table.as_str()).or_insert_with(Vec::new).push((row.key.as_str(), &row.value));
    }
    for (table, rows) in rows {
        crate::records::check_rows(table, &rows, false)?;
    }
    if let Some(kept) = &report.report {
        json(|| "`report`".to_owned(), kept)?;
    }
    Ok(())
}

fn check_write(at: impl Fn() -> String, write: &RecordWrite) -> Result<(), StoreError> {
    text(|| format!("`{}.table`", at()), &write.table)?;
    text(|| format!("`{}.key`", at()), &write.key)?;
    json(|| format!("`{}.value`", at()), &write.value)
}

fn check_event(at: impl Fn() -> String, event: &EventRow) -> Result<(), StoreError> {
    text(|| format!("`{}.id`", at()), &event.id)?;
    text(|| format!("`{}.conversation`", at()), &event.conversation)?;
    text(|| format!("`{}.kind`", at()), &event.kind)?;
    json(|| format!("`{}.payload`", at()), &event.payload)?;
    if let Some(effect) = &event.effect {
        text(|| format!("`{}.effect`", at()), effect)?;
    }
    Ok(())
}

pub(crate) fn check_outbox_message(message: &crate::outbox::OutboxMessage) -> Result<(), StoreError> {
    for (name, value) in [
        ("id", &message.id),
        ("conversation", &message.conversation),
        ("path", &message.path),
        ("channel", &message.channel),
        ("idempotency_key", &message.idempotency_key),
    ] {
        text(|| format!("`{name}`"), value)?;
    }
    json(|| "`body`".to_owned(), &message.body)?;
    json(|| "`record`".to_owned(), &message.record)
}

pub(crate) fn check_job(job: &crate::outbox::NewJob) -> Result<(), StoreError> {
    text(|| "`id`".to_owned(), &job.id)?;
    text(|| "`conversation`".to_owned(), &job.conversation)?;
    json(|| "`draft`".to_owned(), &job.draft)
}

/// A JSON argument named `field` in the error.
pub(crate) fn check_json(field: &str, value: &Value) -> Result<(), StoreError> {
    json(|| field.to_owned(), value)
}

/// A text argument named `field` in the error.
pub(crate) fn check_text(field: &str, value: &str) -> Result<(), StoreError> {
    text(|| field.to_owned(), value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_nul_anywhere_in_json_is_refused() {
        assert!(json_storable(&json!({"a": [1, "b", {"c": null}]})));
        assert!(!json_storable(&json!({"a": [1, "b\u{0}"]})));
        assert!(!json_storable(&json!({"a\u{0}": 1})));
    }

    #[test]
    fn an_unknown_outcome_is_refused_before_anything_else() {
        let report = OutcomeReport {
            effect: "e".into(),
            outcome: "maybe".into(),
            event: EventRow {
                seq: 0,
                id: "v".into(),
                conversation: "c".into(),
                kind: "k".into(),
                payload: Value::Null,
                effect: None,
            },
            writes: vec![],
            rows: vec![],
            report: None,
        };
        assert!(matches!(check_report(&report), Err(StoreError::UnknownOutcome { .. })));
    }
}
