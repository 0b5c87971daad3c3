//! The review page in headless Chromium (Debian's `chromium`): opened with a tenant's key, it
//! shows a refused act with its reason, and the reply's basis as absent; clicked through
//! `playwright-core` (tests/browser), an audit button changes the audited count on the page and
//! in the store. The tests fail when Chromium, node or npm is missing (the README names them;
//! `.ci/run` installs them); playwright-core is installed into `target/browser` from the lock file.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Place, cancel, http, request};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The page's DOM after its scripts ran, as Chromium dumps it.
fn rendered(url: &str) -> String {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's `chromium` package (apt-get install -y chromium); the README names what scripts/test.sh needs"
    );
    let profile = tempfile::tempdir().unwrap();
    let mut chromium = Command::new(CHROMIUM);
    chromium
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
        .arg(url);
    let (status, dom, _) = run_within(chromium, Duration::from_secs(90));
    assert!(status.success(), "chromium exited with {status}");
    dom
}

/// Turns with a held, a committed and a refused act: the order is cancelled once (held, then
/// confirmed), then asked for again; the executor then reports the cancellation done, with the
/// order as the system of record left it, its `cancel_reason` not the one predicted.
fn refused_after_a_cancel(addr: std::net::SocketAddr, key: &str) {
    let k = Some(key);
    let (_, held) = http(addr, "POST", "/v1/turns", k, Some(&request("c", "t1", cancel(), json!([]))));
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, done) = http(addr, "POST", "/v1/turns", k, Some(&confirm));
    assert_eq!(done["acts"][0]["verdict"], "commit", "{done}");
    let (_, refused) = http(addr, "POST", "/v1/turns", k, Some(&request("c", "t3", cancel(), json!([]))));
    assert_eq!(refused["acts"][0]["verdict"], "refuse", "{refused}");
    let (_, mut order) = http(addr, "GET", crate::ORDER_PATH, k, None);
    order["value"]["cancel_reason"] = json!("ordered by mistake");
    let report = json!({"outcome": "done", "rows": [{"table": "order", "key": crate::ORDER, "value": order["value"]}]});
    let path = format!("/v1/effects/{}/outcome", done["effects"][0]["id"].as_str().unwrap());
    let (status, reported) = http(addr, "POST", &path, k, Some(&report));
    assert_eq!((status, &reported["findings"][0]["code"]), (200, &json!("effect_diverged")), "{reported}");
}

/// What the page shows of the cancellation's outcome.
const DIVERGED: &str =
    "effect_diverged: order/#W6247578 cancel_reason predicted \"no longer needed\", reported \"ordered by mistake\"";

#[test]
fn the_review_page_in_chromium_shows_a_refused_acts_reason() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("review");
    let server = warrant_server::Running::start(&place.config()).unwrap();
    refused_after_a_cancel(server.addr, &key);

    let dom = rendered(&format!("http://{}/#key={key}", server.addr));
    assert!(dom.contains("data-loaded=\"true\""), "the page did not load its turns:\n{dom}");
    assert!(dom.contains("data-verdict=\"refuse\""), "no refused act on the page:\n{dom}");
    assert!(dom.contains("policies: order_not_pending"), "the refusal's reason is not shown:\n{dom}");
    assert!(dom.contains("data-verdict=\"commit\"") && dom.contains("data-verdict=\"hold\""), "{dom}");
    assert!(dom.contains("reply basis: none"), "{dom}");
    // The cancellation's effect with its outcome, the row reported and the divergence found.
    assert!(dom.contains("data-outcome=\"done\"") && dom.contains("outcome done"), "{dom}");
    assert!(dom.contains("reported row order/#W6247578"), "{dom}");
    assert!(dom.contains(DIVERGED), "the divergence is not shown:\n{dom}");
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
    assert!(
        dom.contains("who can help.\u{201d} performs escalate (sentence 0)"),
        "the clause reading is not shown:\n{dom}"
    );
    assert!(dom.contains("unknown_operation (op)"), "the refused act's reason is not shown:\n{dom}");
}

