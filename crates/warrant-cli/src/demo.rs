//! `warrant demo`: the README's main job. It plays a scripted set of retail turns through the
//! gate on a fresh SQLite file and prints what was decided and why, readably, one scene for each
//! of the five rules as well as the acts. Every verdict it prints is the engine's, decided
//! against the bundled example's contract and data.
//!
//! The example is compiled into the binary and written to a temp folder, so the demo runs from
//! any folder and needs no network. The turns run with no model at all, so every semantic check
//! fails and asks; the outbound scenes have a stand-in model that answers only the gate's
//! coverage question, always "nothing unlisted", and fails every other question. A model's
//! answer can only take away, so neither can make anything happen.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use warrant_core::Contract;
use warrant_core::pointer::{self, TextPointer};
use warrant_engine::{Engine, ModelSource, OutboundResult, TurnResult, load_contract};
use warrant_model::{ChatAnswer, ChatRequest, Provider, ProviderError};
use warrant_store::{SqliteStore, Store};

use crate::Exit;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// The contract to play against; default: the bundled retail example.
    #[arg(long)]
    contract: Option<PathBuf>,
    /// The SQLite file to create (it must not exist); default: a new file in the temp folder.
    #[arg(long)]
    store: Option<PathBuf>,
}

/// The bundled retail example, as its files sit in `examples/retail`.
const RETAIL: &[(&str, &str)] = &[
    ("contract.toml", include_str!("../../../examples/retail/contract.toml")),
    ("policies.cedar", include_str!("../../../examples/retail/policies.cedar")),
    ("data/users.json", include_str!("../../../examples/retail/data/users.json")),
    ("data/orders.json", include_str!("../../../examples/retail/data/orders.json")),
    ("data/products.json", include_str!("../../../examples/retail/data/products.json")),
    ("data/NOTICE.md", include_str!("../../../examples/retail/data/NOTICE.md")),
    ("data/LICENSE", include_str!("../../../examples/retail/data/LICENSE")),
];

/// The English score of `examples/score-en`, for the clause gate's scene.
const SCORE_EN: &str = include_str!("../../../examples/score-en/contract.toml");

const ACTOR: &str = "yusuf_rossi_9620";

/// The demo's model: it answers the outbound gate's coverage question ("does the text claim
/// anything its claims list does not?") with "no", and nothing else. With it, a draft whose
/// claims are all backed goes out as written; without it, every draft on a path with that check
/// would go out as fallback copy. It cannot make anything happen: a model answer only takes away.
struct CoverageStandIn;

impl Provider for CoverageStandIn {
    fn complete(&self, request: &ChatRequest, _timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        if request.schema_name == warrant_core::check::ModelTask::ClaimsCoverage.name() {
            return Ok(ChatAnswer {
                content: json!({"unlisted_claim": "no"}).to_string(),
                prompt_tokens: 0,
                completion_tokens: 0,
            });
        }
        Err(ProviderError::NoRecording(format!("{} (the demo answers only claims_coverage)", request.schema_name)))
    }
}

fn request(turn: &str, user: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": "demo",
        "turn": turn,
        "actor": ACTOR,
        "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": user}],
        "acts": acts,
        "answers": answers,
    })
}

struct Player<'a, S: Store> {
    engine: &'a mut Engine<S>,
    held: Vec<String>,
}

