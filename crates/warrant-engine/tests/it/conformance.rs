//! The harness the retail and airline conformance tests share: a mutation of a write (other
//! arguments, and changes to rows made beside the engine before the act and undone after it),
//! the verdict, reason code and rule it must be refused with, and the tally of mutations tried
//! and refused as expected, by kind and by rule.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, TurnResult};
use warrant_store::prelude::*;
use warrant_store::{Commit, CommitOutcome, RecordWrite, SqliteStore, TurnRow};

/// Decides a turn request, which must be valid.
pub fn decide<S: Store>(engine: &mut Engine<S>, request: &Value) -> TurnResponse {
    match engine.turn(&request.to_string()).expect("the engine runs") {
        TurnResult::Decided { response, .. } => response,
        TurnResult::Rejected(error) => panic!("request rejected: {error}\n{request}"),
    }
}

/// The verdict and the codes and rules of the first act.
pub fn verdict(response: &TurnResponse) -> (Verdict, Vec<String>, Vec<String>) {
    let act = response.acts.first().expect("one act");
    (
        act.verdict,
        act.reasons.iter().map(|r| r.code.as_str().to_owned()).collect(),
        act.reasons.iter().flat_map(|r| r.policies.clone()).collect(),
    )
}

/// Overwrites a row directly (a change made outside the gate, e.g. by the deployment).
pub fn overwrite(store: &mut SqliteStore, table: &str, key: &str, change: impl FnOnce(&mut Value), tag: &str) {
    let record = store.record(table, key).unwrap().unwrap();
    let mut value = record.value.clone();
    change(&mut value);
    let commit = Commit {
        turn: TurnRow {
            conversation: "fixture".into(),
            turn: format!("fixture-{tag}"),
            request: json!({}).into(),
            response: json!({}).into(),
            replay: json!({}).into(),
        },
        writes: vec![RecordWrite { table: table.into(), key: key.into(), expected_revision: record.revision, value }],
        effects: vec![],
        events: vec![],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        reads: vec![],
        holds: vec![],
    };
    assert!(matches!(store.commit(&commit).unwrap(), CommitOutcome::Committed { .. }));
}

/// A change to a row (table, key, change) made before a mutated act and undone after it.
pub type DataChange = (String, String, Box<dyn Fn(&mut Value)>);

/// What a mutation must be answered with: one of `verdicts`, the reason `code` among the act's
/// reasons, and where the refusal is by policy, the `rule` among the rules named.
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    pub verdicts: &'static [Verdict],
    pub code: &'static str,
    pub rule: Option<&'static str>,
}

/// A mutated version of a write that breaks one rule.
pub struct Mutation {
    pub name: &'static str,
    pub kwargs: Map<String, Value>,
    pub data: Vec<DataChange>,
    pub expect: Expect,
}

impl Mutation {
    /// A mutation of the arguments alone, refused by structure with `code`.
    pub fn refused(name: &'static str, kwargs: Map<String, Value>, code: &'static str) -> Mutation {
        Mutation { name, kwargs, data: vec![], expect: Expect { verdicts: &[Verdict::Refuse], code, rule: None } }
    }

    /// A mutation of the arguments alone, forbidden by the policy `rule`.
    pub fn forbidden(name: &'static str, kwargs: Map<String, Value>, rule: &'static str) -> Mutation {
        let expect = Expect { verdicts: &[Verdict::Refuse], code: "forbidden_by_policy", rule: Some(rule) };
        Mutation { name, kwargs, data: vec![], expect }
    }

    /// The same mutation, with the row `key` of `table` changed by `change` before the act.
    pub fn with_data(mut self, table: &str, key: &str, change: impl Fn(&mut Value) + 'static) -> Mutation {
        self.data.push((table.to_owned(), key.to_owned(), Box::new(change)));
        self
    }

