//! `warrant check`: a contract whose policies do not fit it stops at the policy's own line, a bad
//! value in a data file at its file, line and column; the summary of what it loaded; and
//! `--cedar-schema` prints the schema they were validated against; with `--store`, rows seeded one
//! by one and those stored otherwise reported, and a seeded store's turn reads no data file.

use serde_json::Value;

use crate::{root, stderr, stdout, warrant};

const RETAIL: &str = "examples/retail/contract.toml";

#[test]
fn check_cedar_schema_prints_the_schema_every_policy_was_validated_against() {
    let out = warrant(&["check", "--contract", RETAIL, "--cedar-schema"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let namespace = &schema[""];
    for entity in ["User", "Order", "Product", "Item"] {
        assert_eq!(namespace["entityTypes"][entity]["shape"]["attributes"]["key"]["type"], "String", "{entity}");
    }
    let actions = namespace["actions"].as_object().unwrap();
    assert_eq!(actions.len(), 10, "one action per operation");
    let cancel = &actions["cancel_pending_order"]["appliesTo"];
    assert_eq!(cancel["principalTypes"][0], "User");
    assert_eq!(cancel["resourceTypes"][0], "Order");
    let context = &cancel["context"]["attributes"];
    assert_eq!(context["args"]["attributes"]["reason"]["type"], "String");
    assert_eq!(context["derived"]["attributes"]["paid"]["type"], "Long");
    let items = &actions["modify_pending_order_items"]["appliesTo"]["context"]["attributes"];
    assert_eq!(items["args"]["attributes"]["new_item_ids"]["type"], "Set");
    assert_eq!(items["members"]["attributes"]["payment_method_id"]["additionalAttributes"], true);
    assert_eq!(actions["modify_user_address"]["appliesTo"]["resourceTypes"][0], "User");
}

#[test]
fn check_says_how_many_policies_were_validated() {
    let out = warrant(&["check", "--contract", RETAIL], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("10 policies, each valid against the Cedar schema of 10 actions"),
        "{}",
        stdout(&out)
    );
}

/// Before: a `forbid` naming `Action::"get_order_detail"` loaded, never fired, and one user
/// could read another's order.
#[test]
fn a_forbid_with_a_misspelt_action_stops_the_load_at_its_place_in_the_cedar_file() {
    let dir = tempfile::tempdir().unwrap();
    let retail = root().join("examples/retail");
    std::fs::write(dir.path().join("contract.toml"), std::fs::read_to_string(retail.join("contract.toml")).unwrap())
        .unwrap();
    let policies = std::fs::read_to_string(retail.join("policies.cedar")).unwrap();
    let misspelt = policies.replacen("Action::\"get_order_details\"", "Action::\"get_order_detail\"", 1);
    assert_ne!(misspelt, policies);
    std::fs::write(dir.path().join("policies.cedar"), &misspelt).unwrap();
    let at = misspelt.find("Action::\"get_order_detail\"").unwrap();
    let line = misspelt[..at].matches('\n').count() + 1;
    let column = at - misspelt[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    let contract = dir.path().join("contract.toml");
    let out = warrant(&["check", "--contract", contract.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let place = format!("{}:{line}:{column}: ", dir.path().join("policies.cedar").display());
    assert!(err.contains(&place), "{err} does not name {place}");
    assert!(err.contains("get_order_detail") && err.contains("order_of_another_user"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A copy of the retail example's folder, its data files included.
fn retail_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let retail = root().join("examples/retail");
    std::fs::create_dir(dir.path().join("data")).unwrap();
    for file in ["contract.toml", "policies.cedar", "data/users.json", "data/orders.json", "data/products.json"] {
        std::fs::copy(retail.join(file), dir.path().join(file)).unwrap();
    }
    dir
}

fn line_column(text: &str, at: usize) -> (usize, usize) {
    let line = text[..at].matches('\n').count() + 1;
    (line, text[..at].len() - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1)
}

/// Before: a price of 47.845 passed `warrant check` and failed at the first turn, naming no
/// file, line or column.
#[test]
fn a_bad_value_in_a_data_file_is_named_with_its_file_line_and_column() {
    let dir = retail_copy();
    let file = dir.path().join("data/products.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let at = text.find("\"price\": ").unwrap() + "\"price\": ".len();
    let end = at + text[at..].find(|c: char| c != '.' && !c.is_ascii_digit()).unwrap();
    let bad = format!("{}47.845{}", &text[..at], &text[end..]);
    std::fs::write(&file, &bad).unwrap();
    let (line, column) = line_column(&bad, at);
    let contract = dir.path().join("contract.toml");
    let out = warrant(&["check", "--contract", contract.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    let place = format!("{}:{line}:{column}: ", file.display());
    assert!(err.contains(&place), "{err} does not name {place}");
    assert!(err.contains("holds 47.845, more digits than 2 minor units allow"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(stdout(&out).is_empty(), "nothing is summarised of a contract whose data does not load");

    // A file that is not JSON is named at serde_json's place.
    std::fs::write(&file, "{\n  \"p\": {\"price\": 1,}\n}\n").unwrap();
    let out = warrant(&["check", "--contract", contract.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{}:2:", file.display())), "{}", stderr(&out));
}

/// A contract that loads, with a data file row holding a field its table's schema does not
/// declare: `warrant check` stops at that field's file, line and column, as its first line says.
#[test]
fn an_undeclared_field_in_a_data_file_is_named_with_its_file_line_and_column() {
    let folder = root().join("corpus/contracts/data-undeclared-field");
    let contract = folder.join("contract.toml");
    let text = std::fs::read_to_string(&contract).unwrap();
    let expected = text.lines().next().unwrap().strip_prefix("# expect-error: ").unwrap();
    let out = warrant(&["check", "--contract", contract.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end(), format!("warrant: {}/{expected}", folder.display()), "{err}");
}

/// A table declared by a JSON Schema file beside the contract: the file is read with the
/// contract, a row that breaks it is named at its file, line and column, and the Cedar entity is
/// the closed record the file declares.
#[test]
fn a_json_schema_file_beside_the_contract_types_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contract.toml");
    std::fs::write(
        &contract,
        "[sources]\nkinds = [\"tool_call\"]\n\n[records]\ncurrency = \"USD\"\n\n[[records.table]]\nname = \"order\"\n\
         file = \"orders.json\"\nentity = \"Order\"\nkey = \"order_id\"\nschema = \"order.schema.json\"\n",
    )
    .unwrap();
    let schema = serde_json::json!({"type": "object", "additionalProperties": false, "required": ["order_id", "total"],
        "properties": {"order_id": {"type": "string"}, "total": {"type": "number", "x-warrant-kind": "money"},
                       "placed": {"type": "string", "format": "date-time"}}});
    std::fs::write(dir.path().join("order.schema.json"), schema.to_string()).unwrap();
    let orders = dir.path().join("orders.json");
    std::fs::write(&orders, "{\n  \"#1\": {\"order_id\": \"#1\", \"total\": 3.5},\n  \"#2\": {\"order_id\": \"#2\", \"total\": 1, \"placed\": \"yesterday\"}\n}\n").unwrap();
    let out = warrant(&["check", "--contract", contract.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let want = format!("{}:3:50: table `order`, row `#2`: `placed` holds `yesterday`", orders.display());
    assert!(stderr(&out).contains(&want), "{} does not say {want}", stderr(&out));

    let out = warrant(&["check", "--contract", contract.to_str().unwrap(), "--cedar-schema"], "");
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let shape = &printed[""]["entityTypes"]["Order"]["shape"];
    assert_eq!(shape["attributes"]["total"], serde_json::json!({"type": "Long"}), "{shape}");
    assert_eq!(shape["attributes"]["placed"]["required"], false, "{shape}");
    assert!(shape.get("additionalAttributes").is_none(), "a typed table's entity is closed: {shape}");
}

#[test]
fn check_prints_what_it_loaded() {
    let out = warrant(&["check", "--contract", RETAIL], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "examples/retail/contract.toml: 3 source kinds, 0 scored clauses, 0 passive clauses",
        "4 records tables, 2141 rows, every row checked",
        "  table `user`: 500 rows from data/users.json",
        "  table `order`: 1000 rows from data/orders.json",
        "  table `product`: 50 rows from data/products.json",
        "  table `item`: 591 rows from `variants` of each `product` row",
        "10 policies, each valid against the Cedar schema of 10 actions (--cedar-schema prints it)",
        "5 outbound paths: live, retry, scheduled, digest, queue",
    ] {
        assert!(text.lines().any(|l| l == line), "no line `{line}` in\n{text}");
    }
    assert!(text.contains("\n10 operations: get_order_details, "), "{text}");
    assert!(text.contains("\n11 claim kinds: order_cancelled, "), "{text}");
    assert!(text.contains("\nannouncement guard "), "{text}");
}

/// Before: a table was seeded only when its first row was missing, so a row added to a data
/// file later never reached the store, without a word.
#[test]
fn rows_are_seeded_one_by_one_and_a_changed_row_is_reported_never_overwritten() {
    let dir = retail_copy();
    let contract = dir.path().join("contract.toml");
    let contract = contract.to_str().unwrap();
    let store = format!("sqlite:{}", dir.path().join("store.db").display());
    let check = |store: &str| warrant(&["check", "--contract", contract, "--store", store], "");
    let out = check(&store);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("store: every row of the data files is stored as its file has it\n"));

    // The file gains a user and changes another; the store gets the new one only.
    let file = dir.path().join("data/users.json");
    let mut users: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let (first, row) = users.iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
    let mut changed = row.clone();
    changed["name"]["first_name"] = "Changed".into();
    users.insert(first.clone(), changed);
    users.insert("new_user_1".into(), row.clone());
    std::fs::write(&file, serde_json::to_string_pretty(&users).unwrap()).unwrap();
    let out = check(&store);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "differs: table `user`, row `{first}`: stored at revision 1 otherwise than its data file has it\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("store: 1 rows differ from their data files") && text.contains("warrant records import"),
        "{text}"
    );
    let get = |key: &str| {
        let out = warrant(&["records", "get", "user", key, "--contract", contract, "--store", &store], "");
        serde_json::from_str::<Value>(&stdout(&out)).unwrap_or(Value::Null)
    };
    assert_eq!(get("new_user_1")["value"], row, "a row the store lacked is seeded");
    assert_eq!(get(&first)["value"], row, "a stored row is never overwritten by its file");
}

/// Once the store holds a file's rows, a turn does not read the file: here it holds garbage
/// of the same length and modification time, and the turn decides on the stored rows.
#[test]
fn a_seeded_store_s_turn_reads_no_data_file() {
    let dir = retail_copy();
    let contract = dir.path().join("contract.toml");
    let contract = contract.to_str().unwrap();
    let store = format!("sqlite:{}", dir.path().join("store.db").display());
    let out = warrant(&["check", "--contract", contract, "--store", &store], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = dir.path().join("data/orders.json");
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::write(&file, vec![b'x'; usize::try_from(len).unwrap()]).unwrap();
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(modified).unwrap();
    let request = serde_json::json!({
        "conversation": "c1", "turn": "t1", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Where is my order?"}],
        "acts": [{"op": "get_order_details", "args": {"order_id": "#W6247578"}}],
    });
    let out = warrant(&["turn", "--contract", contract, "--store", &store], &request.to_string());
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let response: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(response["acts"][0]["verdict"], "commit", "{response}");
    // `warrant check` reads everything, and finds the file broken.
    let out = warrant(&["check", "--contract", contract], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{}:1:1: ", file.display())), "{}", stderr(&out));
}
