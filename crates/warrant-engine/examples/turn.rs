//! One turn through an engine: the builder makes an engine for the retail example over a fresh
//! SQLite file, with no model, and the engine decides a request to cancel a pending order. A
//! consequential act is held for the user's confirmation, so its verdict is `hold`.
//!
//! `cargo run -p warrant-engine --example turn`

use std::path::PathBuf;

use warrant_engine::{Engine, ModelSource, TurnResult};

const REQUEST: &str = r##"{"conversation": "example", "turn": "t1", "actor": "yusuf_rossi_9620",
  "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
  "entries": [{"kind": "user", "text": "Cancel #W6247578, I no longer need it."}],
  "acts": [{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]}"##;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contract = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml");
    let dir = tempfile::tempdir()?;
    let store = format!("sqlite:{}", dir.path().join("warrant.sqlite").display());
    let mut engine = Engine::builder().contract_file(contract).model(ModelSource::None).open(&store)?;
    match engine.turn(REQUEST)? {
        TurnResult::Decided { response, .. } => {
            for act in &response.acts {
                let codes: Vec<&str> = act.reasons.iter().map(|r| r.code.as_str()).collect();
                println!("{}: {:?} [{}]", act.op, act.verdict, codes.join(", "));
            }
        }
        TurnResult::Rejected(error) => println!("refused: {error}"),
    }
    Ok(())
}
