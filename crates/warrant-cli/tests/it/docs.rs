//! The pages are true as written: the console examples of `docs/records.md`,
//! `docs/operations.md` and `examples/airline/README.md` run in order against fresh stores (SQLite
//! files, and for the operations page a PostgreSQL schema too), each printing exactly what the
//! page shows; every JSON block parses (the operations page's lists the fields an export writes,
//! and they are checked against one) and every TOML block loads as a contract (also
//! `docs/contract.md`'s, with the errors it shows, and `docs/model.md`'s); `docs/telemetry.md`'s
//! commands export to a real OTLP receiver; `docs/mcp.md`'s stdio gateway starts as written, in
//! front of the example downstream; `docs/design.md`'s contract parts load after its preamble and
//! its `warrant score` reading prints as shown; `docs/policy.md`'s rule loads and its error is the
//! one `warrant check` gives.
use std::process::Command;

use crate::root;

/// The store the page names, replaced by a temporary one.
const PAGE_STORE: &str = "sqlite:/tmp/records.db";

/// The fenced blocks of a Markdown text: (language, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => found.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is not closed");
    found
}

/// Runs a console block's commands in order from the repository's root, `warrant` first on
/// the `PATH` and no `WARRANT_MODEL_*` variable set but those a command sets itself, each with
/// the texts of `replace` replaced (a page's store by a temporary one); each must succeed and
/// print exactly the lines below it. Returns how many ran.
fn run_console(body: &str, replace: &[(&str, String)]) -> usize {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_warrant"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let mut steps: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        match (line.strip_prefix("$ "), steps.last_mut()) {
            (Some(command), _) => steps.push((command.to_owned(), String::new())),
            (None, Some((_, expected))) => {
                expected.push_str(line);
                expected.push('\n');
            }
            (None, None) => panic!("output before any command: {line}"),
        }
    }
    for (command, expected) in &steps {
        let swap = |text: &str| replace.iter().fold(text.to_owned(), |text, (from, to)| text.replace(from, to));
        let run = swap(command);
        let mut shell = Command::new("sh");
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("WARRANT_MODEL")) {
            shell.env_remove(name);
        }
        let out = shell.args(["-c", &run]).env("PATH", &path).current_dir(root()).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "`{command}` failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout, swap(expected), "`{command}` printed otherwise than the page shows");
    }
    steps.len()
}

