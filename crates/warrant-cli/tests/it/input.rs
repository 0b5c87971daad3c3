//! Bad input through the command line, as an agent's tooling meets it: every refusal is the
//! `{"error":{code,field,message}}` object on standard output with exit status 2, never a
//! store failure; a request over the contract's limits is refused whole; a turn key reused with
//! another request does nothing.

use serde_json::{Value, json};

use crate::turns::sqlite_store;
use crate::{stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";
const USER: &str = "yusuf_rossi_9620";

fn body(fields: &str) -> String {
    let base = r#"{"conversation":"c1","turn":"t1","actor":"yusuf_rossi_9620","at":"2026-11-29T15:00:00Z",
        "time_zone":"America/New_York","locale":"en-US""#;
    if fields.is_empty() { format!("{base}}}") } else { format!("{base},{fields}}}") }
}

/// Runs `warrant turn`; its exit status and the JSON it printed.
fn turn(store: &str, request: &str) -> (Option<i32>, Value) {
    let out = warrant(&["turn", "--contract", CONTRACT, "--store", store], request);
    let text = stdout(&out);
    let json = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text} {}", stderr(&out)));
    (out.status.code(), json)
}

fn turns_stored(store: &str) -> String {
    let out = warrant(&["replay", "--contract", CONTRACT, "--store", store], "");
    stdout(&out).lines().last().unwrap_or_default().to_owned()
}

#[test]
fn bad_input_is_an_error_object_on_stdout_with_exit_2_never_a_store_failure() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let cases = [
        (body(r#""entries":[{"kind":"user","text":"cancel\u0000it"}]"#), "invalid_input", "entries[0].text"),
        (body("").replace(r#""c1""#, r#""c\u00001""#), "invalid_input", "conversation"),
        (
            body(r#""acts":[{"op":"get_order_details","args":{"a\u0000":"x"}}]"#),
            "invalid_input",
            "acts[0].args.a\\u{0000}",
        ),
        (
            body(r#""acts":[{"op":"get_order_details","args":{"order_id":"W1","order_id":"W2"}}]"#),
            "invalid_input",
            "acts[0].args.order_id",
        ),
        (
            body(r#""answers":[{"interaction":"int_1","option":"confirm","option":"decline"}]"#),
            "invalid_input",
            "answers[0].option",
        ),
        (r#"["c1","t1","yusuf_rossi_9620"]"#.to_owned(), "invalid_input", ""),
        (body("").replace("15:00:00Z", "15:00:00+25:00"), "invalid_input", "at"),
        (body("").replace(r#""conversation":"c1","#, ""), "invalid_input", "conversation"),
    ];
    for (request, code, field) in &cases {
        let (status, answer) = turn(&store, request);
        assert_eq!(status, Some(2), "{request}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{request}: {answer}");
        assert_eq!(answer["error"]["field"], *field, "{request}: {answer}");
    }
    // Bytes that are not UTF-8 are bad input too.
    let file = dir.path().join("latin1.json");
    let mut bytes = body(r#""entries":[{"kind":"user","text":"caf"#).into_bytes();
    bytes.truncate(bytes.len() - 1);
    bytes.extend_from_slice(b"\xe9\"}]}");
    std::fs::write(&file, bytes).unwrap();
    let out = warrant(&["turn", "--contract", CONTRACT, "--store", &store, "--request", file.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer["error"]["code"], "invalid_input", "{answer}");
    assert_eq!(turns_stored(&store), "0 turns replayed, 0 identical, 0 verdicts changed");
}

#[test]
fn fifteen_thousand_acts_are_refused_whole_and_nothing_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let mut request: Value = serde_json::from_str(&body("")).unwrap();
    request["acts"] = Value::Array(vec![json!({"op": "get_user_details", "args": {"user_id": USER}}); 15_000]);
    let (status, answer) = turn(&store, &request.to_string());
    assert_eq!(status, Some(2), "{answer}");
    assert_eq!(answer["error"]["code"], "limit_exceeded");
    assert_eq!(answer["error"]["field"], "acts");
    assert!(answer["error"]["message"].as_str().unwrap().contains("`limits.acts_per_turn`"), "{answer}");
    assert_eq!(turns_stored(&store), "0 turns replayed, 0 identical, 0 verdicts changed");
}

#[test]
fn an_outbound_request_is_read_strictly_and_a_far_due_is_scheduled() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let outbound = |request: &str| {
        let out = warrant(&["outbound", "--contract", CONTRACT, "--store", &store, "--send", "-"], request);
        let text = stdout(&out);
        (out.status.code(), serde_json::from_str::<Value>(&text).unwrap_or_else(|_| panic!("{text} {}", stderr(&out))))
    };
    let follow_up = |due: &str| {
        json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-29T16:00:00Z", "due": due,
            "locale": "en-US", "draft": {"text": "We will follow up.", "claims": []}})
        .to_string()
    };
    let (status, answer) = outbound(&follow_up("9999-12-30T21:59:59Z"));
    assert_eq!(status, Some(0), "{answer}");
    assert_eq!(answer["scheduled"]["due_at_ms"], 253_402_207_199_000_i64, "{answer}");
    let (status, answer) = outbound(&follow_up("2026-11-30T16:00:00+25:00"));
    assert_eq!((status, &answer["error"]["field"]), (Some(2), &json!("due")), "{answer}");
    let repeated =
        follow_up("2026-11-30T16:00:00Z").replace(r#""locale":"en-US""#, r#""locale":"en-US","locale":"ko-KR""#);
    let (status, answer) = outbound(&repeated);
    assert_eq!(status, Some(2), "{answer}");
    assert_eq!((&answer["error"]["code"], &answer["error"]["field"]), (&json!("invalid_input"), &json!("locale")));
    let long = json!({"conversation": "c1", "path": "retry", "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": "x".repeat(1_000_000), "claims": []}});
    let (status, answer) = outbound(&long.to_string());
    assert_eq!(status, Some(2), "{answer}");
    assert_eq!((&answer["error"]["code"], &answer["error"]["field"]), (&json!("limit_exceeded"), &json!("draft.text")));
}
