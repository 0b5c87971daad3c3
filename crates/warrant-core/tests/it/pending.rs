//! An operation without effect steps holds the rows it names: a later consequential act naming
//! one of them is asked (`effect_pending`), a read is not, and the hold the decision found is on
//! its facts, so the recorded facts decide the same again.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, FactError, Facts, Interaction, RecordedFacts, RowRef, Verdict};

const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[records]
currency = "USD"

[[records.table]]
name = "parcel"
file = "parcels.json"
entity = "Parcel"

[policies]
files = ["policy.cedar"]

# What dispatching changes only the courier knows: no effect steps.
[[operation]]
name = "dispatch"
consequential = true
resource = "parcel"
args.parcel = { kind = "record", table = "parcel" }

[[operation]]
name = "recall"
consequential = true
resource = "parcel"
args.parcel = { kind = "record", table = "parcel" }

[[operation.effect]]
set = "parcel.status"
value = "recalled"

[[operation]]
name = "track"
resource = "parcel"
args.parcel = { kind = "record", table = "parcel" }
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policy.cedar" { Ok("permit (principal, action, resource);".into()) } else { Err(path.into()) }
    }
}

/// Two parcels; `held` is held by the effect `eff_dispatch`.
struct Courier {
    held: Option<RowRef>,
}

impl Facts for Courier {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let value = json!({"status": "ready"});
        Ok(["p1", "p2"].contains(&key).then(|| Record { table: table.into(), key: key.into(), revision: 2, value }))
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        Ok((self.held.as_ref() == Some(row)).then(|| "eff_dispatch".to_owned()))
    }
}

fn decide(facts: &dyn Facts, acts: serde_json::Value) -> Decision {
    let contract = Contract::load("courier.toml", CONTRACT, &Files).unwrap();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim", "at": "2026-11-30T03:00:00Z", "time_zone": "UTC",
        "locale": "en-US", "entries": [{"kind": "user", "text": "Recall it."}], "acts": acts,
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    let decision = turn::decide(&contract, &valid, facts, &BTreeSet::new());
    // Decided again from the facts it read, it is the same decision.
    let again = turn::decide(&contract, &valid, &RecordedFacts::new(&decision.facts), &BTreeSet::new());
    assert_eq!(again, decision);
    decision
}

fn verdicts(decision: &Decision) -> Vec<(Verdict, Vec<&str>)> {
    decision.response.acts.iter().map(|a| (a.verdict, a.reasons.iter().map(|r| r.code.as_str()).collect())).collect()
}

fn parcel(key: &str) -> RowRef {
    RowRef { table: "parcel".into(), key: key.into() }
}

#[test]
fn a_consequential_act_naming_a_held_row_is_asked_and_a_read_is_not() {
    let courier = Courier { held: Some(parcel("p1")) };
    let acts = json!([{"op": "recall", "args": {"parcel": "p1"}}, {"op": "recall", "args": {"parcel": "p2"}},
        {"op": "dispatch", "args": {"parcel": "p1"}}, {"op": "track", "args": {"parcel": "p1"}}]);
    let decision = decide(&courier, acts);
    assert_eq!(
        verdicts(&decision),
        [
            (Verdict::Ask, vec!["effect_pending"]),
            (Verdict::Hold, vec!["confirmation_required"]),
            (Verdict::Ask, vec!["effect_pending"]),
            (Verdict::Commit, vec![]),
        ]
    );
    let detail = decision.response.acts[0].reasons[0].detail.as_deref().unwrap_or("");
    assert!(detail.contains("eff_dispatch"), "{detail}");
    // Only the hold found is on the facts: a row found free is free to a replay too.
    let pending: BTreeMap<_, _> = decision.facts.pending.iter().map(|p| (p.row.clone(), p.effect.clone())).collect();
    assert_eq!(pending, BTreeMap::from([(parcel("p1"), Some("eff_dispatch".to_owned()))]));
    assert!(decision.writes.is_empty() && decision.effects.iter().all(|e| e.holds.is_empty()));
}

#[test]
fn nothing_held_holds_nothing_and_a_read_holds_no_row() {
    let decision = decide(&Courier { held: None }, json!([{"op": "track", "args": {"parcel": "p2"}}]));
    assert_eq!(verdicts(&decision), [(Verdict::Commit, vec![])]);
    assert!(decision.facts.pending.is_empty());
    assert_eq!(decision.effects[0].holds, []);
}

/// [`Courier`]'s facts, each read noted.
struct Noted {
    facts: Courier,
    rows: std::cell::RefCell<BTreeSet<RowRef>>,
    pending: std::cell::RefCell<BTreeSet<RowRef>>,
}

impl Facts for Noted {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        self.rows.borrow_mut().insert(RowRef { table: table.into(), key: key.into() });
        self.facts.record(table, key)
    }
    fn interaction(&self, id: &str) -> Result<Option<Interaction>, FactError> {
        self.facts.interaction(id)
    }
    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        self.pending.borrow_mut().insert(row.clone());
        self.facts.pending_effect(row)
    }
}

/// What the request foresees is what its first decision reads: the rows its acts name by id,
/// and the pending effect of those a consequential act names. A row that turns out not to
/// exist is foreseen for the check that would follow it, and an act the contract does not have
/// or an argument that is no id foresees nothing.
#[test]
fn the_facts_a_turn_is_foreseen_to_read_are_those_its_first_decision_reads() {
    let contract = Contract::load("courier.toml", CONTRACT, &Files).unwrap();
    let foresee = |acts: serde_json::Value| {
        let body = json!({
            "conversation": "c", "turn": "t", "actor": "kim", "at": "2026-11-30T03:00:00Z", "time_zone": "UTC",
            "locale": "en-US", "acts": acts,
        });
        let valid = request::parse(&contract, &body.to_string()).unwrap();
        let noted = Noted { facts: Courier { held: None }, rows: Default::default(), pending: Default::default() };
        let _ = turn::decide(&contract, &valid, &noted, &BTreeSet::new());
        (turn::foreseen(&contract, &valid), noted.rows.into_inner(), noted.pending.into_inner())
    };
    let acts = json!([{"op": "recall", "args": {"parcel": "p1"}}, {"op": "track", "args": {"parcel": "p2"}},
        {"op": "dispatch", "args": {"parcel": {"id": "p2", "revision": 2}}}]);
    let (foreseen, rows, pending) = foresee(acts);
    assert_eq!(foreseen.rows, [parcel("p1"), parcel("p2")]);
    assert_eq!(foreseen.pending, [parcel("p1"), parcel("p2")]);
    assert_eq!(foreseen.rows.iter().cloned().collect::<BTreeSet<_>>(), rows);
    assert_eq!(foreseen.pending.iter().cloned().collect::<BTreeSet<_>>(), pending);

    // A read asks no pending effect; a missing row is foreseen, and refused before one is asked.
    let (foreseen, rows, pending) = foresee(json!([{"op": "track", "args": {"parcel": "p1"}},
        {"op": "recall", "args": {"parcel": "p404"}}]));
    assert_eq!(foreseen.rows, [parcel("p1"), parcel("p404")]);
    assert_eq!(foreseen.pending, [parcel("p404")]);
    assert_eq!(rows, BTreeSet::from([parcel("p1"), parcel("p404")]));
    assert!(pending.is_empty());

    let (foreseen, ..) = foresee(json!([{"op": "unknown", "args": {"parcel": "p1"}},
        {"op": "recall", "args": {"parcel": 7}}, {"op": "recall", "args": {"parcel": {"key": "p1"}}}]));
    assert_eq!(foreseen, turn::Foreseen::default());
}
