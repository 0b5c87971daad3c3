//! `warrant corpus run` over the project's corpus, and over cases that must fail.

use crate::{stdout, warrant};

#[test]
fn the_korean_corpus_passes() {
    let out = warrant(&["corpus", "run", "--contract", "examples/score-ko/contract.toml", "corpus/score-ko"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap();
    let passed: usize = last.strip_suffix(" passed, 0 failed").unwrap().parse().unwrap();
    assert!(passed >= 90, "{last}");
}

#[test]
fn the_english_corpus_passes() {
    let out = warrant(&["corpus", "run", "--contract", "examples/score-en/contract.toml", "corpus/score-en"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap();
    let passed: usize = last.strip_suffix(" passed, 0 failed").unwrap().parse().unwrap();
    assert!(passed >= 90, "{last}");
}

#[test]
fn a_negative_control_that_fires_is_a_boundary_failure_and_exits_1() {
    let dir = std::env::temp_dir().join(format!("warrant-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cases.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"kind\":\"model_reply\",\"text\":\"같이 결정해보자.\",\"expect\":[],\"why\":\"wrongly written as inert\"}\n",
            "{\"kind\":\"model_reply\",\"text\":\"같이 결정해볼까?\",\"expect\":[\"join\"],\"why\":\"wrongly written as positive\"}\n",
            "{\"kind\":\"model_reply\",\"text\":\"고마워.\",\"expect\":[],\"why\":\"holds\"}\n",
            "{\"kind\":\"bot\",\"text\":\"고마워.\",\"expect\":[],\"why\":\"an unknown kind is an error\"}\n",
            "{\"kind\":\"user\",\"text\":\"고마워.\",\"why\":\"no expectation\"}\n",
        ),
    )
    .unwrap();
    let out = warrant(&["corpus", "run", "--contract", "examples/score-ko/contract.toml", file.to_str().unwrap()], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("cases.jsonl:1: boundary failure"), "{text}");
    assert!(text.contains("cases.jsonl:2: expected operations [\"join\"], got []"), "{text}");
    assert!(text.contains("cases.jsonl:4: expected input error none, got unknown_source_kind"), "{text}");
    assert!(text.contains("cases.jsonl:5: malformed case"), "{text}");
    assert!(text.contains("1 boundary failures"), "{text}");
    assert_eq!(text.lines().last(), Some("1 passed, 4 failed"));
    std::fs::remove_dir_all(&dir).unwrap();
}
