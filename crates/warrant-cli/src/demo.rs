//! `warrant demo`: the README's main job. It plays a scripted set of retail turns through the
//! gate on a fresh SQLite file and prints what was decided and why, readably. Every verdict it
//! prints is the engine's, decided against the bundled example's contract and data.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use warrant_engine::{Engine, TurnResult};
use warrant_store::{SqliteStore, Store};

use crate::Exit;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// The contract to play against.
    #[arg(long, default_value = "examples/retail/contract.toml")]
    contract: PathBuf,
    /// The SQLite file to create (it must not exist); default: a new file in the temp folder.
    #[arg(long)]
    store: Option<PathBuf>,
}

const ACTOR: &str = "yusuf_rossi_9620";

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
            }
        }
        Ok(response)
    }

    fn order_status(&mut self, order: &str) -> Result<String, Exit> {
        let record = self.engine.record("order", order).map_err(|e| Exit::Input(e.to_string()))?;
        Ok(record.map_or_else(
            || "missing".into(),
            |r| format!("{} (revision {})", r.value.get("status").and_then(Value::as_str).unwrap_or("?"), r.revision),
        ))
    }

    fn last_held(&self) -> String {
        self.held.last().cloned().unwrap_or_default()
    }
}

pub(crate) fn run(args: &DemoArgs) -> Result<(), Exit> {
    let path = match &args.store {
        Some(path) => {
            if path.exists() {
                return Err(Exit::Input(format!("`{}` exists; the demo starts from a fresh file", path.display())));
            }
            path.clone()
        }
        None => std::env::temp_dir().join(format!("warrant-demo-{}.sqlite", std::process::id())),
    };
    let store = SqliteStore::open(&path).map_err(|e| Exit::Input(format!("store `{}`: {e}", path.display())))?;
    let mut engine =
        Engine::builder().contract_file(&args.contract).build(store).map_err(|e| Exit::Input(e.to_string()))?;
    println!("warrant demo: {} against a fresh SQLite file {}", args.contract.display(), path.display());
    println!("the actor is {ACTOR}; every write needs the user's confirmation");
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
    println!("\nthe user's message as the model sees it: {}", warrant_core::pointer::NumberedText::new(user).render());
    p.play(
        "11. a new address, each part a pointer into the user's own words",
        &request("t11", user, json!([{"op": "modify_pending_order_address", "args": address}]), json!([])),
    )?;
    let decline = json!([{"interaction": p.last_held(), "option": "decline"}]);
    p.play("12. the user declines", &request("t12", "No, leave it.", json!([]), decline))?;
    let mut broken = request("t13", "Cancel it.", json!([]), json!([]));
    if let Some(map) = broken.as_object_mut() {
        map.insert("tool".into(), json!("x"));
    }
    p.play("13. a request with a field the wire format does not have", &broken)?;

    let report = p.engine.replay().map_err(|e| Exit::Input(e.to_string()))?;
    println!(
        "\nreplay of the stored turns from their recorded facts: {} turns, {} identical, {} verdicts changed",
        report.turns,
        report.identical,
        report.changes.len()
    );
    if args.store.is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    Ok(())
}
