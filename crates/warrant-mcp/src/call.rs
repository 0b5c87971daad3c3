//! One `tools/call` as warrant turns, without the transport: the turn request made from the
//! call's arguments, the answer turn made from the user's decision, and the tool result the
//! client sees for a verdict that is not a commit. Pure: the gateway does the IO.

use serde_json::{Map, Value, json};
use warrant_core::ReasonCode;
use warrant_core::confirm;
use warrant_core::id::derive_id;
use warrant_core::operation::{ArgKind, Operation};
use warrant_core::pointer;
use warrant_core::turn::{ActOut, Verdict};

/// Who and where a turn is decided for: fixed for a gateway, never from the model.
#[derive(Debug, Clone)]
pub struct TurnFrame {
    /// The conversation (the MCP session).
    pub conversation: String,
    /// The actor (from `--actor` over stdio, the API key over HTTP).
    pub actor: String,
    /// The turn's locale.
    pub locale: String,
    /// The turn's time zone.
    pub time_zone: String,
    /// The contract's source kind of the user's words.
    pub user_kind: String,
}

/// The turn key of a call: derived from the session, the JSON-RPC request id, the tool and its
/// arguments, so the same request sent again is answered from the record, and a request id
/// reused for another call (a new client on a resumed session counts its ids from the first
/// again) is a new call with a key of its own.
pub fn turn_key(conversation: &str, request_id: &str, tool: &str, args: &Map<String, Value>) -> String {
    // Canonical text (keys sorted): the same arguments sent in another order are the same call.
    let args = warrant_core::id::canonical(&Value::Object(args.clone()));
    derive_id("mcp", &[conversation, request_id, tool, &args])
}

/// Whether `turn` is a key the gateway derived: a call's ([`turn_key`]) or its answer's
/// ([`answer_key`]). The start-up sweep forwards the effects of these turns alone, not those
/// of turns other clients of the same store decided.
pub fn is_gateway_turn(turn: &str) -> bool {
    let call = turn.strip_suffix(".answer").unwrap_or(turn);
    let shape = derive_id("mcp", &[]);
    call.len() == shape.len() && call.strip_prefix("mcp_").is_some_and(|hex| hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The turn key of the answer to the interaction a call's turn created.
pub fn answer_key(turn: &str) -> String {
    format!("{turn}.answer")
}

/// An argument whose value the user, not the model, gives: a `text` argument's words, or the
/// id of an `enum` the user must have said (`evidence`), picked from its closed `values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked<'o> {
    /// The argument's name.
    pub name: &'o str,
    /// The enum's closed values; `None` for words the user types.
    pub values: Option<&'o [String]>,
}

/// The arguments of `op` that are asked of the user, in declaration order.
pub fn asked_args(op: &Operation) -> Vec<Asked<'_>> {
    op.args
        .iter()
        .filter_map(|a| match &a.kind {
            ArgKind::Text { .. } => Some(Asked { name: &a.name, values: None }),
            ArgKind::Enum { values, evidence: true } => Some(Asked { name: &a.name, values: Some(values.as_slice()) }),
            _ => None,
        })
        .collect()
}

/// What the user gave for one asked argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserValue {
    /// The argument's name.
    pub name: String,
    /// What the user typed, confirmed or picked.
    pub text: String,
    /// Whether it is an enum's id (the argument then carries it beside the pointer).
    pub choice: bool,
}