#[test]
fn the_records_page_s_examples_run_as_shown() {
    let text = std::fs::read_to_string(root().join("docs/records.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("records.db").display());
    let (mut commands, mut json, mut toml) = (0, 0, 0);
    for (language, body) in blocks(&text) {
        match language.as_str() {
            "json" => {
                serde_json::from_str::<serde_json::Value>(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
                json += 1;
            }
            "console" => commands += run_console(&body, &[(PAGE_STORE, store.clone())]),
            "toml" => {
                // A contract as the page shows it: it loads.
                warrant_core::Contract::from_toml("docs/records.md", &body).unwrap_or_else(|e| panic!("{e}: {body}"));
                toml += 1;
            }
            other => panic!("a block in {other:?}: the page holds only console, json and toml blocks"),
        }
    }
    assert_eq!((commands, json, toml), (11, 3, 1), "every example ran");
}

/// Where `docs/contract.md`'s contracts find their companion files: the page's blocks that
/// name a file (```` ```cedar policies.cedar ````), each noted when a contract reads it.
struct PageFiles {
    files: std::collections::BTreeMap<String, String>,
    read: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl warrant_core::contract::ContractFiles for PageFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        self.read.borrow_mut().insert(path.to_owned());
        self.files.get(path).cloned().ok_or_else(|| format!("the page shows no block named `{path}`"))
    }
}

/// The name `docs/contract.md` gives the Cedar schema of the contract loaded just before it.
const SCHEMA_BLOCK: &str = "cedar-schema";

/// What a page's examples came to: (whole contracts, fragments, of them failing, companion
/// files, schemas, JSON blocks), and the blocks of other languages, for the page's own test.
type PageCounts = (usize, usize, usize, usize, usize, usize);

/// Loads every TOML block of the page `page` as a contract, as the page says it loads: a block
/// without `[sources]` is a fragment that follows the page's ```` ```toml preamble ```` block, and
/// a block whose first line is `# expect-error: LINE:COLUMN: message` must fail with exactly that
/// (its line counted in the block). Blocks that name a file (```` ```cedar policies.cedar ````)
/// are the contracts' companion files, each read by some contract; a ```` ```json cedar-schema ````
/// block is the schema generated from the contract before it; other JSON blocks parse.
fn page_examples(page: &str) -> (PageCounts, Vec<(String, String)>) {
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let blocks: Vec<(String, Option<String>, String)> = blocks(&text)
        .into_iter()
        .map(|(info, body)| match info.split_once(' ') {
            Some((language, name)) => (language.to_owned(), Some(name.trim().to_owned()), body),
            None => (info, None, body),
        })
        .collect();
    let preamble: Vec<&String> =
        blocks.iter().filter(|(l, n, _)| l == "toml" && n.as_deref() == Some("preamble")).map(|(_, _, b)| b).collect();
    let [preamble] = preamble.as_slice() else { panic!("{page} has one ```toml preamble block") };
    let files = PageFiles {
        files: blocks
            .iter()
            .filter_map(|(l, n, b)| match n.as_deref() {
                Some(name) if l != "toml" && name != SCHEMA_BLOCK => Some((name.to_owned(), b.clone())),
                _ => None,
            })
            .collect(),
        read: Default::default(),
    };
    let (mut whole, mut fragments, mut failing, mut schemas, mut json) = (0, 0, 0, 0, 0);
    let mut last: Option<warrant_core::Contract> = None;
    let mut others = Vec::new();
    // Every example that is not as the page says, so that one run names them all.
    let mut wrong: Vec<String> = Vec::new();
    for (language, name, body) in &blocks {
        match (language.as_str(), name.as_deref()) {
            ("toml", None | Some("preamble")) => {
                let fragment = !body.lines().any(|l| l.trim() == "[sources]");
                let (source, offset) = if fragment {
                    (format!("{preamble}{body}"), u32::try_from(preamble.lines().count()).unwrap())
                } else {
                    (body.clone(), 0)
                };
                let expected = body.lines().next().and_then(|l| l.strip_prefix("# expect-error: "));
                match (warrant_core::Contract::load(page, &source, &files), expected) {
                    (Ok(contract), None) => last = Some(contract),
                    (Ok(_), Some(error)) => wrong.push(format!("loads, but the page says `{error}`:\n{body}")),
                    (Err(e), expected) => {
                        let got = format!("{}:{}: {}", e.line.saturating_sub(offset), e.column, e.kind);
                        match expected {
                            Some(error) if e.line > offset && got == error => failing += 1,
                            Some(error) => wrong.push(format!("fails with `{got}`, not `{error}`:\n{body}")),
                            None => wrong.push(format!("does not load: `{got}`:\n{body}")),
                        }
                    }
                }
                if fragment { fragments += 1 } else { whole += 1 }
            }
            ("json", Some(SCHEMA_BLOCK)) => {
                // The Cedar schema the page shows is the one generated from the contract above it.
                let shown: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
                let contract = last.as_ref().expect("a schema block follows a contract that loads");
                if &shown == contract.cedar_schema() {
                    schemas += 1;
                } else {
                    let generated = serde_json::to_string_pretty(contract.cedar_schema()).unwrap();
                    wrong.push(format!("the schema shown is not the one generated:\n{generated}"));
                }
            }
            ("json", None) => {
                serde_json::from_str::<serde_json::Value>(body).unwrap_or_else(|e| panic!("{e}: {body}"));
                json += 1;
            }
            ("cedar" | "json", Some(_)) => {}
            (other, _) => others.push((other.to_owned(), body.clone())),
        }
    }
    assert!(wrong.is_empty(), "examples of {page} are not as shown:\n\n{}", wrong.join("\n\n"));
    let unread: Vec<&String> = files.files.keys().filter(|f| !files.read.borrow().contains(*f)).collect();
    assert!(unread.is_empty(), "no example of {page} reads the files {unread:?}");
    ((whole, fragments, failing, files.files.len(), schemas, json), others)
}

#[test]
fn the_contract_page_s_examples_load_as_shown() {
    let (counts, others) = page_examples("docs/contract.md");
    assert!(others.is_empty(), "docs/contract.md holds only toml, cedar and json blocks: {others:?}");
    assert_eq!(
        counts,
        (6, 40, 19, 3, 1, 0),
        "every example ran: (whole contracts, fragments, of them failing, files, schemas, json)"
    );
}

#[test]
fn the_design_page_s_examples_load_and_its_score_command_prints_what_it_shows() {
    let (counts, others) = page_examples("docs/design.md");
    assert_eq!(counts, (2, 5, 0, 1, 0, 1), "every example ran: (whole, fragments, failing, files, schemas, json)");
    // The one other block is the `warrant score` synopsis: each flag it names is one the command
    // takes.
    let [(language, synopsis)] = others.as_slice() else { panic!("one block besides: {others:?}") };
    assert_eq!(language, "sh");
    let help = Command::new(env!("CARGO_BIN_EXE_warrant")).args(["score", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let flags: Vec<&str> = synopsis.split_whitespace().filter(|w| w.starts_with("--")).collect();
    assert_eq!(flags, ["--contract", "--kind", "--contract", "--jsonl"]);
    for flag in flags {
        assert!(help.contains(flag), "`warrant score --help` names no {flag}:\n{help}");
    }
    // The reading the page shows is the one the command prints.
    let text = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let shown = blocks(&text).into_iter().find(|(l, _)| l == "json").unwrap().1;
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["score", "--contract", "examples/score-ko/contract.toml", "--kind", "model_reply"])
        .arg("같이 결정해보자. 근데 아직은 아니야.")
        .current_dir(root())
        .output()
        .unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, serde_json::from_str::<serde_json::Value>(&shown).unwrap());
}

/// A contract whose table has the `instant` field `docs/policy.md`'s rule reads, and the operation
/// it names: the page's policy is loaded as its policy file.
const POLICY_PAGE_CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent", "tool_call"]
acts = "tool_call"

[actor]
table = "customer"

[[records.table]]
name = "customer"
file = "data/customers.json"
entity = "Customer"
fields.name = { kind = "text" }

[[records.table]]
name = "order"
file = "data/orders.json"
entity = "Order"
owner = "customer"
fields.customer = { kind = "ref", table = "customer" }
fields.created_at = { kind = "instant" }

[policies]
files = ["policies.cedar"]

[[operation]]
name = "cancel"
resource = "order_id"
args.order_id = { kind = "record", table = "order" }
"#;

#[test]
fn the_policy_page_s_rule_loads_and_its_error_is_the_one_a_misnamed_action_gives() {
    let text = std::fs::read_to_string(root().join("docs/policy.md")).unwrap();
    let blocks = blocks(&text);
    let [(cedar, rule), (plain, error)] = blocks.as_slice() else { panic!("two blocks: {blocks:?}") };
    assert_eq!((cedar.as_str(), plain.as_str()), ("cedar", ""));
    // The 24-hour rule, against a typed table's `instant` field, as the policy file of a contract.
    let files = PageFiles {
        files: [("policies.cedar".to_owned(), format!("permit (principal, action, resource);\n{rule}"))].into(),
        read: Default::default(),
    };
    let contract = warrant_core::Contract::load("docs/policy.md", POLICY_PAGE_CONTRACT, &files);
    assert!(contract.is_ok(), "docs/policy.md's rule does not load: {}", contract.err().unwrap());
    // The error shown is what `warrant check` says of the retail example with its first action
    // of `order_of_another_user` misspelled as the page says.
    let dir = tempfile::tempdir().unwrap();
    for file in ["contract.toml", "policies.cedar"] {
        std::fs::copy(root().join("examples/retail").join(file), dir.path().join(file)).unwrap();
    }
    let policies = std::fs::read_to_string(dir.path().join("policies.cedar")).unwrap();
    let mut lines: Vec<&str> = policies.lines().collect();
    assert_eq!(lines[10], "    Action::\"get_order_details\",", "line 11 of the retail policies");
    lines[10] = "    Action::\"get_order_detail\",";
    std::fs::write(dir.path().join("policies.cedar"), lines.join("\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["check", "--contract"])
        .arg(dir.path().join("contract.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8(out.stderr).unwrap().replace(&dir.path().display().to_string(), "examples/retail");
    assert_eq!(said.trim_end(), format!("warrant: {}", error.trim_end()));
}

#[test]
fn the_mcp_page_s_stdio_gateway_starts_as_written_and_refuses_an_actor_the_contract_lacks() {
    // The page's stdio command, run from the repository's root with the page's store replaced by
    // a temporary one and `python` by the tests' Python with `mcp`; its client (standard input)
    // initializes, lists the tools and closes, so the gateway starts, answers and stops.
    let text = std::fs::read_to_string(root().join("docs/mcp.md")).unwrap();
    let stdio: Vec<String> = blocks(&text)
        .into_iter()
        .filter(|(language, body)| language == "sh" && body.contains("--actor"))
        .map(|(_, body)| body.replace("\\\n", " "))
        .collect();
    let [command] = stdio.as_slice() else { panic!("one stdio command on the page: {stdio:?}") };
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("retail.sqlite").display());
    let python = crate::mcp::python().display().to_string();
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_warrant"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let client = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"docs","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    ]
    .join("\n");
    let run = |command: &str| {
        let command = command.replace("sqlite:retail.sqlite", &store).replace(" python ", &format!(" {python} "));
        let mut child = Command::new("sh")
            .args(["-c", &command])
            .env("PATH", &path)
            .current_dir(root())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The gateway may stop before reading it all (a wrong actor): a closed pipe is no failure.
        let _ = std::io::Write::write_all(&mut child.stdin.take().unwrap(), format!("{client}\n").as_bytes());
        child.wait_with_output().unwrap()
    };
    let out = run(command);
    let (stdout, said) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`{command}` failed: {said}");
    assert!(said.contains("offering 10 tools: get_order_details"), "{said}");
    let answers: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2, "{stdout}");
    assert_eq!(answers[1]["result"]["tools"][0]["name"], "get_order_details", "{stdout}");
    let out = run(&command.replace("fatima_johnson_7581", "no_such_user_1"));
    let said = String::from_utf8_lossy(&out.stderr);
    let refused = "`--actor no_such_user_1` is not a row of the actor table `user`";
    assert!(!out.status.success() && said.contains(refused), "{said}");
}

/// The folder `docs/operations.md` names, and its PostgreSQL database and schema: each replaced
/// by the test's own.
const OPS_FOLDER: &str = "/tmp/warrant-ops";
const OPS_DATABASE: &str = "postgres://postgres@127.0.0.1:5432/test";
const OPS_SCHEMA: &str = "warrant_ops";

#[test]
fn the_operations_page_s_examples_run_as_shown() {
    let text = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().display().to_string();
    let pg = crate::turns::postgres_schema();
    let (database, schema) = pg.store().split_once("?schema=").map(|(d, s)| (d.to_owned(), s.to_owned())).unwrap();
    let replace = [(OPS_FOLDER, folder.clone()), (OPS_DATABASE, database), (OPS_SCHEMA, schema)];
    let (mut commands, mut fields) = (0, None);
    for (language, body) in blocks(&text) {
        match language.as_str() {
            "json" => {
                fields =
                    Some(serde_json::from_str::<serde_json::Value>(&body).unwrap_or_else(|e| panic!("{e}: {body}")))
            }
            "console" => commands += run_console(&body, &replace),
            other => panic!("a block in {other:?}: the page holds only console and json blocks"),
        }
    }
    assert_eq!(commands, 16, "every example ran");
    // The fields the page lists for each kind are those an export writes, in that order.
    let fields = fields.expect("the page lists each kind's fields");
    let store = format!("sqlite:{folder}/warrant.sqlite");
    let out =
        Command::new(env!("CARGO_BIN_EXE_warrant")).args(["store", "export", "--store", &store]).output().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = line["kind"].as_str().unwrap().to_owned();
        let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).filter(|k| *k != "kind").collect();
        let listed: Vec<&str> = fields[&kind].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        assert_eq!(keys, listed, "the fields of a `{kind}` line");
        seen.insert(kind);
    }
    assert_eq!(seen.len(), 6, "the store has a line of every kind but `hold`: {seen:?}");
}

/// The folder `examples/airline/README.md` keeps its stores in, replaced by a temporary one.
const AIRLINE_STORES: &str = "sqlite:/tmp/";

#[test]
fn the_airline_example_s_readme_runs_as_written() {
    let text = std::fs::read_to_string(root().join("examples/airline/README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stores = format!("sqlite:{}/", dir.path().display());
    let (mut commands, mut json) = (0, 0);
    for (language, body) in blocks(&text) {
        match language.as_str() {
            "console" => commands += run_console(&body, &[(AIRLINE_STORES, stores.clone())]),
            "json" => {
                serde_json::from_str::<serde_json::Value>(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
                json += 1;
            }
            other => panic!("a block in {other:?}: the README holds only console and json blocks"),
        }
    }
    assert_eq!((commands, json), (9, 1), "every example ran");
    // Every turn file the page names is one its commands ran.
    let turns = std::fs::read_dir(root().join("examples/airline/turns")).unwrap();
    for turn in turns {
        let name = turn.unwrap().file_name().to_string_lossy().into_owned();
        assert!(text.contains(&format!("turns/{name}")), "the README runs no command on `turns/{name}`");
    }
}

#[test]
fn the_model_page_s_sections_load() {
    let text = std::fs::read_to_string(root().join("docs/model.md")).unwrap();
    let mut loaded = 0;
    for (language, body) in blocks(&text) {
        assert_eq!(language, "toml", "docs/model.md holds only toml blocks");
        // A `[model]` section, with the one section every contract needs before it.
        let contract = format!("[sources]\nkinds = [\"user\"]\n\n{body}");
        warrant_core::Contract::from_toml("docs/model.md", &contract).unwrap_or_else(|e| panic!("{e}: {body}"));
        loaded += 1;
    }
    assert_eq!(loaded, 1, "every example loaded");
}

/// The collector `docs/telemetry.md` names, replaced by the test's receiver, and its folder.
const TRACES_COLLECTOR: &str = "http://127.0.0.1:4318";
const TRACES_FOLDER: &str = "/tmp/warrant-traces";

#[test]
fn the_telemetry_page_s_commands_export_their_turns_as_shown() {
    let text = std::fs::read_to_string(root().join("docs/telemetry.md")).unwrap();
    let receiver = crate::traces::Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let replace = [(TRACES_COLLECTOR, receiver.endpoint()), (TRACES_FOLDER, dir.path().display().to_string())];
    let mut commands = 0;
    for (language, body) in blocks(&text) {
        assert_eq!(language, "console", "docs/telemetry.md holds only console blocks");
        commands += run_console(&body, &replace);
    }
    assert_eq!(commands, 2, "every example ran");
    let spans = receiver.spans();
    let turns: Vec<_> = spans.iter().filter(|s| s["name"] == "warrant.turn").collect();
    let services: Vec<_> = turns.iter().map(|s| s["resource"]["service.name"].as_str().unwrap()).collect();
    assert_eq!(services, ["warrant", "support-gate"], "each command exported its turn: {spans:#?}");
}

#[test]
fn the_mcp_page_s_downstreams_file_starts_the_gateway_in_front_of_its_servers() {
    // The page's file, its `python` the tests' and the warehouse's URL one of this test's
    // listening servers; the page's stdio command with `--downstreams` in place of the one
    // downstream. The retail contract has no `warehouse_get_order_details`: the warehouse offers
    // nothing of it, and its tools are named as undeclared.
    let text = std::fs::read_to_string(root().join("docs/mcp.md")).unwrap();
    let files: Vec<String> = blocks(&text)
        .into_iter()
        .filter(|(l, b)| l == "toml" && b.contains("[[downstream]]"))
        .map(|(_, b)| b)
        .collect();
    let [file] = files.as_slice() else { panic!("one downstreams file on the page: {files:?}") };
    let python = crate::mcp::python().display().to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut warehouse = Command::new(&python)
        .arg(root().join("examples/retail/retail_server.py"))
        .args(["--http", &port.to_string()])
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("downstreams.toml");
    let body =
        file.replace("\"python\"", &format!("{python:?}")).replace("127.0.0.1:8091", &format!("127.0.0.1:{port}"));
    std::fs::write(&path, body).unwrap();
    let up = crate::mcp::listens(port, 60);
    let store = format!("sqlite:{}", dir.path().join("retail.sqlite").display());
    // Its client initializes, lists the tools and closes.
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract", "examples/retail/contract.toml", "--store", &store])
        .args(["--actor", "fatima_johnson_7581", "--downstreams"])
        .arg(&path)
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let client = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"docs","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    ];
    let _ =
        std::io::Write::write_all(&mut gateway.stdin.take().unwrap(), format!("{}\n", client.join("\n")).as_bytes());
    let output = gateway.wait_with_output().unwrap();
    let _ = warehouse.kill();
    let _ = warehouse.wait();
    assert!(up, "the warehouse did not listen on {port}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("offering 10 tools: get_order_details"), "{said}");
    assert!(said.contains("downstream tool `warehouse/get_order_details` is not declared"), "{said}");
    let answers: Vec<serde_json::Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[1]["result"]["tools"].as_array().map(Vec::len), Some(10), "{answers:?}");
    let wrong = file.replace("url = ", "command = [\"x\"]\nurl = ");
    std::fs::write(&path, wrong).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract", "examples/retail/contract.toml", "--store", &store])
        .args(["--actor", "fatima_johnson_7581", "--downstreams"])
        .arg(&path)
        .current_dir(root())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("line 9: downstream `warehouse`, `url`: give `command` or `url`, not both"), "{said}");
}
