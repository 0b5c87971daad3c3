//! `warrant check`: a contract whose policies do not fit it stops at the policy's own line, and
//! `--cedar-schema` prints the schema they were validated against.

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