/// The turn request of a call: its arguments as the act. `user_words` holds the value the user
/// gave (or confirmed, or picked) for each asked argument: they become the turn's user entry,
/// and the argument a pointer to their words (an enum's id beside it, under `value`). An
/// argument the user did not give stays the model's plain value, which the engine does not
/// take as the user's words.
pub fn act_request(
    frame: &TurnFrame,
    turn: &str,
    at: &str,
    op: &str,
    args: &Map<String, Value>,
    user_words: &[UserValue],
) -> Value {
    let mut args = args.clone();
    let mut message = String::new();
    let mut words = 0;
    for UserValue { name, text, choice } in user_words {
        if text.is_empty() {
            args.insert(name.clone(), Value::String(String::new()));
            continue;
        }
        if !message.is_empty() {
            message.push_str(" | ");
        }
        message.push_str(text);
        let from = words + 1;
        words += pointer::numbered(text).len();
        let value = if *choice {
            json!({"ptr": [from, words], "copy": text, "value": text})
        } else {
            json!({"ptr": [from, words], "copy": text})
        };
        args.insert(name.clone(), value);
    }
    let mut request = frame_request(frame, turn, at);
    if !message.is_empty() {
        request.insert("entries".into(), json!([{"kind": frame.user_kind, "text": message}]));
    }
    request.insert("acts".into(), json!([{"op": op, "args": args}]));
    Value::Object(request)
}

/// The tool the answer turn's `calls` name for what the client's form did.
pub const ELICITATION_CALL: &str = "warrant/elicitation";

/// The turn that gives the user's `option` as the answer to `interaction`; `action` is what the
/// client's form did (`accept`, `decline`, `cancel`), kept on the record as a `calls` entry, so
/// that a Cancel, answered as a decline, reads as the user's Cancel.
pub fn answer_request(frame: &TurnFrame, turn: &str, at: &str, interaction: &str, option: &str, action: &str) -> Value {
    let mut request = frame_request(frame, turn, at);
    request.insert("answers".into(), json!([{"interaction": interaction, "option": option}]));
    request.insert("calls".into(), json!([{"tool": ELICITATION_CALL, "args": {"action": action}}]));
    Value::Object(request)
}

/// What the client's form did, as an answer turn's request records it ([`answer_request`]).
pub fn answer_action(request: &Value) -> Option<&str> {
    request
        .get("calls")?
        .as_array()?
        .iter()
        .find(|c| c.get("tool").and_then(Value::as_str) == Some(ELICITATION_CALL))?["args"]
        .get("action")?
        .as_str()
}

/// A turn with no act that puts on the record what the gateway did or passed through: `calls`
/// names it (`tool`, with `args`), and `entry`, when given, is what came back as a source of
/// the given kind, which later checks can point into.
pub fn note_request(
    frame: &TurnFrame,
    turn: &str,
    at: &str,
    tool: &str,
    args: Value,
    entry: Option<(&str, &str)>,
) -> Value {
    let mut request = frame_request(frame, turn, at);
    request.insert("calls".into(), json!([{"tool": tool, "args": args}]));
    if let Some((kind, text)) = entry {
        request.insert("entries".into(), json!([{"kind": kind, "text": text}]));
    }
    Value::Object(request)
}

fn frame_request(frame: &TurnFrame, turn: &str, at: &str) -> Map<String, Value> {
    let mut request = Map::new();
    for (name, value) in [
        ("conversation", &frame.conversation),
        ("turn", &turn.to_owned()),
        ("actor", &frame.actor),
        ("at", &at.to_owned()),
        ("time_zone", &frame.time_zone),
        ("locale", &frame.locale),
    ] {
        request.insert(name.into(), Value::String(value.clone()));
    }
    request
}

/// The text of a verdict that is not a commit: the verdict, each reason's code, field and
/// rules, and the interaction to answer.
pub fn verdict_text(act: &ActOut) -> String {
    let verdict = match act.verdict {
        Verdict::Commit => "commit",
        Verdict::Hold => "held",
        Verdict::Ask => "asked",
        Verdict::Refuse => "refused",
    };
    let mut text = format!("warrant: `{}` {verdict}", act.op);
    for reason in &act.reasons {
        text.push_str(&format!("; {}", reason.code.as_str()));
        if let Some(field) = &reason.field {
            text.push_str(&format!(" (field `{field}`)"));
        }
        if !reason.policies.is_empty() {
            text.push_str(&format!(" [rule {}]", reason.policies.join(", ")));
        }
        if let Some(detail) = &reason.detail {
            text.push_str(&format!(": {detail}"));
        }
    }
    if let Some(interaction) = &act.interaction {
        text.push_str(&format!(
            "; interaction `{interaction}` waits for the user's answer (the HTTP API or the review page)"
        ));
    }
    text
}

