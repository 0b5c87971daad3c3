//! `warrant mcp` with real parts: the Python `mcp` package's `ClientSession` as the client, with
//! an elicitation callback playing the user (`tests/mcp/client.py`), and a downstream MCP
//! server over the retail data that counts what it performs (`examples/retail/retail_server.py`).
//! The Python comes from `WARRANT_MCP_PYTHON` or `target/mcp-venv` (scripts/test.sh makes it from
//! PyPI); without it these tests fail, naming the command that installs it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use warrant_core::turn::Verdict;
use warrant_engine::Engine;
use warrant_store::AnyStore;
use warrant_store::Precondition;

use crate::conformance::{Expect, Mutation, Tally, decide, verdict};
use crate::retail_cases::{BREAKS_A_PRECONDITION, WRITES, answer, data, mutations, request};
use crate::root;

/// The interpreter with the `mcp` package.
pub(crate) fn python() -> PathBuf {
    let path = std::env::var_os("WARRANT_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with the `mcp` package at {}: run the README's test command, scripts/test.sh (it installs crates/warrant-cli/tests/mcp/requirements.txt into target/mcp-venv), or set WARRANT_MCP_PYTHON",
        path.display()
    );
    path
}

/// One store and one downstream log, for gateway sessions run one after another.
struct Bench {
    dir: tempfile::TempDir,
    /// The downstream's URL, when it serves streamable HTTP instead of being the gateway's child.
    url: Option<String>,
    /// The contract the gateway is started with: the retail example's, or a variant of it.
    contract: PathBuf,
}

impl Bench {
    fn new() -> Bench {
        let contract = root().join("examples/retail/contract.toml");
        Bench { dir: tempfile::tempdir().unwrap(), url: None, contract }
    }

    /// A bench whose gateway runs the retail contract with `edits` made to its text (each
    /// `(from, to)` found exactly once), beside links to the retail policies and data.
    fn variant(edits: &[(&str, &str)]) -> Bench {
        let mut bench = Bench::new();
        let retail = root().join("examples/retail");
        let mut text = std::fs::read_to_string(retail.join("contract.toml")).unwrap();
        for (from, to) in edits {
            assert_eq!(text.matches(from).count(), 1, "`{from}` is in the retail contract once");
            text = text.replacen(from, to, 1);
        }
        let folder = bench.dir.path().join("contract");
        std::fs::create_dir(&folder).unwrap();
        for linked in ["data", "policies.cedar"] {
            std::os::unix::fs::symlink(retail.join(linked), folder.join(linked)).unwrap();
        }
        bench.contract = folder.join("contract.toml");
        std::fs::write(&bench.contract, text).unwrap();
        bench
    }

    fn store(&self) -> String {
        format!("sqlite:{}", self.dir.path().join("warrant.sqlite").display())
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("performed.jsonl")
    }

    /// What the downstream performed, in order.
    fn performed(&self) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(self.log()) else { return Vec::new() };
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// A session of `actor` making `calls`, the user answering confirmations with `decision`
    /// (`None`: a client without elicitation) and typing `words` into text forms.
    fn session(&self, actor: &str, decision: Option<&str>, words: Value, calls: Vec<Value>) -> Value {
        self.session_with(actor, decision, words, calls, &[], None)
    }

    fn session_with(
        &self,
        actor: &str,
        decision: Option<&str>,
        words: Value,
        calls: Vec<Value>,
        env: &[(&str, &str)],
        session: Option<&str>,
    ) -> Value {
        let retail = root().join("examples/retail");
        let mut command = vec![
            env!("CARGO_BIN_EXE_warrant").to_owned(),
            "mcp".into(),
            "--contract".into(),
            self.contract.display().to_string(),
            "--store".into(),
            self.store(),
            "--actor".into(),
            actor.into(),
        ];
        if let Some(session) = session {
            command.extend(["--session".to_owned(), session.to_owned()]);
        }
        match &self.url {
            Some(url) => command.extend(["--downstream-url".to_owned(), url.clone()]),
            None => command.extend([
                "--downstream-stdio".to_owned(),
                python().display().to_string(),
                root().join("examples/retail/retail_server.py").display().to_string(),
                retail.join("data").display().to_string(),
            ]),
        }
        let mut vars = json!({
            "RETAIL_DOWNSTREAM_LOG": self.log().display().to_string(),
            "PATH": std::env::var("PATH").unwrap_or_default(),
        });
        for (name, value) in env {
            vars[*name] = json!(value);
        }
        json!({"stdio": command, "env": vars, "decision": decision, "words": words, "calls": calls})
    }
}

/// Runs the client over `sessions`; one output per session.
pub(crate) fn run_client(dir: &Path, sessions: &[Value]) -> Vec<Value> {
    let plan = dir.join(format!("plan-{}.json", sessions.len()));
    std::fs::write(&plan, serde_json::to_string(sessions).unwrap()).unwrap();
    let output =
        Command::new(python()).arg(root().join("crates/warrant-cli/tests/mcp/client.py")).arg(&plan).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("client output: {e}\n{stderr}"))
}

/// Runs `sessions` (each on the bench it names), the benches split into as many parts as there
/// are cores (at most 4), each part by a client of its own, at the same time; one output per
/// session, in the order given. A bench's sessions are run one after another, in order.
fn run_clients_over(benches: &[Bench], sessions: &[(usize, Value)]) -> Vec<Value> {
    let parts = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 4);
    let calls = |plan: &Value| plan["calls"].as_array().map_or(0, Vec::len) + 1;
    let mut load = vec![0usize; benches.len()];
    for (b, plan) in sessions {
        load[*b] += calls(plan);
    }
    // The heaviest benches first, each to the part with the least work so far.
    let mut order: Vec<usize> = (0..benches.len()).collect();
    order.sort_by_key(|b| std::cmp::Reverse(load[*b]));
    let (mut part_of, mut work) = (vec![0; benches.len()], vec![0usize; parts]);
    for b in order {
        let lightest = (0..parts).min_by_key(|p| work[*p]).unwrap_or(0);
        part_of[b] = lightest;
        work[lightest] += load[b];
    }
    let mut outs: Vec<Option<Value>> = vec![None; sessions.len()];
    std::thread::scope(|scope| {
        let running: Vec<_> = (0..parts)
            .filter_map(|p| {
                let mine: Vec<usize> = (0..sessions.len()).filter(|s| part_of[sessions[*s].0] == p).collect();
                let first = *mine.first()?;
                let plans: Vec<Value> = mine.iter().map(|s| sessions[*s].1.clone()).collect();
                let dir = benches[sessions[first].0].dir.path();
                Some((mine, scope.spawn(move || run_client(dir, &plans))))
            })
            .collect();
        for (mine, client) in running {
            let part = client.join().expect("a client's thread panicked");
            assert_eq!(part.len(), mine.len(), "one output per session");
            for (s, out) in mine.into_iter().zip(part) {
                outs[s] = Some(out);
            }
        }
    });
    outs.into_iter().map(|out| out.expect("every session ran")).collect()
}