impl<S: Store> Player<'_, S> {
    fn play(&mut self, title: &str, request: &Value) -> Result<Value, Exit> {
        println!("\n{title}");
        let text = request.to_string();
        let result = self.engine.turn(&text).map_err(|e| Exit::Input(e.to_string()))?;
        let response = result.to_json();
        match &result {
            TurnResult::Rejected(error) => {
                println!("  request refused whole: {} at `{}`: {}", error.code, error.field, error.message);
            }
            TurnResult::Decided { response: decided, repeated } => {
                if *repeated {
                    println!("  a turn seen before: its recorded result comes back and nothing runs again");
                }
                for act in &decided.acts {
                    let mut line = format!("  {} -> {}", act.op, format!("{:?}", act.verdict).to_lowercase());
                    for reason in &act.reasons {
                        line.push_str(&format!(" ({}", reason.code));
                        if let Some(field) = &reason.field {
                            line.push_str(&format!(" at `{field}`"));
                        }
                        if !reason.policies.is_empty() {
                            line.push_str(&format!(", rule {}", reason.policies.join(", ")));
                        }
                        if let Some(detail) = &reason.detail {
                            line.push_str(&format!(": {detail}"));
                        }
                        line.push(')');
                    }
                    if let Some(effect) = &act.effect {
                        line.push_str(&format!(", effect {effect}"));
                    }
                    println!("{line}");
                }
                for interaction in &decided.interactions {
                    println!(
                        "  asks the user to confirm: interaction {} (options {})",
                        interaction.id,
                        interaction.options.join(", ")
                    );
                    self.held.push(interaction.id.clone());
                }
                for finding in &decided.findings {
                    println!(
                        "  guard finding {} in {} mode: {:?} announces {} with no such call",
                        finding.reason,
                        format!("{:?}", finding.mode).to_lowercase(),
                        finding.text,
                        finding.tools.join(", ")
                    );
                }
                if let Some(reply) = &decided.reply {
                    let basis = reply.get("basis").and_then(Value::as_str).unwrap_or("?");
                    let text = reply.get("text").and_then(Value::as_str).unwrap_or("");
                    let reasons: Vec<&str> = reply
                        .get("reasons")
                        .and_then(Value::as_array)
                        .map(|all| all.iter().filter_map(|r| r.get("code").and_then(Value::as_str)).collect())
                        .unwrap_or_default();
                    let why = if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) };
                    println!("  the reply goes out {basis}{why}: {text:?}");
                }
            }
        }
        Ok(response)
    }

    /// The order's field at `pointer` (a JSON pointer), with the row's revision.
    fn order_field(&mut self, order: &str, pointer: &str) -> Result<String, Exit> {
        let record = self.engine.record("order", order).map_err(|e| Exit::Input(e.to_string()))?;
        Ok(record.map_or_else(
            || "missing".into(),
            |r| {
                let value = r.value.pointer(pointer).and_then(Value::as_str).unwrap_or("?");
                format!("{value} (revision {})", r.revision)
            },
        ))
    }

    fn order_status(&mut self, order: &str) -> Result<String, Exit> {
        self.order_field(order, "/status")
    }

    fn last_held(&self) -> String {
        self.held.last().cloned().unwrap_or_default()
    }

    /// One follow-up through the outbound gate on the `scheduled` path, as the scheduler clears
    /// it when it is due.
    fn follow_up(&mut self, title: &str, text: &str, claims: Value) -> Result<(), Exit> {
        println!("\n{title}");
        println!("  draft: {text:?}, claims {claims}");
        let outbound = json!({"conversation": "demo", "actor": ACTOR, "path": "scheduled", "at": "2026-11-29T18:00:00Z",
            "locale": "en-US", "draft": {"text": text, "claims": claims}});
        match self.engine.outbound(&outbound.to_string()).map_err(|e| Exit::Input(e.to_string()))? {
            OutboundResult::Rejected(error) => {
                println!("  request refused whole: {} at `{}`: {}", error.code, error.field, error.message);
            }
            OutboundResult::Cleared(run) => {
                let reasons: Vec<&str> = run.message.reasons().iter().map(|r| r.code.as_str()).collect();
                let basis = format!("{:?}", run.message.basis()).to_lowercase();
                let why = if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) };
                println!("  goes out {basis}{why}: {:?}", run.message.text());
            }
        }
        Ok(())
    }
}

/// Rule 1 on the bundled English score: whole sentences against authored clauses.
fn clause_gate() -> Result<(), Exit> {
    let contract = Contract::from_toml("examples/score-en/contract.toml", SCORE_EN)
        .map_err(|e| Exit::Input(format!("the bundled score does not load: {e}")))?;
    let kind = contract
        .kinds()
        .get("model_reply")
        .ok_or_else(|| Exit::Input("the bundled score has no `model_reply` kind".into()))?;
    println!("\nrule 1: a substring is not a speech act");
    println!("the clause gate of the bundled English score: a reply performs operations only when every");
    println!("one of its sentences is an authored clause or a passive one");
    for text in [
        "We can close this ticket now.",
        "Can we close this ticket now?",
        "She said we can close this ticket now.",
        "Thank you. We can close this ticket now.",
        "We can close this ticket now. Or not.",
    ] {
        let reading = contract.score().read(kind, text);
        let performed: Vec<&str> = reading.operations.iter().map(|o| o.clause.op()).collect();
        match (&reading.rejection, performed.is_empty()) {
            (None, false) => println!("  {text:?} -> {}", performed.join(", ")),
            (Some(rejection), _) => {
                let sentence = reading.rejected_sentence().unwrap_or_default();
                println!("  {text:?} -> nothing ({}: {sentence:?})", rejection.reason.as_str());
            }
            (None, true) => println!("  {text:?} -> nothing"),
        }
    }
    Ok(())
}

/// Writes the bundled example into `folder` and loads it from there.
fn bundled(folder: &Path) -> Result<(Contract, PathBuf), Exit> {
    for (name, text) in RETAIL {
        let path = folder.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
    }
    load_contract(&folder.join("contract.toml")).map_err(|e| Exit::Input(e.to_string()))
}

