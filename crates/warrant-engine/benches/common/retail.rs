//! The retail turns the benchmarks propose, shared by this crate's `turn` and warrant-telemetry's
//! `export` (which includes this file by path), so that both measure the same turns.

use serde_json::{Value, json};

/// The customer every turn is for.
pub const USER: &str = "yusuf_rossi_9620";

/// Turn `turn` of `conversation`, proposing `act`.
pub fn turn_request(conversation: &str, turn: usize, act: &Value) -> String {
    json!({
        "conversation": conversation, "turn": format!("t{turn}"), "actor": USER,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Exchange my keyboard for the clicky one, please."}],
        "acts": [act],
    })
    .to_string()
}

/// The acts a benchmark turn proposes, in rotation: a read that commits, a cancel and an
/// exchange that are held for confirmation (structure, members, pairs, derived money, policy).
pub fn acts() -> Vec<Value> {
    vec![
        json!({"op": "get_order_details", "args": {"order_id": "#W4776164"}}),
        json!({"op": "cancel_pending_order", "args": {"order_id": "#W4776164", "reason": "no longer needed"}}),
        json!({"op": "exchange_delivered_order_items", "args": {"order_id": "#W2378156", "item_ids": ["1151293680"], "new_item_ids": ["7706410293"], "payment_method_id": "credit_card_9513926"}}),
    ]
}