fn call(name: &str, arguments: &Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// Every effect the store holds, with its outcome.
fn outcomes(bench: &Bench) -> Vec<(String, Option<String>)> {
    let mut engine = Engine::builder().contract_file(&bench.contract).open(&bench.store()).unwrap();
    let mut found = Vec::new();
    for turn in engine.turns(0, 10_000).unwrap() {
        for view in engine.turn_effects(&turn.conversation, &turn.turn).unwrap() {
            found.push((view.op, view.outcome));
        }
    }
    found
}

/// The contract's writes: the tools that change records.
fn writes() -> Vec<String> {
    let setup = Engine::builder().contract_file(root().join("examples/retail/contract.toml")).prepare().unwrap();
    let defs = warrant_core::tools::definitions(setup.contract());
    defs.into_iter().filter(|d| !d.read_only).map(|d| d.name).collect()
}

fn json_file(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("examples/retail/data").join(name)).unwrap()).unwrap()
}

/// The actor of a write: the owner of its order, else the user it names, else the task's.
fn actor_of(orders: &BTreeMap<String, Value>, task: &Value, kwargs: &Value) -> String {
    let owner = kwargs["order_id"].as_str().and_then(|o| orders.get(o)).and_then(|o| o["user_id"].as_str());
    owner.or(kwargs["user_id"].as_str()).or(task["user_id"].as_str()).unwrap().to_owned()
}

