//! `warrant guard …` as processes: the adversarial corpus, and the ladder end to end on both
//! stores: findings in observe mode, audits, refused and granted promotions, the enforcing
//! guard's replacement, demotion by a change of shapes, demotion by command, samples, replay.

use std::path::Path;

use serde_json::{Value, json};

use crate::turns::postgres_schema;
use crate::{root, stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";

#[test]
fn the_guard_corpus_passes_with_at_least_120_cases_half_of_each_kind() {
    let out = warrant(&["guard", "corpus", "--contract", CONTRACT, "corpus/guards"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap();
    let passed: usize = last.strip_suffix(" passed, 0 failed").unwrap().parse().unwrap();
    assert!(passed >= 120, "{last}");
    let (mut flag, mut clear, mut korean) = (0, 0, 0);
    for file in ["corpus/guards/en.jsonl", "corpus/guards/ko.jsonl"] {
        for line in std::fs::read_to_string(root().join(file)).unwrap().lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            assert!(!case["why"].as_str().unwrap().is_empty());
            match case["expect"].as_str().unwrap() {
                "flag" => flag += 1,
                _ => clear += 1,
            }
            korean += usize::from(file.contains("ko"));
        }
    }
    assert_eq!(flag, clear, "half must flag, half must not");
    assert!(korean >= 60, "{korean} Korean cases");
}

#[test]
fn a_corpus_case_that_must_stay_clear_and_flags_is_an_overreach_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"text\":\"Let me check your order.\",\"expect\":\"clear\",\"class\":\"bare\",\"why\":\"wrongly written as clear\"}\n",
            "{\"text\":\"I told you I'd check your order.\",\"expect\":\"flag\",\"class\":\"reported\",\"why\":\"wrongly written as flag\"}\n",
            "{\"text\":\"Let me check your order.\",\"calls\":[\"get_order_details\"],\"expect\":\"clear\",\"class\":\"called\",\"why\":\"holds\"}\n",
            "{\"text\":\"x\",\"expect\":\"maybe\",\"class\":\"c\",\"why\":\"bad\"}\n",
        ),
    )
    .unwrap();
    let out = warrant(&["guard", "corpus", "--contract", CONTRACT, file.to_str().unwrap()], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("cases.jsonl:1: overreach"), "{text}");
    assert!(text.contains("cases.jsonl:2: missed"), "{text}");
    assert!(text.contains("cases.jsonl:4: malformed case"), "{text}");
    assert!(text.contains("1 overreaches"), "{text}");
    assert_eq!(text.lines().last(), Some("1 passed, 3 failed"));
}

