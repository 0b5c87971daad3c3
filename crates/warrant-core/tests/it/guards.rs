//! The announcement guard through the turn and over generated replies: findings reach the
//! response and the facts the replay record keeps; a promotion for another version gives no
//! authority; no reply makes the guard panic or lets observe replace anything; framing a
//! flagged announcement in any of the structural ways clears it.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::json;
use warrant_core::Contract;
use warrant_core::guard::{AnnouncementGuard, Mode};
use warrant_core::guard_corpus;
use warrant_core::ladder::{AuditSummary, Bars, Label, Ladder, PromotionRecord, Subject};
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, FactError, Facts, Interaction, RecordedFacts};

/// A contract with only the guard (the outbound tests add a `live` path to it).
pub(crate) const CONTRACT: &str = r#"
[sources]
kinds = ["user", "model_reply"]

[guards.announcement]
mode = "enforce"

[guards.announcement.correction]
en = "I have not opened it yet."

[[guards.announcement.shape]]
language = "en"
order = ["subject", "verb", "object", "imminence"]
subject = ["Let me", "I'll"]
verb = ["check", "open"]
imminence = ["now"]
stop = ["."]

[guards.announcement.shape.object]
read_file = ["that file", "the file"]
"#;

fn contract() -> Contract {
    Contract::from_toml("guards.toml", CONTRACT).unwrap()
}

fn guard() -> AnnouncementGuard {
    contract().guards().announcement().unwrap().clone()
}

/// No records; the promotion it is given, if any.
pub(crate) struct Promoted(pub(crate) Option<PromotionRecord>);
impl Facts for Promoted {
    fn record(&self, _: &str, _: &str) -> Result<Option<Record>, FactError> {
        Ok(None)
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
    fn promotion(&self, _: &Subject) -> Result<Option<PromotionRecord>, FactError> {
        Ok(self.0.clone())
    }
}

fn decide(draft: &str, calls: &[&str], facts: &dyn Facts) -> Decision {
    let contract = contract();
    let calls: Vec<_> = calls.iter().map(|t| json!({"tool": t})).collect();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "calls": calls, "draft": {"text": draft},
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, facts, &BTreeSet::new())
}

/// A promotion of `subject` on evidence counted as the ladder counts it: 50 labels read as
/// true positives, and a run of one passing case of the adversarial corpus.
pub(crate) fn promotion(subject: Subject) -> PromotionRecord {
    let audits = AuditSummary::of([Label::TruePositive; 50]);
    let case = r#"{"text":"Let me check that file.","expect":"flag","class":"bare","why":"a bare announcement"}"#;
    let corpus = guard_corpus::run_text(&guard(), case, |_, _, failure| panic!("{failure}"));
    assert_eq!((corpus.passed(), corpus.failed()), (1, 0));
    Ladder::promote(subject, audits, corpus.run(), Bars::default(), "ana".into(), "t".into()).unwrap().record().clone()
}

#[test]
fn let_me_check_that_file_without_the_call_is_flagged_and_with_it_is_not() {
    let flagged = decide("Let me check that file.", &[], &Promoted(None));
    assert_eq!(flagged.response.findings.len(), 1);
    assert_eq!(flagged.response.findings[0].mode, Mode::Observe);
    assert_eq!(flagged.response.reply, None);
    let called = decide("Let me check that file.", &["read_file"], &Promoted(None));
    assert!(called.response.findings.is_empty());
    // No findings leave the response's JSON as it was before guards existed.
    assert!(serde_json::to_value(&called.response).unwrap().get("findings").is_none());
}

#[test]
fn an_enforcing_turn_exposes_the_replacement_and_replays_from_its_recorded_promotion() {
    let record = promotion(guard().subject());
    let decision = decide("Okay. Let me check that file.", &[], &Promoted(Some(record.clone())));
    let finding = &decision.response.findings[0];
    assert_eq!(finding.mode, Mode::Enforce);
    assert_eq!(finding.replacement.as_deref(), Some("Okay. I have not opened it yet."));
    assert_eq!(decision.response.reply, None, "only the outbound gate clears a reply");
    assert_eq!(decision.facts.promotions, vec![record]);
    let replayed = decide("Okay. Let me check that file.", &[], &RecordedFacts::new(&decision.facts));
    assert_eq!(replayed.response, decision.response);
}

#[test]
fn a_promotion_of_another_version_gives_no_authority() {
    let other = Subject { name: guard().subject().name, version: "another".into() };
    let decision = decide("Let me check that file.", &[], &Promoted(Some(promotion(other))));
    assert_eq!(decision.response.findings[0].mode, Mode::Observe);
    assert!(decision.response.findings[0].replacement.is_none());
}

/// Sentences the guard flags on their own.
fn announcement() -> impl Strategy<Value = String> {
    (0..2usize, 0..2usize, 0..2usize, any::<bool>()).prop_map(|(s, v, o, now)| {
        let subject = ["Let me", "I'll"][s];
        let verb = ["check", "open"][v];
        let object = ["that file", "the file"][o];
        if now { format!("{subject} {verb} {object} now.") } else { format!("{subject} {verb} {object}.") }
    })
}

proptest! {
    #[test]
    fn no_reply_panics_the_guard_and_observe_never_replaces(reply in "\\PC{0,80}", calls in proptest::collection::vec("[a-z_]{1,12}", 0..3)) {
        let guard = guard();
        let calls: Vec<_> = calls.into_iter().map(|tool| request::Call { tool, args: serde_json::Map::new() }).collect();
        let before = reply.clone();
        for finding in guard.observe(&reply, &calls) {
            prop_assert!(finding.replacement.is_none());
            prop_assert_eq!(finding.mode, Mode::Observe);
        }
        prop_assert_eq!(reply, before);
    }

    #[test]
    fn framing_a_flagged_announcement_clears_it(sentence in announcement(), prose in "[a-zA-Z ]{0,20}", how in 0..6usize) {
        let guard = guard();
        prop_assert_eq!(guard.flags(&sentence, std::iter::empty()).len(), 1);
        let framed = match how {
            0 => format!("{prose}:\n{sentence}"),
            1 => format!("{prose}\n> {sentence}"),
            2 => format!("{prose} \"{sentence}\""),
            3 => format!("“{sentence}” {prose}"),
            4 => format!("「{sentence}」"),
            _ => format!("{prose}：\r\n{sentence}\n{sentence}"),
        };
        prop_assert!(guard.flags(&framed, std::iter::empty()).is_empty(), "{framed:?}");
    }
}