/// What a planned call must be answered with.
enum Want {
    /// A mutation: refused with its reason code, naming its rule where it breaks a policy.
    Refused(Mutation),
    /// A write that breaks the benchmark's own precondition: refused naming `rule`.
    RefusedByTheBenchmark(&'static str),
    /// A write: put to the user, confirmed, forwarded once.
    Performed,
}

/// The rules a result's text names (`[rule a, b]`).
fn rules_named(text: &str) -> Vec<&str> {
    text.split("[rule ").skip(1).filter_map(|rest| rest.split(']').next()).flat_map(|r| r.split(", ")).collect()
}

/// The commands that change a row of the gateway's store as the system of record would (`warrant
/// records put` at the row's revision), made on `shadow` alike: `change` made, then undone.
fn row_changes(bench: &Bench, shadow: &mut Engine<AnyStore>, mutation: &Mutation) -> (Vec<Value>, Vec<Value>) {
    let put = |shadow: &mut Engine<AnyStore>, table: &str, key: &str, value: &Value| {
        let revision = shadow.record(table, key).unwrap().unwrap().revision;
        shadow.put_record(table, key, value, Precondition::IfMatch(revision)).unwrap();
        let argv = [
            env!("CARGO_BIN_EXE_warrant"),
            "records",
            "put",
            "--contract",
            &bench.contract.display().to_string(),
            "--store",
            &bench.store(),
            table,
            key,
            "--if-match",
            &revision.to_string(),
        ];
        json!({"argv": argv, "stdin": value.to_string()})
    };
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut saved = Vec::new();
    for (table, key, change) in &mutation.data {
        let value = shadow.record(table, key).unwrap().unwrap().value;
        let mut changed = value.clone();
        change(&mut changed);
        before.push(put(shadow, table, key, &changed));
        saved.push((table, key, value));
    }
    for (table, key, value) in saved.into_iter().rev() {
        after.push(put(shadow, table, key, &value));
    }
    (before, after)
}

/// Every write action of τ-bench retail's test tasks through the gateway, as the engine's
/// conformance test plays them (`retail_cases.rs`): before each write, its single-rule
/// mutations, each answered `isError` with the reason code and rule and never forwarded (rows
/// a mutation changes are changed by `warrant records put` beside the gateway, and changed
/// back); then the write itself, held, confirmed by the user's elicitation callback, forwarded
/// once, outcome `done`. A shadow engine on its own file follows the same writes, so each
/// mutation is made against the data as it stands at that point.
#[test]
fn tau_bench_writes_through_the_gateway_are_confirmed_by_the_user_forwarded_once_and_done() {
    let d = data();
    let tasks = json_file("tasks_test.json");
    let write_ops = writes();
    assert_eq!(write_ops.len(), 7);
    assert!(write_ops.iter().all(|w| WRITES.contains(&w.as_str())), "{write_ops:?}");
    let mut tally = Tally::default();
    let (mut writes, mut forwarded, mut refused_by_rule) = (0, 0, 0);
    let mut benches = Vec::new();
    let mut sessions: Vec<(usize, Value, Vec<Want>)> = Vec::new();
    for (t, task) in tasks.as_array().unwrap().iter().enumerate() {
        let actions: Vec<&Value> = task["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| WRITES.contains(&a["name"].as_str().unwrap()))
            .collect();
        if actions.is_empty() {
            continue;
        }
        // A fresh store per task; a session per run of one actor's writes, in order.
        let bench = Bench::new();
        let mut shadow = Engine::builder()
            .contract_file(&bench.contract)
            .open(&format!("sqlite:{}", bench.dir.path().join("shadow.sqlite").display()))
            .unwrap();
        let mut runs: Vec<(String, Vec<Value>, Vec<Want>)> = Vec::new();
        for (w, action) in actions.into_iter().enumerate() {
            let op = action["name"].as_str().unwrap();
            let kwargs = action["kwargs"].as_object().unwrap();
            let actor = actor_of(&d.orders, task, &action["kwargs"]);
            let (mut calls, mut wants) = (Vec::new(), Vec::new());
            if let Some((_, _, rule)) = BREAKS_A_PRECONDITION.iter().find(|(bt, bw, _)| *bt == t && *bw == w) {
                calls.push(call(op, &action["kwargs"]));
                wants.push(Want::RefusedByTheBenchmark(rule));
            } else {
                let order =
                    kwargs.get("order_id").and_then(Value::as_str).and_then(|id| shadow.record("order", id).unwrap());
                for mutation in mutations(&d, &actor, op, kwargs, order.map(|r| r.value)) {
                    let (before, after) = row_changes(&bench, &mut shadow, &mutation);
                    calls.push(json!({"name": op, "arguments": mutation.kwargs, "before": before, "after": after}));
                    wants.push(Want::Refused(mutation));
                }
                calls.push(call(op, &action["kwargs"]));
                wants.push(Want::Performed);
                // The shadow makes the write too, as the engine's conformance test does.
                let turn = format!("t{t}-w{w}");
                let held = decide(&mut shadow, &request(&actor, &turn, op, kwargs));
                let interaction = held.interactions[0].id.clone();
                let confirmed =
                    decide(&mut shadow, &answer(&actor, &format!("{turn}-yes"), &format!("c-{turn}"), &interaction));
                assert_eq!(verdict(&confirmed).0, Verdict::Commit, "the shadow commits task {t} write {w}");
            }
            match runs.last_mut() {
                Some((last, c, wn)) if *last == actor => {
                    c.extend(calls);
                    wn.extend(wants);
                }
                _ => runs.push((actor, calls, wants)),
            }
        }
        for (actor, calls, wants) in runs {
            sessions.push((benches.len(), bench.session(&actor, Some("confirm"), json!({}), calls), wants));
        }
        benches.push(bench);
    }
    // The benches share nothing, so their sessions run in a client per core, each client over
    // whole benches (a bench's sessions stay in order, one after another).
    let outs = run_clients_over(&benches, &sessions.iter().map(|(b, plan, _)| (*b, plan.clone())).collect::<Vec<_>>());
    let mut performed_per_bench = vec![0; benches.len()];
    for ((b, _, wants), out) in sessions.iter().zip(&outs) {
        assert_eq!(out["protocol"], "2025-11-25", "{out}");
        assert!(!out["tools"].as_array().unwrap().contains(&json!("transfer_to_human_agents")));
        let results = out["results"].as_array().unwrap_or_else(|| panic!("the session ended: {out}"));
        assert_eq!(results.len(), wants.len(), "{out}");
        for (result, want) in results.iter().zip(wants) {
            let text = result["text"].as_str().unwrap();
            let confirmations =
                result["asked"].as_array().unwrap().iter().filter(|f| **f == json!(["decision"])).count();
            match want {
                Want::Refused(mutation) => {
                    let Expect { verdicts, code, rule } = mutation.expect;
                    assert_eq!(verdicts, [Verdict::Refuse], "retail's mutations are refused");
                    let ok = result["is_error"] == true
                        && confirmations == 0
                        && text.contains(" refused;")
                        && text.contains(&format!("; {code}"))
                        && rule.is_none_or(|r| rules_named(text).contains(&r));
                    tally.count(mutation.name, ok);
                    if let (true, Some(rule)) = (ok, rule) {
                        *tally.rules.entry(rule).or_default() += 1;
                    }
                    if !ok {
                        tally.failures.push(format!("`{}`: expected {code} {rule:?}, got {result}", mutation.name));
                    }
                }
                Want::RefusedByTheBenchmark(rule) => {
                    assert!(result["is_error"] == true && rules_named(text) == [*rule], "{text}");
                    refused_by_rule += 1;
                }
                Want::Performed => {
                    writes += 1;
                    // Held, put to the user once in a form of the interaction's options.
                    let ok = result["is_error"] == false && text.ends_with(": performed") && confirmations == 1;
                    tally.count("no confirmation", ok);
                    if ok {
                        performed_per_bench[*b] += 1;
                        forwarded += 1;
                    } else {
                        tally.failures.push(format!("a write was not confirmed and performed: {result}"));
                    }
                }
            }
        }
    }
    for (bench, performed) in benches.iter().zip(&performed_per_bench) {
        let log = bench.performed();
        assert_eq!(log.len(), *performed, "the downstream performed each confirmed write once");
        let keys: BTreeSet<&str> = log.iter().map(|line| line["key"].as_str().unwrap()).collect();
        assert_eq!(keys.len(), log.len(), "each forward carries its own idempotency key");
        let effects = outcomes(bench);
        assert_eq!(effects.len(), log.len());
        assert!(effects.iter().all(|(_, outcome)| outcome.as_deref() == Some("done")), "{effects:?}");
    }
    println!(
        "mcp retail: {forwarded} of {writes} τ-bench writes confirmed by the user, forwarded once and done; {refused_by_rule} refused by the rule the benchmark enforces"
    );
    let total = tally.print(&[]);
    assert!(tally.failures.is_empty(), "{} failures:\n{}", tally.failures.len(), tally.failures.join("\n"));
    assert_eq!(writes + refused_by_rule, 178);
    assert_eq!(forwarded, 174);
    assert_eq!(refused_by_rule, BREAKS_A_PRECONDITION.len());
    assert_eq!(total, (1274, 1274), "every mutation named its broken rule through the gateway, as in the engine");
}

const FATIMA: &str = "fatima_johnson_7581";
const PENDING: &str = "#W5199551";
const PENDING_TOO: &str = "#W8665881";

fn cancel(order: &str, reason: &str) -> Value {
    call("cancel_pending_order", &json!({"order_id": order, "reason": reason}))
}

fn new_address(address1: &str) -> Value {
    call(
        "modify_pending_order_address",
        &json!({"order_id": PENDING_TOO, "address1": address1, "address2": "Suite 641", "city": "Austin",
                "state": "TX", "country": "USA", "zip": "78712"}),
    )
}

pub(crate) fn texts(out: &Value) -> Vec<(bool, String)> {
    let results = out["results"].as_array().unwrap_or_else(|| panic!("no results: {out}"));
    results.iter().map(|r| (r["is_error"] == true, r["text"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn single_rule_mutations_are_answered_is_error_with_the_rule_and_never_forwarded() {
    let orders = json_file("orders.json");
    let map = orders.as_object().unwrap();
    let (foreign, _) = map.iter().find(|(_, o)| o["user_id"] != FATIMA && o["status"] == "pending").unwrap();
    let (settled, _) = map.iter().find(|(_, o)| o["user_id"] == FATIMA && o["status"] != "pending").unwrap();
    let bench = Bench::new();
    let calls = vec![
        cancel(foreign, "no longer needed"),
        cancel(PENDING, "changed my mind"),
        cancel(settled, "no longer needed"),
        call("modify_pending_order_payment", &json!({"order_id": PENDING, "payment_method_id": "credit_card_0000000"})),
        call("transfer_to_human_agents", &json!({"summary": "help"})),
        call("get_order_details", &json!({"order_id": foreign})),
    ];
    let out = &run_client(bench.dir.path(), &[bench.session(FATIMA, Some("confirm"), json!({}), calls)])[0];
    let expected = [
        "unknown_record (field `args.order_id`)",
        "not_in_closed_set (field `args.reason`)",
        "[rule ",
        "not_a_member (field `args.payment_method_id`)",
        "unknown_operation (field `name`)",
        // A read passes through only after structure and policy: another user's order is none.
        "unknown_record (field `args.order_id`)",
    ];
    let got = texts(out);
    assert_eq!(got.len(), expected.len());
    for ((is_error, text), want) in got.iter().zip(expected) {
        assert!(is_error, "{text}");
        assert!(text.contains(want), "`{text}` does not name `{want}`");
    }
    assert!(out["elicitations"].as_array().unwrap().is_empty(), "nothing refused is put to the user: {out}");
    assert!(bench.performed().is_empty(), "a refused call is never forwarded");
}

#[test]
fn a_client_without_elicitation_never_causes_a_forward() {
    let bench = Bench::new();
    let calls = vec![cancel(PENDING, "no longer needed"), new_address("123 Elm Street")];
    let out = &run_client(bench.dir.path(), &[bench.session(FATIMA, None, json!({}), calls)])[0];
    let got = texts(out);
    assert!(got.iter().all(|(is_error, _)| *is_error), "{got:?}");
    let (_, held) = &got[0];
    assert!(held.contains("held; confirmation_required") && held.contains("interaction `"), "{held}");
    assert!(bench.performed().is_empty());
    assert!(outcomes(&bench).is_empty(), "nothing committed");
}

#[test]
fn a_model_supplied_text_value_reaches_the_downstream_only_as_the_user_gave_it() {
    let bench = Bench::new();
    let typed = bench.session(
        FATIMA,
        Some("confirm"),
        json!({"address1": "77 Birch Road"}),
        vec![new_address("123 Elm Street")],
    );
    let declined = bench.session(FATIMA, Some("decline"), json!({}), vec![cancel(PENDING, "no longer needed")]);
    let outs = run_client(bench.dir.path(), &[typed, declined]);
    let (is_error, text) = &texts(&outs[0])[0];
    assert!(!is_error, "{text}");
    let forms: Vec<&Value> = outs[0]["elicitations"].as_array().unwrap().iter().collect();
    assert_eq!(forms.len(), 2, "the words, then the confirmation: {forms:?}");
    assert!(forms[1]["message"].as_str().unwrap().contains("address1: 77 Birch Road"), "{forms:?}");
    let performed = bench.performed();
    assert_eq!(performed.len(), 1);
    assert_eq!(performed[0]["arguments"]["address1"], "77 Birch Road", "the user's words, not the model's");
    let (is_error, text) = &texts(&outs[1])[0];
    assert!(*is_error && text.contains("declined_by_user"), "{text}");
    assert_eq!(bench.performed().len(), 1, "a declined act is never forwarded");
}

#[test]
fn a_gateway_killed_between_commit_and_forward_performs_nothing_twice_and_loses_nothing() {
    // Where the gateway dies, what the downstream performed, and the outcome recorded after the
    // restart: a commit never claimed is forwarded by the start-up sweep, once; a forward
    // claimed and cut off may or may not have been performed, so it stays `unknown` and is
    // never forwarded again.
    let cases = [("before_claim", 1, "done"), ("before_forward", 0, "unknown"), ("after_forward", 1, "unknown")];
    for (failpoint, performed, outcome) in cases {
        let bench = Bench::new();
        let calls = || vec![cancel(PENDING, "no longer needed")];
        let session = Some("mcp-kill-test");
        let env = [("WARRANT_MCP_FAILPOINT", failpoint)];
        let killed = bench.session_with(FATIMA, Some("confirm"), json!({}), calls(), &env, session);
        // The restart alone, with no call from the client, settles what the sweep can.
        let restarted = bench.session_with(FATIMA, Some("confirm"), json!({}), vec![], &[], session);
        let outs = run_client(bench.dir.path(), &[killed, restarted]);
        assert!(outs[0].get("error").is_some(), "{failpoint}: the gateway died under the call: {}", outs[0]);
        assert!(outs[1].get("error").is_none(), "{failpoint}: {}", outs[1]);
        assert_eq!(bench.performed().len(), performed, "{failpoint}: performed: {:?}", bench.performed());
        // The request sent again is answered from the record, and forwards nothing.
        let again = bench.session_with(FATIMA, Some("confirm"), json!({}), calls(), &[], session);
        let out = &run_client(bench.dir.path(), &[again])[0];
        let (is_error, text) = &texts(out)[0];
        assert!(text.contains("`cancel_pending_order` was performed before") && text.contains(outcome), "{text}");
        assert_eq!(*is_error, outcome != "done", "{failpoint}: {text}");
        assert_eq!(bench.performed().len(), performed, "{failpoint}: performed again: {:?}", bench.performed());
        let recorded = vec![("cancel_pending_order".to_owned(), Some(outcome.to_owned()))];
        assert_eq!(outcomes(&bench), recorded, "{failpoint}");
        // Every MCP turn is on the replay record: decided again without the downstream.
        let store = bench.store();
        let contract = root().join("examples/retail/contract.toml").display().to_string();
        let replay = crate::warrant(&["replay", "--contract", &contract, "--store", &store], "");
        let said = crate::stdout(&replay);
        assert!(replay.status.success() && said.contains("0 verdicts changed"), "{said}");
        assert!(said.contains("2 turns replayed, 2 identical"), "{said}");
    }
}

/// `warrant mcp --listen` on a free port; killed when dropped.
pub(crate) struct HttpGateway {
    child: std::process::Child,
    /// The gateway's MCP endpoint.
    pub(crate) url: String,
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The retail gateway over `bench`'s store, its keys in `keys`, the retail downstream its child.
fn http_gateway(bench: &Bench, keys: &str) -> HttpGateway {
    let retail = root().join("examples/retail");
    let downstream = [
        "--downstream-stdio".to_owned(),
        python().display().to_string(),
        root().join("examples/retail/retail_server.py").display().to_string(),
        retail.join("data").display().to_string(),
    ];
    let log = bench.log().display().to_string();
    http_gateway_for(
        &retail.join("contract.toml"),
        &bench.store(),
        keys,
        &downstream,
        &[("RETAIL_DOWNSTREAM_LOG", &log)],
    )
}

/// `warrant mcp --listen` for `contract` over `store`, its keys in `keys`, in front of
/// `downstream` (its flags: `--downstream-url URL` or `--downstream-stdio CMD…`).
pub(crate) fn http_gateway_for(
    contract: &Path,
    store: &str,
    keys: &str,
    downstream: &[String],
    env: &[(&str, &str)],
) -> HttpGateway {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract"])
        .arg(contract)
        .args(["--store", store, "--listen", "127.0.0.1:0", "--keys", keys])
        .args(downstream)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "the gateway printed `{line}`");
    HttpGateway { child, url: line.trim().to_owned() }
}

/// Whether something listens on `port` of 127.0.0.1 within `seconds`.
pub(crate) fn listens(port: u16, seconds: u64) -> bool {
    (0..seconds * 10).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
}

pub(crate) fn tenant_key(keys: &str, actor: &str) -> String {
    let output = crate::warrant(&["tenant", "add", actor, "--store", keys], "");
    assert!(output.status.success(), "{}", crate::stderr(&output));
    crate::stdout(&output).trim().to_owned()
}

/// The retail gateway over HTTP, and the keys of two tenants: Fatima's and Sofia's.
fn two_tenants(bench: &Bench) -> (String, String, HttpGateway) {
    let keys = format!("sqlite:{}", bench.dir.path().join("keys").display());
    let fatima = tenant_key(&keys, FATIMA);
    let sofia = tenant_key(&keys, "sofia_rossi_8776");
    (fatima, sofia, http_gateway(bench, &keys))
}

#[test]
fn over_streamable_http_the_actor_is_the_keys_tenant_and_nothing_else() {
    let bench = Bench::new();
    let (fatima, sofia, gateway) = two_tenants(&bench);
    let session = |key: &str, calls: Vec<Value>| {
        json!({"url": gateway.url, "headers": {"Authorization": format!("Bearer {key}")}, "decision": "confirm",
               "calls": calls})
    };
    let forged = format!("wrt_{FATIMA}.{}", "0".repeat(64));
    let outs = run_client(
        bench.dir.path(),
        &[
            session(&fatima, vec![cancel(PENDING, "no longer needed")]),
            session(&sofia, vec![cancel(PENDING_TOO, "no longer needed")]),
            session(&forged, vec![cancel(PENDING_TOO, "no longer needed")]),
            json!({"url": gateway.url, "decision": "confirm", "calls": [cancel(PENDING_TOO, "no longer needed")]}),
        ],
    );
    assert_eq!(outs[0]["protocol"], "2025-11-25");
    // The retail contract declares no resources or prompts (`[mcp]`): tools, and the logging and
    // completion every gateway passes through.
    assert_eq!(outs[0]["capabilities"], json!(["completions", "logging", "tools"]), "{}", outs[0]);
    let (is_error, text) = &texts(&outs[0])[0];
    assert!(!is_error && text.ends_with(": performed"), "{text}");
    // Sofia's key decides for Sofia: Fatima's order does not exist for her.
    let (is_error, text) = &texts(&outs[1])[0];
    assert!(*is_error && text.contains("unknown_record (field `args.order_id`)"), "{text}");
    assert!(outs[2].get("error").is_some() && outs[3].get("error").is_some(), "{outs:?}");
    assert_eq!(bench.performed().len(), 1, "only Fatima's confirmed call was performed");
    let contract = root().join("examples/retail/contract.toml");
    let mut engine = Engine::builder().contract_file(contract).open(&bench.store()).unwrap();
    let turns = engine.turns(0, 100).unwrap();
    assert!(turns.iter().all(|t| t.conversation.starts_with("mcp-")), "a session is a conversation");
    let actors: BTreeSet<&str> = turns.iter().filter_map(|t| t.request["actor"].as_str()).collect();
    assert_eq!(actors, BTreeSet::from([FATIMA, "sofia_rossi_8776"]));
}

#[test]
fn a_downstream_at_a_url_is_reached_over_streamable_http() {
    let mut bench = Bench::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(python())
        .arg(root().join("examples/retail/retail_server.py"))
        .arg(root().join("examples/retail/data"))
        .args(["--http", &port.to_string()])
        .env("RETAIL_DOWNSTREAM_LOG", bench.log())
        .spawn()
        .unwrap();
    // The Python server takes about 10 s to start on a machine busy compiling.
    let up = listens(port, 60);
    bench.url = Some(format!("http://127.0.0.1:{port}/mcp"));
    let plan = bench.session(FATIMA, Some("confirm"), json!({}), vec![cancel(PENDING, "no longer needed")]);
    let outs = if up { run_client(bench.dir.path(), &[plan]) } else { Vec::new() };
    let _ = server.kill();
    let _ = server.wait();
    assert!(up, "the downstream did not listen on {port}");
    let (is_error, text) = &texts(&outs[0])[0];
    assert!(!is_error && text.ends_with(": performed"), "{text}");
    assert_eq!(bench.performed().len(), 1);
    assert_eq!(outcomes(&bench), vec![("cancel_pending_order".to_owned(), Some("done".to_owned()))]);
}

#[test]
fn an_http_session_is_bound_to_the_key_that_opened_it() {
    let bench = Bench::new();
    let (fatima, sofia, gateway) = two_tenants(&bench);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::blocking::Client::new();
    let post = |key: &str, session: Option<&str>, body: Value| {
        let mut request = http
            .post(&gateway.url)
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send().unwrap()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let opened = post(&fatima, None, initialize);
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&fatima, Some(&session), initialized).status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Another tenant's key in Fatima's session: refused before the gateway sees the request.
    let stolen = post(&sofia, Some(&session), list.clone());
    assert_eq!(stolen.status(), 403);
    let said: Value = stolen.json().unwrap();
    assert_eq!(said["error"]["code"], "unauthorized", "{said}");
    assert!(said["error"]["message"].as_str().unwrap().contains(&session), "{said}");
    // A session the gateway never opened, under a valid key: refused the same way.
    assert_eq!(post(&fatima, Some("a-session-never-opened"), list.clone()).status(), 403);
    assert_eq!(post(&fatima, Some(&session), list).status(), 200, "the key that opened it goes on");
}

#[test]
fn a_call_the_client_cancels_while_the_user_is_asked_commits_nothing() {
    let bench = Bench::new();
    let log = bench.dir.path().join("gateway.log");
    let calls = vec![cancel(PENDING, "no longer needed"), call("get_order_details", &json!({"order_id": PENDING}))];
    let mut plan = bench.session(FATIMA, Some("confirm"), json!({}), calls);
    plan["cancel_after"] = json!(1.0);
    plan["server_log"] = json!(log.display().to_string());
    let out = &run_client(bench.dir.path(), &[plan])[0];
    assert_eq!(out["results"][0]["cancelled"], true, "{out}");
    assert_eq!(out["elicitations"][0]["fields"], json!(["decision"]), "the user was asked: {out}");
    // The gateway stopped waiting for the user when the client cancelled, and went on.
    assert_eq!(out["results"][1]["is_error"], false, "{out}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("the client cancelled `cancel_pending_order` while the user was asked"), "{said}");
    assert!(bench.performed().is_empty(), "a cancelled call is never forwarded");
    let read = vec![("get_order_details".to_owned(), Some("done".to_owned()))];
    assert_eq!(outcomes(&bench), read, "the cancelled write committed nothing");
}

/// The retail contract's cancellation and address change with a confirmation copy each.
const COPIES: [(&str, &str); 2] = [
    (
        "name = \"cancel_pending_order\"\nfrom = [\"tool_call\"]\nconsequential = true\n",
        "name = \"cancel_pending_order\"\nfrom = [\"tool_call\"]\nconsequential = true\nconfirm = \"Cancel order {order_id} ({reason})? Its payment is refunded.\"\n",
    ),
    (
        "name = \"modify_pending_order_address\"\nfrom = [\"tool_call\"]\nconsequential = true\n",
        "name = \"modify_pending_order_address\"\nfrom = [\"tool_call\"]\nconsequential = true\nconfirm = \"Ship order {order_id} to {address1}, {address2}, {city}, {state} {zip}, {country}?\"\n",
    ),
];

/// The elicitation messages of one session's confirmations, in order.
fn confirmations(out: &Value) -> Vec<String> {
    let forms = out["elicitations"].as_array().unwrap();
    forms.iter().filter(|e| e["fields"] == json!(["decision"])).map(|e| e["message"].as_str().unwrap().into()).collect()
}

#[test]
fn a_held_act_is_put_to_the_user_with_the_contract_s_copy_and_the_exact_arguments() {
    let bench = Bench::variant(&COPIES);
    let calls = vec![new_address("123 Elm Street"), cancel(PENDING, "no longer needed")];
    let plan = bench.session(FATIMA, Some("confirm"), json!({"address1": "77 Birch Road"}), calls);
    let out = &run_client(bench.dir.path(), &[plan])[0];
    assert!(texts(out).iter().all(|(is_error, text)| !is_error && text.ends_with(": performed")), "{out}");
    // What the user typed, not what the model sent, in the copy.
    let address = "Ship order #W8665881 to 77 Birch Road, Suite 641, Austin, TX 78712, USA?\n\
        - address1: 77 Birch Road\n- address2: Suite 641\n- city: Austin\n- country: USA\n\
        - order_id: #W8665881\n- state: TX\n- zip: 78712";
    let cancelled = "Cancel order #W5199551 (no longer needed)? Its payment is refunded.\n\
        - order_id: #W5199551\n- reason: no longer needed";
    assert_eq!(confirmations(out), [address, cancelled]);
    let performed = bench.performed();
    assert_eq!(performed.len(), 2);
    assert_eq!(performed[0]["arguments"]["address1"], "77 Birch Road", "the value shown is the value sent");
}

/// The retail contract with the cancellation's reason an enum the user must have said.
const STATED_REASON: [(&str, &str); 1] = [(
    "args.reason = { kind = \"enum\", values = [\"no longer needed\", \"ordered by mistake\"] }",
    "args.reason = { kind = \"enum\", values = [\"no longer needed\", \"ordered by mistake\"], evidence = true }",
)];

#[test]
fn an_enum_the_user_must_have_said_is_picked_by_the_user_from_its_closed_values() {
    let mut edits = STATED_REASON.to_vec();
    edits.extend(COPIES);
    let model_said = cancel(PENDING, "no longer needed");
    let picked = json!({"reason": "ordered by mistake"});

    // With a model to check the user's words: the user's pick, not the model's, is what is
    // checked, confirmed and performed.
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = std::sync::Arc::clone(&asked);
    let base = crate::serve::model_endpoint_with(move |request| seen.lock().unwrap().push(request.clone()));
    let bench = Bench::variant(&edits);
    let model =
        [("WARRANT_MODEL_BASE_URL", base.as_str()), ("WARRANT_MODEL", "smollm2"), ("WARRANT_MODEL_KEY", "sk-x")];
    let plan = bench.session_with(FATIMA, Some("confirm"), picked.clone(), vec![model_said.clone()], &model, None);
    let out = &run_client(bench.dir.path(), &[plan])[0];
    let (is_error, text) = &texts(out)[0];
    assert!(!is_error && text.ends_with(": performed"), "{text}");
    let form = &out["elicitations"][0];
    assert_eq!(form["fields"], json!(["reason"]), "{out}");
    assert_eq!(form["schema"]["reason"]["enum"], json!(["no longer needed", "ordered by mistake"]), "{out}");
    assert_eq!(form["schema"]["reason"]["default"], "no longer needed", "the model's value, only offered");
    assert_eq!(
        confirmations(out),
        [
            "Cancel order #W5199551 (ordered by mistake)? Its payment is refunded.\n- order_id: #W5199551\n- reason: ordered by mistake"
        ]
    );
    assert_eq!(bench.performed()[0]["arguments"]["reason"], "ordered by mistake");
    let questions = asked.lock().unwrap().clone();
    assert!(!questions.is_empty(), "the user's words were checked");
    for question in &questions {
        assert_eq!(question["response_format"]["json_schema"]["name"], "value_stated", "{question}");
        let data = question["messages"][1]["content"].as_str().unwrap();
        assert!(data.contains(r#""value":"ordered by mistake""#), "{data}");
    }

    // Without a model the user's pick cannot be checked: asked, never forwarded. Without
    // elicitation there are no words of the user at all: asked, never forwarded.
    let bench = Bench::variant(&edits);
    let unchecked = bench.session(FATIMA, Some("confirm"), picked, vec![model_said.clone()]);
    let unasked = bench.session(FATIMA, None, json!({}), vec![model_said]);
    let outs = run_client(bench.dir.path(), &[unchecked, unasked]);
    for out in &outs {
        let (is_error, text) = &texts(out)[0];
        assert!(*is_error && text.contains("asked") && text.contains("(field `args.reason`)"), "{text}");
        assert!(confirmations(out).is_empty(), "{out}");
    }
    assert_eq!(outs[0]["elicitations"][0]["fields"], json!(["reason"]));
    assert!(bench.performed().is_empty(), "an unchecked reason is never forwarded");
    assert!(outcomes(&bench).is_empty(), "nothing committed");
}

#[test]
fn a_downstream_s_changed_tool_list_is_read_again_reported_and_passed_on() {
    let bench = Bench::new();
    let products = json_file("products.json");
    let product = products.as_object().unwrap().keys().next().unwrap().clone();
    let toggle = json!({"name": "get_product_details", "arguments": {"product_id": product}, "then_list": true});
    let log = bench.dir.path().join("gateway.log");
    let calls = vec![toggle.clone(), cancel(PENDING, "no longer needed"), toggle, cancel(PENDING, "no longer needed")];
    let env = [("RETAIL_DOWNSTREAM_TOGGLE_ON", product.as_str())];
    let mut plan = bench.session_with(FATIMA, Some("confirm"), json!({}), calls, &env, None);
    plan["server_log"] = json!(log.display().to_string());
    let out = &run_client(bench.dir.path(), &[plan])[0];
    let results = out["results"].as_array().unwrap();
    let tools = |value: &Value| -> BTreeSet<String> {
        value.as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect()
    };
    let before = tools(&out["tools"]);
    assert!(before.contains("cancel_pending_order"), "{out}");
    // Withdrawn downstream: the gateway tells its client, no longer lists it, refuses a call.
    assert_eq!(results[0]["list_changed"], true, "{out}");
    let withdrawn = tools(&results[0]["tools_after"]);
    let mut expected = before.clone();
    expected.remove("cancel_pending_order");
    assert_eq!(withdrawn, expected, "the undeclared `wipe_all_orders` is not listed either");
    assert!(results[1]["is_error"] == true && results[1]["text"].as_str().unwrap().contains("unknown_operation"));
    // Offered again: listed again, and a call goes through.
    assert_eq!(results[2]["list_changed"], true, "{out}");
    assert_eq!(tools(&results[2]["tools_after"]), before);
    assert!(results[3]["text"].as_str().unwrap().ends_with(": performed"), "{out}");
    assert_eq!(bench.performed().len(), 1, "only the call made while it was offered");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("operation `cancel_pending_order` is not offered by the downstream: not listed"), "{said}");
    assert!(said.contains("downstream tool `wipe_all_orders` is not declared by the contract"), "{said}");
}

/// The request of every turn of `bench`'s store that puts `tool` on the record (`calls`).
fn noted(bench: &Bench, tool: &str) -> Vec<Value> {
    let mut engine = Engine::builder().contract_file(&bench.contract).open(&bench.store()).unwrap();
    let turns = engine.turns(0, 10_000).unwrap();
    let names = |t: &&warrant_store::StoredTurn| {
        t.request["calls"].as_array().is_some_and(|calls| calls.iter().any(|c| c["tool"] == tool))
    };
    turns.iter().filter(names).map(|t| t.request.clone()).collect()
}

#[test]
fn a_new_client_on_a_resumed_session_is_served_and_finishes_its_predecessor_s_held_write_once() {
    let bench = Bench::new();
    let session = Some("mcp-resumed");
    let read = |order: &str| call("get_order_details", &json!({"order_id": order}));
    // The first client reads (request id 2), then sends the write (id 3) and is gone before the
    // user answers: the call is cancelled, the interaction stays open.
    let mut first = bench.session_with(
        FATIMA,
        Some("confirm"),
        json!({}),
        vec![read(PENDING), cancel(PENDING, "no longer needed")],
        &[],
        session,
    );
    first["cancel_after"] = json!(2.0);
    // A new client on the same session counts its ids from the first again: id 2 is another
    // read now (a new call, never `turn_key_reused`), id 3 the same write, put to the user again.
    let calls = || vec![read(PENDING_TOO), cancel(PENDING, "no longer needed")];
    let second = bench.session_with(FATIMA, Some("confirm"), json!({}), calls(), &[], session);
    // A third sends both again: answered from the record, nobody asked, nothing forwarded again.
    let third = bench.session_with(FATIMA, Some("confirm"), json!({}), calls(), &[], session);
    let outs = run_client(bench.dir.path(), &[first, second, third]);
    assert_eq!(outs[0]["results"][1]["cancelled"], true, "{}", outs[0]);
    let second = texts(&outs[1]);
    assert!(!second[0].0 && second[0].1.contains(PENDING_TOO), "the new read is served: {:?}", second[0]);
    assert_eq!(second[1], (false, "cancel_pending_order: performed".to_owned()), "{}", outs[1]);
    assert_eq!(outs[1]["results"][1]["asked"], json!([["decision"]]), "the held write was put to the user again");
    let third = texts(&outs[2]);
    assert!(!third[1].0 && third[1].1.contains("was performed before") && third[1].1.contains("done"), "{third:?}");
    assert_eq!(outs[2]["results"][1]["asked"], json!([]), "a confirmed call sent again asks nobody");
    assert!(third.iter().all(|(_, text)| !text.contains("turn_key_reused")), "{third:?}");
    assert_eq!(bench.performed().len(), 1, "the held write, once: {:?}", bench.performed());
    let done = |op: &str| (op.to_owned(), Some("done".to_owned()));
    let mut got = outcomes(&bench);
    got.sort();
    assert_eq!(got, vec![done("cancel_pending_order"), done("get_order_details"), done("get_order_details")]);
    println!("mcp resumed session: 3 clients, {} performed, outcomes {got:?}", bench.performed().len());
}

#[test]
fn the_form_s_decline_and_cancel_are_the_user_s_answer_on_the_record_and_not_asked_again() {
    for (form, worded) in [("decline", "declined by the user"), ("cancel", "cancelled by the user")] {
        let bench = Bench::new();
        let session = Some("mcp-answered");
        let plan = || {
            let calls = vec![cancel(PENDING, "no longer needed")];
            bench.session_with(FATIMA, Some("confirm"), json!({}), calls, &[], session)
        };
        let mut answering = plan();
        answering["form"] = json!(form);
        // Sent again by a client whose user would confirm: the answer on the record stands.
        let again = plan();
        let outs = run_client(bench.dir.path(), &[answering, again]);
        for out in &outs {
            let (is_error, text) = &texts(out)[0];
            assert!(*is_error && text.contains(worded) && text.contains("declined_by_user"), "{form}: {text}");
        }
        assert_eq!(outs[1]["results"][0]["asked"], json!([]), "{form}: asked again: {}", outs[1]);
        assert!(bench.performed().is_empty(), "{form}: performed {:?}", bench.performed());
        let answers = noted(&bench, "warrant/elicitation");
        assert_eq!(answers.len(), 1, "{form}: one answer on the record: {answers:?}");
        assert_eq!(answers[0]["calls"][0]["args"]["action"], form, "{answers:?}");
        assert_eq!(answers[0]["answers"][0]["option"], "decline", "{answers:?}");
    }
}

#[test]
fn a_killed_downstream_is_started_again_on_the_record_and_nothing_is_left_unknown_or_done_twice() {
    let bench = Bench::new();
    let pid = bench.dir.path().join("downstream.pid");
    let log = bench.dir.path().join("gateway.log");
    // Kills the downstream and waits (up to 10 s) until it is gone (or a zombie its parent
    // has not reaped yet).
    let script = format!(
        "p=$(cat {pid}); kill $p; n=0; while kill -0 $p 2>/dev/null && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; do n=$((n+1)); [ $n -gt 200 ] && exit 1; sleep 0.05; done",
        pid = pid.display()
    );
    let kill = json!([{"argv": ["sh", "-c", script]}]);
    let mut second = cancel(PENDING_TOO, "ordered by mistake");
    second["before"] = kill.clone();
    let mut read = call("get_order_details", &json!({"order_id": PENDING}));
    read["before"] = kill;
    let calls = vec![cancel(PENDING, "no longer needed"), second, read];
    let pid_var = pid.display().to_string();
    let env = [("RETAIL_DOWNSTREAM_PID", pid_var.as_str())];
    let mut plan = bench.session_with(FATIMA, Some("confirm"), json!({}), calls, &env, Some("mcp-downstream-killed"));
    plan["server_log"] = json!(log.display().to_string());
    let out = &run_client(bench.dir.path(), &[plan])[0];
    let got = texts(out);
    assert_eq!(got[0], (false, "cancel_pending_order: performed".to_owned()), "{out}");
    assert_eq!(got[1], (false, "cancel_pending_order: performed".to_owned()), "after the kill: {out}");
    assert!(!got[2].0 && got[2].1.contains(PENDING), "a read after another kill: {out}");
    let performed = bench.performed();
    let keys: std::collections::BTreeSet<_> = performed.iter().map(|p| p["key"].to_string()).collect();
    assert_eq!((performed.len(), keys.len()), (2, 2), "each write once: {performed:?}");
    let mut recorded = outcomes(&bench);
    recorded.sort();
    let done = |op: &str| (op.to_owned(), Some("done".to_owned()));
    assert_eq!(recorded, vec![done("cancel_pending_order"), done("cancel_pending_order"), done("get_order_details")]);
    let reconnections = noted(&bench, "warrant/downstream_reconnected");
    assert_eq!(reconnections.len(), 2, "each reconnection on the record: {reconnections:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("connected again"), "{said}");
    println!(
        "mcp downstream killed twice: {} performed, {} reconnections, outcomes {recorded:?}",
        performed.len(),
        reconnections.len()
    );
}

#[test]
fn an_http_client_that_names_its_session_resumes_it_in_a_new_mcp_session() {
    let bench = Bench::new();
    let (fatima, sofia, gateway) = two_tenants(&bench);
    let plan = |key: &str, name: &str, calls: Vec<Value>| {
        json!({"url": gateway.url, "decision": "confirm", "calls": calls,
               "headers": {"Authorization": format!("Bearer {key}"), "warrant-session": name}})
    };
    // The first client is gone before its user answers; the next, in a new MCP session under
    // the same name, has the held write put to its user and performed once; a third is answered
    // from the record. Sofia's key with the same name is in a conversation of her own.
    let mut first = plan(&fatima, "desk", vec![cancel(PENDING, "no longer needed")]);
    first["cancel_after"] = json!(2.0);
    let second = plan(&fatima, "desk", vec![cancel(PENDING, "no longer needed")]);
    let third = plan(&fatima, "desk", vec![cancel(PENDING, "no longer needed")]);
    let sofias = plan(&sofia, "desk", vec![cancel(PENDING, "no longer needed")]);
    let bad = plan(&fatima, "a desk", vec![cancel(PENDING, "no longer needed")]);
    let outs = run_client(bench.dir.path(), &[first, second, third, sofias, bad]);
    assert_eq!(outs[0]["results"][0]["cancelled"], true, "{}", outs[0]);
    assert_eq!(texts(&outs[1])[0], (false, "cancel_pending_order: performed".to_owned()), "{}", outs[1]);
    let (is_error, text) = &texts(&outs[2])[0];
    assert!(!is_error && text.contains("was performed before"), "{text}");
    assert_eq!(outs[2]["results"][0]["asked"], json!([]), "{}", outs[2]);
    let (is_error, text) = &texts(&outs[3])[0];
    assert!(*is_error && text.contains("unknown_record"), "Sofia's own conversation: {text}");
    let (is_error, text) = &texts(&outs[4])[0];
    assert!(*is_error && text.contains("invalid_input (field `warrant-session`)"), "{text}");
    assert_eq!(bench.performed().len(), 1, "{:?}", bench.performed());
    let mut engine = Engine::builder().contract_file(&bench.contract).open(&bench.store()).unwrap();
    let conversations: BTreeSet<String> = engine.turns(0, 100).unwrap().into_iter().map(|t| t.conversation).collect();
    let expected = [format!("mcp-http-{FATIMA}-desk"), "mcp-http-sofia_rossi_8776-desk".to_owned()];
    assert_eq!(conversations, BTreeSet::from(expected), "named sessions are the tenants' conversations");
}

/// The retail contract's `cancel_pending_order` and `get_order_details` once more, as the
/// operations of a second server's tools of the same names.
fn warehouse_operations(contract: &str) -> String {
    let start = contract.find("[[operation]]\nname = \"cancel_pending_order\"").unwrap();
    let end = start + contract[start..].find("\n[[operation]]").unwrap();
    let cancel =
        contract[start..end].replace("name = \"cancel_pending_order\"", "name = \"warehouse_cancel_pending_order\"");
    let read = "[[operation]]\nname = \"warehouse_get_order_details\"\nfrom = [\"tool_call\"]\nresource = \"order_id\"\nargs.order_id = { kind = \"record\", table = \"order\" }\n";
    format!("{contract}\n{cancel}\n{read}")
}

#[test]
fn several_downstreams_each_operation_forwarded_only_to_its_own_server_and_one_down_fails_only_its_calls() {
    let bench = Bench::variant(&[]);
    let text = std::fs::read_to_string(&bench.contract).unwrap();
    std::fs::write(&bench.contract, warehouse_operations(&text)).unwrap();
    let dir = bench.dir.path();
    let (shop_log, warehouse_log, pid) =
        (dir.join("shop.jsonl"), dir.join("warehouse.jsonl"), dir.join("warehouse.pid"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut warehouse = Command::new(python())
        .arg(root().join("examples/retail/retail_server.py"))
        .args(["--http", &port.to_string()])
        .env("RETAIL_DOWNSTREAM_LOG", &warehouse_log)
        .env("RETAIL_DOWNSTREAM_PID", &pid)
        .spawn()
        .unwrap();
    let file = dir.join("downstreams.toml");
    let config = format!(
        "[[downstream]]\nname = \"shop\"\ncommand = [{python:?}, {server:?}]\nenv = {{ RETAIL_DOWNSTREAM_LOG = {log:?} }}\n\n[[downstream]]\nname = \"warehouse\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ntools = {{ warehouse_cancel_pending_order = \"cancel_pending_order\", warehouse_get_order_details = \"get_order_details\" }}\n",
        python = python().display().to_string(),
        server = root().join("examples/retail/retail_server.py").display().to_string(),
        log = shop_log.display().to_string(),
    );
    std::fs::write(&file, config).unwrap();
    let up = listens(port, 60);
    let kill = json!([{"argv": ["sh", "-c", format!("kill $(cat {})", pid.display())]}]);
    let mut down = call("warehouse_get_order_details", &json!({"order_id": PENDING}));
    down["before"] = kill;
    let calls = vec![
        cancel(PENDING, "no longer needed"),
        json!({"name": "warehouse_cancel_pending_order", "arguments": {"order_id": PENDING_TOO, "reason": "ordered by mistake"}}),
        call("warehouse_get_order_details", &json!({"order_id": PENDING})),
        down,
        call("get_order_details", &json!({"order_id": PENDING})),
    ];
    let mut plan = bench.session(FATIMA, Some("confirm"), json!({}), calls);
    let stdio = plan["stdio"].as_array_mut().unwrap();
    let at = stdio.iter().position(|a| a == "--downstream-stdio").unwrap();
    stdio.truncate(at);
    stdio.extend([json!("--downstreams"), json!(file.display().to_string())]);
    let outs = if up { run_client(dir, &[plan]) } else { Vec::new() };
    let _ = warehouse.kill();
    let _ = warehouse.wait();
    assert!(up, "the warehouse did not listen on {port}");
    let out = &outs[0];
    let listed: BTreeSet<&str> = out["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(listed.contains("cancel_pending_order") && listed.contains("warehouse_cancel_pending_order"), "{out}");
    assert!(listed.contains("warehouse_get_order_details") && listed.contains("get_user_details"), "{out}");
    let got = texts(out);
    assert_eq!(got[0], (false, "cancel_pending_order: performed".to_owned()), "{out}");
    assert_eq!(got[1], (false, "cancel_pending_order: performed".to_owned()), "{out}");
    assert!(!got[2].0 && got[2].1.contains(PENDING), "the warehouse's read: {out}");
    assert!(got[3].0, "the warehouse is down: its read fails: {out}");
    assert!(!got[4].0 && got[4].1.contains(PENDING), "the shop's read, with the warehouse down: {out}");
    let lines = |path: &Path| -> Vec<Value> {
        std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let (shop, store) = (lines(&shop_log), lines(&warehouse_log));
    assert_eq!(shop.len(), 1, "{shop:?}");
    assert_eq!(shop[0]["arguments"]["order_id"], PENDING);
    assert_eq!(store.len(), 1, "{store:?}");
    assert_eq!(
        (store[0]["tool"].as_str(), store[0]["arguments"]["order_id"].as_str()),
        (Some("cancel_pending_order"), Some(PENDING_TOO))
    );
    let mut recorded = outcomes(&bench);
    recorded.sort();
    let is = |op: &str, outcome: &str| (op.to_owned(), Some(outcome.to_owned()));
    assert_eq!(
        recorded,
        vec![
            is("cancel_pending_order", "done"),
            is("get_order_details", "done"),
            is("warehouse_cancel_pending_order", "done"),
            is("warehouse_get_order_details", "done"),
            is("warehouse_get_order_details", "failed"),
        ],
        "{out}"
    );
    println!(
        "mcp two downstreams: shop performed {}, warehouse performed {}, outcomes {recorded:?}",
        shop.len(),
        store.len()
    );
}

#[test]
fn a_bad_downstreams_file_is_refused_naming_its_line_and_field() {
    let bench = Bench::new();
    let file = bench.dir.path().join("downstreams.toml");
    std::fs::write(
        &file,
        "[[downstream]]\nname = \"shop\"\ncommand = [\"python\"]\nurl = \"http://127.0.0.1:1/mcp\"\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract"])
        .arg(&bench.contract)
        .args(["--store", &bench.store(), "--actor", FATIMA, "--downstreams"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("line 2: downstream `shop`, `url`: give `command` or `url`, not both"), "{said}");
}