/// The text of a refusal the gateway makes itself, before any turn.
pub fn gateway_refusal(code: ReasonCode, field: &str, detail: &str) -> String {
    format!("warrant: refused; {} (field `{field}`): {detail}", code.as_str())
}

/// What a held act is put to the user with: the operation's confirmation copy (`confirm`)
/// rendered with the act's exact arguments, or a line naming the operation where it has none;
/// then each argument the act carries with its exact value, in declaration order.
pub fn confirmation_copy(op: &Operation, args: &Map<String, Value>) -> String {
    let mut copy = match &op.confirm {
        Some(confirm) => confirm.render(args),
        None => format!("Confirm `{}` with exactly these arguments?", op.name),
    };
    for arg in &op.args {
        if let Some(value) = args.get(&arg.name) {
            copy.push_str(&format!("\n- {}: {}", arg.name, confirm::shown(value)));
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> TurnFrame {
        TurnFrame {
            conversation: "mcp-s1".into(),
            actor: "u1".into(),
            locale: "en-US".into(),
            time_zone: "UTC".into(),
            user_kind: "user".into(),
        }
    }

    #[test]
    fn a_call_becomes_an_act_and_the_users_words_its_pointers() {
        let Value::Object(args) = json!({"order_id": "#W1", "address1": "model says", "address2": "x"}) else {
            panic!("an object")
        };
        let given = |name: &str, text: &str, choice| UserValue { name: name.into(), text: text.into(), choice };
        let words = vec![
            given("address1", "12 Oak Lane", false),
            given("address2", "", false),
            given("why", "by mistake", true),
        ];
        let request = act_request(&frame(), "k1", "2026-12-01T00:00:00Z", "modify", &args, &words);
        assert_eq!(request["entries"], json!([{"kind": "user", "text": "12 Oak Lane | by mistake"}]));
        assert_eq!(
            request["acts"][0]["args"]["why"],
            json!({"ptr": [4, 5], "copy": "by mistake", "value": "by mistake"})
        );
        assert_eq!(request["acts"][0]["args"]["address1"], json!({"ptr": [1, 3], "copy": "12 Oak Lane"}));
        assert_eq!(request["acts"][0]["args"]["address2"], json!(""));
        assert_eq!(request["acts"][0]["args"]["order_id"], json!("#W1"));
        assert_eq!(request["actor"], json!("u1"));
        let plain = act_request(&frame(), "k1", "2026-12-01T00:00:00Z", "modify", &args, &[]);
        assert!(plain.get("entries").is_none());
        assert_eq!(plain["acts"][0]["args"]["address1"], json!("model says"));
    }

    #[test]
    fn turn_keys_differ_by_session_request_tool_and_arguments() {
        let Value::Object(a) = json!({"order_id": "#W1", "reason": "x"}) else { panic!("an object") };
        let Value::Object(b) = json!({"order_id": "#W2", "reason": "x"}) else { panic!("an object") };
        let Value::Object(a_again) = json!({"reason": "x", "order_id": "#W1"}) else { panic!("an object") };
        assert_eq!(turn_key("s1", "3", "cancel", &a), turn_key("s1", "3", "cancel", &a_again));
        assert_ne!(turn_key("s1", "3", "cancel", &a), turn_key("s2", "3", "cancel", &a));
        assert_ne!(turn_key("s1", "3", "cancel", &a), turn_key("s1", "4", "cancel", &a));
        assert_ne!(turn_key("s1", "3", "cancel", &a), turn_key("s1", "3", "cancel", &b), "a reused id");
        assert_ne!(turn_key("s1", "3", "cancel", &a), turn_key("s1", "3", "modify", &a), "a reused id");
        assert_eq!(answer_key("k"), "k.answer");
        let key = turn_key("s1", "3", "cancel", &a);
        assert!(is_gateway_turn(&key) && is_gateway_turn(&answer_key(&key)));
        assert!(!is_gateway_turn("t1") && !is_gateway_turn("mcp_1") && !is_gateway_turn(&format!("{key}x")));
    }
}