/// The words a pointer slices from `message`, as code slices them.
fn sliced(message: &str, from: u32, to: u32) -> String {
    let numbered = pointer::numbered(message);
    match pointer::resolve(&numbered, &TextPointer { entry: None, from, to, copy: None }) {
        Ok(resolved) => format!("{:?}", resolved.value),
        Err(e) => format!("no words ({e})"),
    }
}

pub(crate) fn run(args: &DemoArgs) -> Result<(), Exit> {
    let scratch = std::env::temp_dir().join(format!("warrant-demo-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let played = play(args, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    played
}

fn play(args: &DemoArgs, scratch: &Path) -> Result<(), Exit> {
    let path = match &args.store {
        Some(path) => {
            if path.exists() {
                return Err(Exit::Input(format!("`{}` exists; the demo starts from a fresh file", path.display())));
            }
            path.clone()
        }
        None => scratch.join("warrant.sqlite"),
    };
    let (contract, folder, shown) = match &args.contract {
        Some(file) => {
            let (contract, folder) = load_contract(file).map_err(|e| Exit::Input(e.to_string()))?;
            (contract, folder, file.display().to_string())
        }
        None => {
            let (contract, folder) = bundled(&scratch.join("retail"))?;
            (contract, folder, "the bundled retail example (τ-bench's retail domain)".to_owned())
        }
    };
    let open = || SqliteStore::open(&path).map_err(|e| Exit::Input(format!("store `{}`: {e}", path.display())));
    let builder = Engine::builder().contract(contract, folder);
    // The turns run with no model, whatever the environment names: the demo needs no network.
    let mut engine = builder.clone().model(ModelSource::None).build(open()?).map_err(|e| Exit::Input(e.to_string()))?;
    // The outbound scenes' engine, over the same file, with the stand-in model.
    let stand_in =
        ModelSource::Provider { provider: Arc::new(CoverageStandIn), model: "demo-coverage-stand-in".into() };
    let mut gate = builder.model(stand_in).build(open()?).map_err(|e| Exit::Input(e.to_string()))?;
    println!("warrant demo: {shown} against a fresh SQLite file {}", path.display());
    println!("the actor is {ACTOR}; every write needs the user's confirmation");
    println!("no network: the turns run with no model, so a semantic check cannot run and asks instead;");
    println!("the outbound scenes have a stand-in model that answers only the gate's coverage question");
    println!("(\"nothing unlisted\") and fails every other question; a model answer can only take away");

    clause_gate()?;

    println!("\nthe acts: structure, policy, confirmation, one commit");
    let mut p = Player { engine: &mut engine, held: Vec::new() };
    let cancel =
        json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    println!("\norder #W6247578 is {}", p.order_status("#W6247578")?);
    p.play(
        "1. the model proposes to cancel the pending order #W6247578",
        &request("t1", "Cancel #W6247578, I no longer need it.", cancel.clone(), json!([])),
    )?;
    let confirm = json!([{"interaction": p.last_held(), "option": "confirm"}]);
    p.play("2. the user confirms by option id", &request("t2", "Yes, go ahead.", json!([]), confirm.clone()))?;
    println!("  order #W6247578 is now {}", p.order_status("#W6247578")?);
    p.play(
        "3. the same turn arrives again (a retry with the same idempotency key)",
        &request("t2", "Yes, go ahead.", json!([]), confirm),
    )?;
    println!("  order #W6247578 is still {}", p.order_status("#W6247578")?);
    p.play(
        "4. the model proposes the same cancellation again: the gate sees the committed change",
        &request("t4", "Cancel it again.", cancel, json!([])),
    )?;
    p.play(
        "5. the model proposes to cancel another customer's order: to this customer it does not exist",
        &request(
            "t5",
            "Cancel #W2611340.",
            json!([{"op": "cancel_pending_order", "args": {"order_id": "#W2611340", "reason": "ordered by mistake"}}]),
            json!([]),
        ),
    )?;
    p.play(
        "6. a reason outside the closed set",
        &request(
            "t6",
            "Cancel #W4776164.",
            json!([{"op": "cancel_pending_order", "args": {"order_id": "#W4776164", "reason": "changed my mind"}}]),
            json!([]),
        ),
    )?;
    p.play(
        "7. an exchange for an item of another product",
        &request(
            "t7",
            "Exchange my keyboard for the blue T-shirt.",
            json!([{"op": "exchange_delivered_order_items", "args": {"order_id": "#W2378156", "item_ids": ["1151293680"], "new_item_ids": ["9612497925"], "payment_method_id": "credit_card_9513926"}}]),
            json!([]),
        ),
    )?;
    p.play(
        "8. a refund to a payment method that is not the customer's",
        &request(
            "t8",
            "Return the item of #W6679257.",
            json!([{"op": "return_delivered_order_items", "args": {"order_id": "#W6679257", "item_ids": ["5996159312"], "payment_method_id": "gift_card_1725971"}}]),
            json!([]),
        ),
    )?;
    p.play(
        "9. the same return to the card the order was paid with",
        &request(
            "t9",
            "Return the item of #W6679257 to my credit card.",
            json!([{"op": "return_delivered_order_items", "args": {"order_id": "#W6679257", "item_ids": ["5996159312"], "payment_method_id": "credit_card_9513926"}}]),
            json!([]),
        ),
    )?;
    let confirm = json!([{"interaction": p.last_held(), "option": "confirm"}]);
    p.play("10. the user confirms", &request("t10", "Yes.", json!([]), confirm))?;
    println!("  order #W6679257 is now {}", p.order_status("#W6679257")?);

    println!("\nrule 5: point, do not quote");
    let user = "Ship #W4776164 to 12 Elm St, Springfield, IL, USA, 62701 please.";
    let address = json!({
        "order_id": "#W4776164",
        "address1": {"ptr": [4, 6], "copy": "12 Elm St"},
        "address2": "",
        "city": {"ptr": [7, 7]},
        "state": {"ptr": [8, 8]},
        "country": {"ptr": [9, 9]},
        "zip": {"ptr": [10, 10]},
    });
    println!("the user's message as the model sees it: {}", pointer::numbered(user).render());
    println!(
        "the model points at words; code slices them: address1 = {}, city = {}, state = {}, zip = {}",
        sliced(user, 4, 6),
        sliced(user, 7, 7),
        sliced(user, 8, 8),
        sliced(user, 10, 10)
    );
    p.play(
        "11. a new address, each part a pointer into the user's own words",
        &request("t11", user, json!([{"op": "modify_pending_order_address", "args": address}]), json!([])),
    )?;
    let decline = json!([{"interaction": p.last_held(), "option": "decline"}]);
    p.play("12. the user declines", &request("t12", "No, leave it.", json!([]), decline))?;

    println!("\nrule 4: models judge language; code checks structure");
    let user = "Ship #W4776164 to 12 Elm St, IL, USA, 62701 please.";
    let unstated = json!({
        "order_id": "#W4776164",
        "address1": {"ptr": [4, 6], "copy": "12 Elm St"},
        "address2": "",
        "city": "Springfield",
        "state": {"ptr": [7, 7]},
        "country": {"ptr": [8, 8]},
        "zip": {"ptr": [9, 9]},
    });
    p.play(
        "13. a city the user never gave, proposed as a plain value: whether and where the user said it is a \
         question for a model (`locate`), and none answers it here, so the user is asked",
        &request("t13", user, json!([{"op": "modify_pending_order_address", "args": unstated}]), json!([])),
    )?;
    println!("  nothing is written: order #W4776164 still ships to {}", p.order_field("#W4776164", "/address/city")?);

    let mut p = Player { engine: &mut gate, held: Vec::new() };
    println!("\nrule 2: guards earn authority");
    let mut announcing = request("t14", "Where is my order?", json!([]), json!([]));
    if let Some(map) = announcing.as_object_mut() {
        map.insert("draft".into(), json!({"text": "Let me check your order.", "claims": []}));
    }
    p.play(
        "14. the draft reply announces a lookup that no tool call of the turn made; the guard is declared \
         `enforce`, but no audited record has promoted it, so it observes (the reply itself claims nothing \
         the record backs, so the live path's fallback copy goes out)",
        &announcing,
    )?;

    println!("\nrule 3: the record is authority, not the transcript");
    p.follow_up(
        "15. seed 003: a scheduled follow-up states a payment link that nobody created",
        "Here is the payment link for your order. It's attached below.",
        json!([{"claim": "payment_link_sent", "order": "#W6247578"}]),
    )?;
    p.follow_up(
        "16. a scheduled follow-up states the cancellation committed in step 2, which the order's record backs",
        "Your order #W6247578 is cancelled.",
        json!([{"claim": "order_cancelled", "order": "#W6247578"}]),
    )?;

    let mut p = Player { engine: &mut engine, held: Vec::new() };
    let mut broken = request("t17", "Cancel it.", json!([]), json!([]));
    if let Some(map) = broken.as_object_mut() {
        map.insert("tool".into(), json!("x"));
    }
    println!("\nand the wire format");
    p.play("17. a request with a field the wire format does not have", &broken)?;

    let report = p.engine.replay().map_err(|e| Exit::Input(e.to_string()))?;
    println!(
        "\nreplay of the stored turns from their recorded facts: {} turns, {} identical, {} verdicts changed",
        report.turns,
        report.identical,
        report.changes.len()
    );
    Ok(())
}
