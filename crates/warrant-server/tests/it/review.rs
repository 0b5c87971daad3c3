//! The review page in headless Chromium (Debian's `chromium`): opened with a tenant's key, it
//! shows a refused act with its reason, and the reply's basis as absent. The test fails when
//! Chromium is missing; `.ci/run` installs it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Place, cancel, http, request};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The page's DOM after its scripts ran, as Chromium dumps it.
fn rendered(url: &str) -> String {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's `chromium` package (apt-get install -y chromium), as .ci/run does"
    );
    let profile = tempfile::tempdir().unwrap();
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stdout(out.reopen().unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "chromium exited with {status}");
    std::fs::read_to_string(out.path()).unwrap()
}

#[test]
fn the_review_page_in_chromium_shows_a_refused_acts_reason() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("review");
    let server = warrant_server::Running::start(&place.config()).unwrap();
    let k = Some(key.as_str());
    let (_, held) = http(server.addr, "POST", "/v1/turns", k, Some(&request("c", "t1", cancel(), json!([]))));
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, done) = http(server.addr, "POST", "/v1/turns", k, Some(&confirm));
    assert_eq!(done["acts"][0]["verdict"], "commit", "{done}");
    let (_, refused) = http(server.addr, "POST", "/v1/turns", k, Some(&request("c", "t3", cancel(), json!([]))));
    assert_eq!(refused["acts"][0]["verdict"], "refuse", "{refused}");

    let dom = rendered(&format!("http://{}/#key={key}", server.addr));
    assert!(dom.contains("data-loaded=\"true\""), "the page did not load its turns:\n{dom}");
    assert!(dom.contains("data-verdict=\"refuse\""), "no refused act on the page:\n{dom}");
    assert!(dom.contains("policies: order_not_pending"), "the refusal's reason is not shown:\n{dom}");
    assert!(dom.contains("data-verdict=\"commit\"") && dom.contains("data-verdict=\"hold\""), "{dom}");
    assert!(dom.contains("reply basis: none"), "{dom}");
    // The evidence: the entry's text and the clause reading of it.
    assert!(dom.contains("[user]: Cancel it please."), "{dom}");

    // A wrong key shows the error, and no turns.
    let wrong = format!("{}{}", &key[..key.len() - 1], if key.ends_with('0') { '1' } else { '0' });
    let dom = rendered(&format!("http://{}/#key={wrong}", server.addr));
    assert!(dom.contains("error 401: unauthorized"), "{dom}");
    assert!(!dom.contains("data-verdict"), "{dom}");
}

#[test]
fn the_review_page_in_chromium_shows_the_clause_readings_a_refusal_rests_on() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("evidence");
    let mut config = place.config();
    config.contract = crate::contract().parent().unwrap().join("../score-en/contract.toml");
    let server = warrant_server::Running::start(&config).unwrap();
    let turn = json!({
        "conversation": "c", "turn": "t1", "actor": "u", "at": "2026-11-29T15:00:00Z",
        "time_zone": "UTC", "locale": "en-US", "acts": [], "answers": [],
        "entries": [
            {"kind": "model_reply", "text": "I will pass this to a colleague who can help."},
            {"kind": "model_reply", "text": "I'll pass this to a colleague who can help."},
        ],
    });
    let (status, decided) = http(server.addr, "POST", "/v1/turns", Some(&key), Some(&turn));
    assert_eq!(status, 200, "{decided}");
    let dom = rendered(&format!("http://{}/#key={key}", server.addr));
    assert!(dom.contains("[model_reply]: I will pass this to a colleague who can help."), "{dom}");
    assert!(dom.contains("rejected: unregistered_sentence at"), "the rejection reason is not shown:\n{dom}");
    assert!(dom.contains("who can help.\u{201d} performs escalate (sentence 0)"), "the clause reading is not shown:\n{dom}");
    assert!(dom.contains("unknown_operation (op)"), "the refused act's reason is not shown:\n{dom}");
}
