//! `warrant score` prints exactly the JSON of docs/design.md §4.

use serde_json::{Value, json};

use crate::{stderr, stdout, warrant};

const KO: &str = "examples/score-ko/contract.toml";

#[test]
fn a_registered_reply_prints_its_operations() {
    let out = warrant(&["score", "--contract", KO, "--kind", "model_reply", "같이 결정해보자."], "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "{\"source_kind\":\"model_reply\",\"text\":\"같이 결정해보자.\",\"operations\":[{\"op\":\"join\",\"clause\":\"같이 결정해보자.\",\"sentence\":0}],\"rejection\":null}\n"
    );
}

#[test]
fn an_unregistered_sentence_prints_the_rejection_with_its_index() {
    let out =
        warrant(&["score", "--contract", KO, "--kind", "model_reply", "같이 결정해보자. 근데 아직은 아니야."], "");
    assert_eq!(out.status.code(), Some(0));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({"source_kind":"model_reply","text":"같이 결정해보자. 근데 아직은 아니야.","operations":[],
               "rejection":{"reason":"unregistered_sentence","sentence":1,"text":"근데 아직은 아니야."}})
    );
}

#[test]
fn an_unknown_kind_exits_2_with_one_line() {
    let out = warrant(&["score", "--contract", KO, "--kind", "assistant", "같이 결정해보자."], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("`assistant`"), "{err}");
}

#[test]
fn jsonl_gives_one_line_out_per_line_in_and_errors_stay_in_their_line() {
    let input = concat!(
        "{\"kind\":\"model_reply\",\"text\":\"마지막 방향은 네가 정해도 돼.\"}\n",
        "{\"kind\":\"robot\",\"text\":\"같이 결정해보자.\"}\n",
        "{\"kind\":\"user\",\"text\":\"같이 결정해보자.\"}\n",
        "{\"kind\":\"user\"}\n",
        "{\"kind\":\"user\",\"text\":\"\"}\n",
    );
    let out = warrant(&["score", "--contract", KO, "--jsonl", "-"], input);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["operations"][0]["op"], "delegate");
    assert_eq!(lines[1]["error"]["code"], "unknown_source_kind");
    assert_eq!(lines[1]["error"]["line"], 2);
    assert_eq!(lines[2]["rejection"]["reason"], "clause_not_permitted_for_source");
    assert_eq!(lines[3]["error"]["code"], "invalid_input");
    assert_eq!(lines[4]["rejection"]["reason"], "empty_response");
}

#[test]
fn a_bad_contract_exits_2_naming_the_clause_and_its_line() {
    let out =
        warrant(&["score", "--contract", "corpus/contracts/two-sentences.toml", "--kind", "model_reply", "x"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("two-sentences.toml:6:8:"), "{err}");
    assert!(err.contains("`Sure. I'll do it.`"), "{err}");
}

#[test]
fn a_missing_contract_exits_2() {
    let out = warrant(&["score", "--contract", "no/such.toml", "--kind", "user", "x"], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1);
}