/// The folder the node script that drives Chromium runs from: `target/browser`, with
/// `playwright-core` installed there from `tests/browser/package-lock.json` when it is missing or
/// was installed from another lock (the lock is kept beside the modules once `npm ci` succeeded),
/// and the script copied beside it on every run (an ES module finds its imports from its own
/// folder), so that nothing is installed into the source tree.
fn browser_dir() -> std::path::PathBuf {
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("tests/browser");
    let dir = manifest.join("../../target/browser");
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node` is missing: install Node.js 20 or newer with npm (apt-get install -y nodejs npm): {node:?}"
    );
    let lock = std::fs::read(source.join("package-lock.json")).unwrap();
    let installed = dir.join("node_modules/.installed-lock.json");
    if std::fs::read(&installed).ok().as_deref() != Some(lock.as_slice()) {
        let _ = std::fs::remove_dir_all(dir.join("node_modules"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(source.join(file), dir.join(file)).unwrap();
        }
        let npm = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).output();
        match npm {
            Ok(out) => assert!(
                out.status.success(),
                "`npm ci` in {} failed:\n{}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => panic!("`npm` is missing ({e}): install npm (apt-get install -y npm) to fetch playwright-core"),
        }
        std::fs::write(&installed, &lock).unwrap();
    }
    std::fs::copy(source.join("review.mjs"), dir.join("review.mjs")).unwrap();
    dir
}

/// Runs `command` to its end within `limit`, killing it past that; (status, stdout, stderr).
fn run_within(mut command: Command, limit: Duration) -> (std::process::ExitStatus, String, String) {
    let (out, err) = (tempfile::NamedTempFile::new().unwrap(), tempfile::NamedTempFile::new().unwrap());
    let mut child = command.stdout(out.reopen().unwrap()).stderr(err.reopen().unwrap()).spawn().unwrap();
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} did not finish within {limit:?}; stderr:\n{}",
                std::fs::read_to_string(err.path()).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, std::fs::read_to_string(out.path()).unwrap(), std::fs::read_to_string(err.path()).unwrap())
}

#[test]
fn clicking_an_audit_button_in_chromium_changes_the_audited_count_on_the_page_and_in_the_store() {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's `chromium` package (apt-get install -y chromium)"
    );
    let dir = browser_dir();
    let mut place = Place::sqlite();
    let (tenant, key) = place.tenant("click");
    let server = warrant_server::Running::start(&place.config()).unwrap();
    let k = Some(key.as_str());
    refused_after_a_cancel(server.addr, &key);
    // A finding, through the real path: a draft that announces a lookup it did not make.
    let (_, flagged) = http(server.addr, "POST", "/v1/turns", k, Some(&crate::ladder::announcing("g", "t1")));
    assert_eq!(flagged["findings"][0]["reason"], "announcement_without_call", "{flagged}");
    let (_, listed) = http(server.addr, "GET", "/v1/guards/announcement/findings?unaudited=true", k, None);
    let finding = listed["findings"][0]["finding"]["id"].as_str().unwrap().to_owned();

    let mut node = Command::new("node");
    node.arg("review.mjs")
        .arg(format!("http://{}/#key={key}", server.addr))
        .args([finding.as_str(), "true_positive"])
        .current_dir(&dir);
    let (status, out, err) = run_within(node, Duration::from_secs(240));
    assert!(status.success(), "the browser script failed ({status}):\n{err}\n{out}");
    let seen: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        seen["refused"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().is_some_and(|r| r.contains("policies: order_not_pending"))),
        "the refused act's reason is not on the page: {seen}"
    );
    assert_eq!((seen["before"].as_u64(), seen["after"].as_u64()), (Some(0), Some(1)), "{seen}");
    assert!(seen["audited"].as_str().unwrap().starts_with("audited: true_positive by reviewer"), "{seen}");
    assert_eq!(seen["problems"], json!([]), "{seen}");
    assert!(seen["divergences"].as_array().unwrap().contains(&json!(DIVERGED)), "{seen}");
    // The announcing draft's cleared reply is on the page: the live path's fallback copy, not
    // the announcement.
    assert!(seen["bases"].as_array().unwrap().contains(&json!("fallback")), "{seen}");
    let fallback = seen["fallbackText"][0].as_str().unwrap_or("");
    assert!(fallback.starts_with("reply: \u{201c}") && !fallback.contains("Let me check"), "{seen}");
    let reply = seen["reply"].as_str().unwrap();
    assert!(
        reply.contains("reply basis: rewritten")
            && reply.contains("claim order_cancelled {\"args\":{\"order\":\"#W1\"}}"),
        "{seen}"
    );
    assert!(reply.contains("claim_unbacked"), "{seen}");
    assert!(seen["none"].as_str().unwrap().starts_with("reply basis: none"), "{seen}");

    // The click reached the store: the finding carries the page's label and auditor.
    let Place::Sqlite(folder) = &place else { unreachable!() };
    let mut store = warrant_store::SqliteStore::open(&folder.path().join(format!("t_{tenant}.sqlite"))).unwrap();
    let stored = warrant_store::LadderStore::findings(&mut store, warrant_core::guard::ANNOUNCEMENT).unwrap();
    let audit = stored.iter().find(|f| f.finding.id == finding).and_then(|f| f.audit.clone()).unwrap();
    assert_eq!((audit.label.as_str(), audit.who.as_str()), ("true_positive", "reviewer"));
}