    /// The same mutation, answered with any of `verdicts`.
    pub fn answered(mut self, verdicts: &'static [Verdict]) -> Mutation {
        self.expect.verdicts = verdicts;
        self
    }
}

/// Decides a mutated act with `decide`: its data changes made beside the engine (through
/// `outside`, on the same file) before it, undone after it in reverse order.
pub fn attempt<S: Store>(
    engine: &mut Engine<S>,
    outside: &mut SqliteStore,
    mutation: &Mutation,
    turn: &str,
    decide: impl FnOnce(&mut Engine<S>, &Map<String, Value>) -> TurnResponse,
) -> TurnResponse {
    let mut saved = Vec::new();
    for (c, (table, key, change)) in mutation.data.iter().enumerate() {
        saved.push((table, key, engine.record(table, key).unwrap().map(|r| r.value).unwrap_or(Value::Null)));
        overwrite(outside, table, key, |v| change(v), &format!("{turn}-a{c}"));
    }
    let response = decide(engine, &mutation.kwargs);
    for (c, (table, key, value)) in saved.into_iter().enumerate().rev() {
        overwrite(outside, table, key, |v| *v = value, &format!("{turn}-b{c}"));
    }
    response
}

/// Mutations tried and answered as expected, by kind, with the rules that refused them.
#[derive(Default)]
pub struct Tally {
    /// By kind of mutation: (tried, answered as expected).
    pub kinds: BTreeMap<&'static str, (usize, usize)>,
    /// By policy rule: mutations refused naming it as expected.
    pub rules: BTreeMap<&'static str, usize>,
    /// What went otherwise, one line each.
    pub failures: Vec<String>,
}

impl Tally {
    /// Records the answer to `mutation`; none may authorize an effect.
    pub fn record(&mut self, mutation: &Mutation, response: &TurnResponse, turn: &str) {
        let (v, codes, policies) = verdict(response);
        let Expect { verdicts, code, rule } = mutation.expect;
        let ok = verdicts.contains(&v)
            && codes.iter().any(|c| c == code)
            && rule.is_none_or(|p| policies.iter().any(|q| q == p));
        self.count(mutation.name, ok);
        if let (true, Some(rule)) = (ok, rule) {
            *self.rules.entry(rule).or_default() += 1;
        }
        if !ok {
            self.failures.push(format!(
                "{turn} `{}`: expected {verdicts:?} {code} {rule:?}, got {v:?} {codes:?} {policies:?} {:?}",
                mutation.name, response.acts[0].reasons
            ));
        }
        assert!(response.effects.is_empty(), "{turn}: a mutation authorized an effect");
    }

    /// Counts one mutation of kind `name`, answered as expected or not.
    pub fn count(&mut self, name: &'static str, ok: bool) {
        let entry = self.kinds.entry(name).or_default();
        entry.0 += 1;
        entry.1 += usize::from(ok);
    }

    /// Prints the kinds not in `apart` line by line and their total, which it returns as
    /// (tried, answered as expected).
    pub fn print(&self, apart: &[&str]) -> (usize, usize) {
        let mut total = (0, 0);
        for (name, (tried, held)) in self.kinds.iter().filter(|(name, _)| !apart.contains(name)) {
            println!("  {name}: {held} of {tried} refused or held with the rule's reason");
            total.0 += tried;
            total.1 += held;
        }
        println!("  mutations: {} of {} named their broken rule", total.1, total.0);
        total
    }

    /// (tried, answered as expected) of the kinds in `names`.
    pub fn of(&self, names: &[&str]) -> (usize, usize) {
        names.iter().filter_map(|n| self.kinds.get(n)).fold((0, 0), |(t, h), (tried, held)| (t + tried, h + held))
    }

    /// Fails naming every kind in `names` that was never tried.
    pub fn assert_tried(&self, names: &[&str]) {
        for name in names {
            assert!(self.kinds.get(name).is_some_and(|(tried, _)| *tried > 0), "no mutation `{name}` was tried");
        }
    }
}