fn turn(contract: &str, store: &str, key: &str, draft: &str, calls: &[&str]) -> Value {
    let calls: Vec<Value> = calls.iter().map(|t| json!({"tool": t, "args": {}})).collect();
    let body = json!({
        "conversation": "g", "turn": key, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Where is my order?"}],
        "calls": calls, "draft": {"text": draft, "claims": []},
    });
    let out = warrant(&["turn", "--contract", contract, "--store", store], &body.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn guard(args: &[&str], contract: &str, store: &str) -> (Option<i32>, String) {
    let mut all = vec!["guard"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--contract", contract, "--store", store]);
    let out = warrant(&all, "");
    (out.status.code(), format!("{}{}", stdout(&out), stderr(&out)))
}

fn status(contract: &str, store: &str) -> Value {
    let (code, text) = guard(&["status"], contract, store);
    assert_eq!(code, Some(0), "{text}");
    serde_json::from_str(&text).unwrap()
}

fn finding_ids(contract: &str, store: &str) -> Vec<String> {
    let (code, text) = guard(&["findings"], contract, store);
    assert_eq!(code, Some(0), "{text}");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["finding"]["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The retail contract in `dir` with one more verb in its first shape: a new guard version.
fn changed_contract(dir: &Path) -> String {
    let retail = root().join("examples/retail");
    let text = std::fs::read_to_string(retail.join("contract.toml")).unwrap();
    let changed = text.replacen("verb = [\"check\", ", "verb = [\"check\", \"inspect\", ", 1);
    assert_ne!(text, changed);
    std::fs::write(dir.join("contract.toml"), changed).unwrap();
    std::fs::copy(retail.join("policies.cedar"), dir.join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(retail.join("data"), dir.join("data")).unwrap();
    dir.join("contract.toml").display().to_string()
}

fn the_ladder_end_to_end(store: &str) {
    // Observe: the contract asks for enforce, but nothing is promoted yet.
    let response = turn(CONTRACT, store, "t1", "Sure. Let me check your order.", &[]);
    // The reply is the outbound gate's: with no model its coverage check cannot run, so the
    // live path's fallback copy goes out, never the draft.
    assert_eq!(response["reply"]["basis"], "fallback", "{response}");
    let findings = response["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{response}");
    assert_eq!(findings[0]["mode"], "observe");
    assert_eq!(findings[0]["reason"], "announcement_without_call");
    assert_eq!(findings[0]["text"], "Let me check your order.");
    assert!(findings[0].get("replacement").is_none());
    for key in ["t2", "t3", "t4"] {
        assert_eq!(
            turn(CONTRACT, store, key, "Let me check your order.", &[])["findings"].as_array().unwrap().len(),
            1
        );
    }
    // The call happened: nothing to find.
    assert!(turn(CONTRACT, store, "t5", "Let me check your order.", &["get_order_details"]).get("findings").is_none());
    // Seed 002: the quoted announcement after a colon is not flagged.
    let seed = "I once wrote this without running the tool:\nLet me check your order.\nThat was wrong.";
    assert!(turn(CONTRACT, store, "t6", seed, &[]).get("findings").is_none());

    let ids = finding_ids(CONTRACT, store);
    assert_eq!(ids.len(), 4);
    let (code, text) =
        guard(&["audit", "--finding", &ids[0], "--label", "false_positive", "--who", "ana"], CONTRACT, store);
    assert_eq!(code, Some(0), "{text}");
    for id in &ids[1..3] {
        let (code, text) =
            guard(&["audit", "--finding", id, "--label", "true_positive", "--who", "ana"], CONTRACT, store);
        assert_eq!(code, Some(0), "{text}");
    }
    let (code, text) =
        guard(&["audit", "--finding", &ids[1], "--label", "false_positive", "--who", "bo"], CONTRACT, store);
    assert_eq!(code, Some(1), "audited twice: {text}");
    let (code, text) = guard(&["audit", "--finding", &ids[1], "--label", "maybe", "--who", "bo"], CONTRACT, store);
    assert_eq!(code, Some(2), "{text}");
    let now = status(CONTRACT, store);
    assert_eq!(now["audits"]["audited"], 3);
    assert_eq!(now["audits"]["false_positives"], 1);
    assert_eq!(now["mode"], "observe");
    let upper = now["false_positive_upper_95"].as_f64().unwrap();
    assert!((upper - 0.864_650).abs() < 1e-5, "{upper}");

    // Below the bars: refused, with the bar that failed.
    let (code, text) = guard(&["promote", "--who", "ana"], CONTRACT, store);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("promotion_too_few_audits"), "{text}");
    let (code, text) = guard(&["promote", "--who", "ana", "--min-audited", "3"], CONTRACT, store);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("promotion_false_positive_rate"), "{text}");
    let broken = tempfile::tempdir().unwrap();
    let bad_corpus = broken.path().join("bad.jsonl");
    std::fs::write(
        &bad_corpus,
        "{\"text\":\"Let me check your order.\",\"expect\":\"clear\",\"class\":\"bare\",\"why\":\"fails\"}\n",
    )
    .unwrap();
    let (code, text) = guard(
        &[
            "promote",
            "--who",
            "ana",
            "--min-audited",
            "3",
            "--max-fp-rate",
            "0.5",
            "--corpus",
            bad_corpus.to_str().unwrap(),
        ],
        CONTRACT,
        store,
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("promotion_corpus_failed"), "{text}");
    assert!(status(CONTRACT, store)["promotion"].is_null());

    // Above them (configured): promoted, and the guard enforces.
    let (code, text) =
        guard(&["promote", "--who", "ana", "--min-audited", "3", "--max-fp-rate", "0.5"], CONTRACT, store);
    assert_eq!(code, Some(0), "{text}");
    let now = status(CONTRACT, store);
    assert_eq!(now["mode"], "enforce", "{now}");
    let response = turn(CONTRACT, store, "t7", "Sure. Let me check your order.", &[]);
    assert_eq!(response["reply"]["basis"], "fallback", "the outbound gate, not the guard, clears replies");
    assert_ne!(response["reply"]["text"], "Sure. I have not looked that up yet.");
    assert_eq!(response["findings"][0]["mode"], "enforce");
    assert_eq!(response["findings"][0]["replacement"], "Sure. I have not looked that up yet.");

    // A change of shapes is a new version: back to observe, and the promotion does not hold.
    let dir = tempfile::tempdir().unwrap();
    let changed = changed_contract(dir.path());
    let now = status(&changed, store);
    assert_ne!(now["version"], status(CONTRACT, store)["version"]);
    assert_eq!(now["mode"], "observe");
    assert_eq!(now["promotion"]["status"]["reason"], "promotion_version_mismatch");
    assert_eq!(now["audits"]["audited"], 0, "the new version starts its record again");
    let response = turn(&changed, store, "t8", "Let me check your order.", &[]);
    assert_eq!(response["findings"][0]["mode"], "observe");
    assert!(response["findings"][0].get("replacement").is_none());

    // Replay decides every turn again from its recorded facts, promotion included.
    let out = warrant(&["replay", "--contract", CONTRACT, "--store", store], "");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // Demotion by command.
    let (code, text) = guard(&["demote", "--who", "bo", "--reason", "a reviewer asked"], CONTRACT, store);
    assert_eq!((code, text.trim()), (Some(0), "1 promotions demoted"));
    assert_eq!(status(CONTRACT, store)["mode"], "observe");
    assert!(status(CONTRACT, store)["promotion"].is_null());

    // Misses are measured: unflagged replies are sampled and audited as misses or clean.
    let (code, text) = guard(&["sample", "--count", "10"], CONTRACT, store);
    assert_eq!((code, text.trim()), (Some(0), "2 replies sampled for audit"));
    let (code, text) = guard(&["sample", "--count", "10"], CONTRACT, store);
    assert_eq!((code, text.trim()), (Some(0), "0 replies sampled for audit"));
    let (_, text) = guard(&["findings"], CONTRACT, store);
    let samples: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|f| f["finding"]["kind"] == "sample")
        .collect();
    assert_eq!(samples.len(), 2);
    let sample = samples[0]["finding"]["id"].as_str().unwrap();
    let (code, text) =
        guard(&["audit", "--finding", sample, "--label", "true_positive", "--who", "ana"], CONTRACT, store);
    assert_eq!(code, Some(1), "a sample is a miss or clean: {text}");
    let (code, text) = guard(&["audit", "--finding", sample, "--label", "miss", "--who", "ana"], CONTRACT, store);
    assert_eq!(code, Some(0), "{text}");
    let now = status(CONTRACT, store);
    assert_eq!((now["audits"]["sampled"].clone(), now["audits"]["misses"].clone()), (json!(1), json!(1)));
}

#[test]
fn sqlite_the_ladder_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    the_ladder_end_to_end(&format!("sqlite:{}", path.display()));
    // The replay record of the enforcing turn keeps its findings and the promotion it read.
    use warrant_store::prelude::*;
    let mut store = warrant_store::SqliteStore::open(&path).unwrap();
    let replay = store.turn("g", "t7").unwrap().unwrap().replay;
    assert_eq!(replay["findings"][0]["mode"], "enforce", "{replay}");
    assert_eq!(replay["facts"]["promotions"].as_array().unwrap().len(), 1, "{replay}");
    assert_eq!(store.findings("guard:announcement").unwrap().iter().filter(|f| f.finding.turn == "t7").count(), 1);
}

#[test]
fn postgres_the_ladder_end_to_end() {
    let pg = postgres_schema();
    the_ladder_end_to_end(&pg.store());
}
