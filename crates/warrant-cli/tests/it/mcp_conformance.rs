//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.10, its server
//! scenarios) against the reference server `@modelcontextprotocol/server-everything`
//! (2026.8.31), once directly and once through `warrant mcp` over streamable HTTP with a
//! permissive contract (`tests/mcp/everything/`, which declares every resource and prompt in
//! its `[mcp]` section). Every check that passes directly passes through the gateway, and no
//! other.
//! Both packages come from npm at the versions `tests/mcp/conformance/package-lock.json` pins,
//! installed by scripts/test.sh into `target/mcp-conformance` (or `WARRANT_MCP_CONFORMANCE`);
//! without them this test fails, naming the command that installs them.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::mcp::{http_gateway_for, listens, run_client, tenant_key, texts};
use crate::root;

/// What each server scenario's checks came to, by check id.
type Checks = BTreeMap<String, String>;

/// The checks that pass against server-everything directly: 12 of the 27 checks of the suite's
/// 26 active server scenarios (`server-sse-multiple-streams` makes two checks). The rest ask for
/// the suite's own `test_*` tools, prompts and resources, which server-everything does not have.
const PASS_DIRECTLY: [&str; 12] = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "server-accepts-multiple-post-streams",
    "server-sse-streams-functional",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
];

/// The npm packages' folder.
fn packages() -> PathBuf {
    let dir = std::env::var_os("WARRANT_MCP_CONFORMANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-conformance"));
    assert!(
        dir.join("node_modules/@modelcontextprotocol/conformance").is_dir(),
        "no MCP conformance suite at {}: run the README's test command, scripts/test.sh (it installs crates/warrant-cli/tests/mcp/conformance/package-lock.json into target/mcp-conformance), or set WARRANT_MCP_CONFORMANCE",
        dir.display()
    );
    dir
}

/// A child process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// server-everything over streamable HTTP on a free port, and its endpoint.
fn everything(packages: &Path) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("node")
        .arg(packages.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    assert!(listens(port, 30), "server-everything did not listen on {port}");
    (running, format!("http://127.0.0.1:{port}/mcp"))
}

/// The proxy that adds the tenant's key to the suite's requests, and its endpoint.
fn bearer_proxy(gateway: &str, key: &str) -> (Running, String) {
    let mut child = Command::new("node")
        .arg(root().join("crates/warrant-cli/tests/mcp/conformance/bearer_proxy.mjs"))
        .arg(gateway)
        .env("WARRANT_MCP_KEY", key)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "the proxy printed `{line}`");
    (Running(child), line.trim().to_owned())
}

/// Runs the suite's active server scenarios against `url`; the status of every check, and the
/// details of each.
fn suite(packages: &Path, url: &str, out: &Path) -> (Checks, BTreeMap<String, Value>) {
    let output = Command::new("node")
        .arg(packages.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "-o"])
        .arg(out)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    let (mut checks, mut details) = (Checks::new(), BTreeMap::new());
    let scenarios: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(scenarios.len(), 26, "the suite's 26 active server scenarios ran against {url}:\n{log}");
    for scenario in scenarios {
        let text = std::fs::read_to_string(scenario.join("checks.json")).unwrap();
        let found: Vec<Value> = serde_json::from_str(&text).unwrap();
        for check in found {
            let id = check["id"].as_str().unwrap().to_owned();
            checks.insert(id.clone(), check["status"].as_str().unwrap().to_owned());
            details.insert(id, check);
        }
    }
    assert_eq!(checks.len(), 27, "27 checks against {url}: {checks:?}");
    (checks, details)
}

fn passed(checks: &Checks) -> Vec<&str> {
    checks.iter().filter(|(_, status)| *status == "SUCCESS").map(|(id, _)| id.as_str()).collect()
}

#[test]
fn the_conformance_suite_passes_through_the_gateway_what_it_passes_directly() {
    let packages = packages();
    let dir = tempfile::tempdir().unwrap();
    let (_downstream, everything_url) = everything(&packages);
    let (direct, _) = suite(&packages, &everything_url, &dir.path().join("direct"));
    let mut expected: Vec<&str> = PASS_DIRECTLY.to_vec();
    expected.sort_unstable();
    assert_eq!(passed(&direct), expected, "directly: {direct:?}");

    let keys = format!("sqlite:{}", dir.path().join("keys").display());
    let key = tenant_key(&keys, "conformance");
    let store = format!("sqlite:{}", dir.path().join("warrant.sqlite").display());
    let contract = root().join("crates/warrant-cli/tests/mcp/everything/contract.toml");
    let downstream = ["--downstream-url".to_owned(), everything_url.clone()];
    let gateway = http_gateway_for(&contract, &store, &keys, &downstream, &[]);
    let (_proxy, proxied) = bearer_proxy(&gateway.url, &key);
    let (through, details) = suite(&packages, &proxied, &dir.path().join("gateway"));
    assert_eq!(passed(&through), expected, "through the gateway: {through:?}");
    // The contract's one operation is listed, and nothing it does not declare.
    assert_eq!(details["tools-list"]["details"]["tools"], json!(["echo"]), "{}", details["tools-list"]);
    println!(
        "mcp conformance: {} of {} checks pass directly, {} of {} through the gateway",
        passed(&direct).len(),
        direct.len(),
        passed(&through).len(),
        through.len()
    );

    // The declared tool is forwarded to server-everything and answered as it answers; an
    // undeclared one is refused and never forwarded.
    let session = json!({
        "url": gateway.url, "headers": {"Authorization": format!("Bearer {key}")}, "decision": "confirm",
        "calls": [{"name": "echo", "arguments": {"message": "through the gate"}},
                  {"name": "get-sum", "arguments": {"a": 1, "b": 2}}],
    });
    let out = &run_client(dir.path(), &[session])[0];
    let got = texts(out);
    assert_eq!(got[0], (false, "Echo: through the gate".to_owned()), "{out}");
    assert!(got[1].0 && got[1].1.contains("unknown_operation (field `name`)"), "{out}");
}
