//! One test for each limitation issue 17 lists, named for it, on the airline contract wherever
//! it can say the rule: each shows the rule said and enforced, and fails if it is not.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use warrant_core::turn::Verdict;
use warrant_engine::{ModelSetup, ModelSource, load_contract};
use warrant_model::{ChatAnswer, ChatRequest, Provider, ProviderError};
use warrant_store::{Precondition, SqliteStore};

use crate::airline::{
    NOW, Stated, airline_dir, airline_engine, airline_engine_with, answer, decide, overwrite, propose_and_confirm,
    request, verdict,
};

/// A gold member's economy reservation without insurance, booked at 2024-05-14 23:13 EST (less
/// than a day before the benchmark's now), two passengers, one way MCO–MSP–DTW on 2024-05-26.
const USER: &str = "juan_brown_1657";
const RESERVATION: &str = "TR4EDM";

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn cancel() -> Map<String, Value> {
    args(json!({"reservation_id": RESERVATION, "reason": "change of plan"}))
}

/// The request for `kwargs` with another `at`.
fn at(mut request: Value, instant: &str) -> Value {
    request["at"] = json!(instant);
    request
}

#[test]
fn the_turns_clock_reaches_policy() {
    let (mut engine, _dir) = airline_engine();
    // The same reservation, the same act: only the turn's instant differs.
    let now = decide(&mut engine, &request(USER, "c1", "t1", "cancel_reservation", &cancel()));
    assert_eq!(verdict(&now).0, Verdict::Hold, "{:?}", now.acts[0].reasons);
    let later = decide(
        &mut engine,
        &at(request(USER, "c2", "t2", "cancel_reservation", &cancel()), "2024-05-16T15:00:00-05:00"),
    );
    assert_eq!(
        verdict(&later),
        (Verdict::Refuse, vec!["forbidden_by_policy".to_owned()], vec!["cancellation_not_allowed".to_owned()])
    );
}

#[test]
fn a_rule_reads_related_rows_and_each_is_a_fact_of_the_decision() {
    let (mut engine, dir) = airline_engine();
    let mut outside = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    // Held while both flights are on sale; the second then takes off before the confirmation.
    let held = decide(&mut engine, &request(USER, "c1", "t1", "cancel_reservation", &cancel()));
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts[0].reasons);
    overwrite(&mut outside, "flight", "HAT127", |f| f["dates"]["2024-05-26"] = json!({"status": "flying"}), "fly");
    let confirmed = decide(&mut engine, &answer(USER, "t1-yes", "c1", &held.interactions[0].id));
    let (v, codes, _) = verdict(&confirmed);
    assert!(v != Verdict::Commit && codes.iter().any(|c| c == "stale_revision"), "{v:?} {codes:?}");
    // Asked again, the flight's own row decides: one segment is in the air.
    let again = decide(&mut engine, &request(USER, "c1", "t2", "cancel_reservation", &cancel()));
    assert_eq!(verdict(&again).2, vec!["segment_already_flown".to_owned()]);
    assert!(engine.record("reservation", RESERVATION).unwrap().unwrap().value.get("status").is_none());
}

#[test]
fn every_and_any_over_a_list() {
    let (mut engine, dir) = airline_engine();
    let mut outside = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    let book = booking();
    // Every flight must have a seat for everyone: the second flight of two has none left.
    overwrite(
        &mut outside,
        "flight",
        "HAT039",
        |f| f["dates"]["2024-05-20"]["available_seats"]["economy"] = json!(0),
        "full",
    );
    let full = decide(&mut engine, &request("mia_li_3668", "c1", "t1", "book_reservation", &book));
    assert_eq!(verdict(&full).2, vec!["not_enough_seats".to_owned()]);
    // Any one cancelled flight lets a reservation be cancelled later than a day after booking.
    overwrite(&mut outside, "flight", "HAT298", |f| f["dates"]["2024-05-26"] = json!({"status": "cancelled"}), "cxl");
    let late = decide(
        &mut engine,
        &at(request(USER, "c2", "t2", "cancel_reservation", &cancel()), "2024-05-17T15:00:00-05:00"),
    );
    assert_eq!(verdict(&late).0, Verdict::Hold, "{:?}", late.acts[0].reasons);
}

/// Task 0's booking, as the benchmark's agent calls the tool.
fn booking() -> Map<String, Value> {
    args(json!({"user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}, {"flight_number": "HAT039", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250}, {"payment_id": "credit_card_4421486", "amount": 5}],
        "total_baggages": 3, "nonfree_baggages": 0, "insurance": "no"}))
}

#[test]
fn a_list_of_objects_argument_arrives_as_the_benchmark_sends_it() {
    let (mut engine, _dir) = airline_engine();
    let held = decide(&mut engine, &request("mia_li_3668", "c1", "t1", "book_reservation", &booking()));
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts[0].reasons);
    let mut misspelt = booking();
    misspelt["flights"][1] = json!({"flight_number": "HAT039", "date": "2024-05-20", "seat": "12A"});
    let refused = decide(&mut engine, &request("mia_li_3668", "c1", "t2", "book_reservation", &misspelt));
    let reason = &refused.acts[0].reasons[0];
    assert_eq!((reason.code.as_str(), reason.field.as_deref()), ("unknown_argument", Some("args.flights[1].seat")));
}

#[test]
fn derived_arithmetic_and_conditionals_over_arguments_are_charged_and_recorded() {
    let (mut engine, _dir) = airline_engine();
    // Two gold economy passengers have six free bags: the seventh costs $50, from the gift card.
    let user = "lucas_sanchez_1853";
    let before = engine.record("user", user).unwrap().unwrap().value["payment_methods"]["gift_card_6216249"]["amount"]
        .as_f64()
        .unwrap();
    let bags = args(json!({"reservation_id": "LH9KMJ", "total_baggages": 7, "nonfree_baggages": 1,
        "payment_id": "gift_card_6216249"}));
    propose_and_confirm(&mut engine, user, "c1", "t1", "update_reservation_baggages", &bags).unwrap();
    let card = engine.record("user", user).unwrap().unwrap().value["payment_methods"]["gift_card_6216249"]["amount"]
        .as_f64()
        .unwrap();
    assert_eq!(before - card, 50.0);
    let history = engine.record("reservation", "LH9KMJ").unwrap().unwrap().value["payment_history"].clone();
    let last = history.as_array().unwrap().last().unwrap();
    assert_eq!((last["payment_id"].as_str(), last["amount"].as_f64()), (Some("gift_card_6216249"), Some(50.0)));
    // No fee, no payment entry.
    let free = args(json!({"reservation_id": "LH9KMJ", "total_baggages": 7, "nonfree_baggages": 1,
        "payment_id": "gift_card_6216249"}));
    propose_and_confirm(&mut engine, user, "c1", "t2", "update_reservation_baggages", &free).unwrap();
    let again = engine.record("reservation", "LH9KMJ").unwrap().unwrap().value["payment_history"].clone();
    assert_eq!(again, history);
}

#[test]
fn effects_create_a_row_with_a_minted_key_append_it_and_delete_a_used_certificate() {
    let (mut engine, _dir) = airline_engine();
    let before = engine.record("user", "mia_li_3668").unwrap().unwrap().value;
    propose_and_confirm(&mut engine, "mia_li_3668", "c1", "t1", "book_reservation", &booking()).unwrap();
    let after = engine.record("user", "mia_li_3668").unwrap().unwrap().value;
    let reservations = after["reservations"].as_array().unwrap();
    assert_eq!(reservations.len(), before["reservations"].as_array().unwrap().len() + 1);
    let key = reservations.last().unwrap().as_str().unwrap();
    assert!(key.len() == 6 && !before["reservations"].as_array().unwrap().contains(&json!(key)));
    let booked = engine.record("reservation", key).unwrap().unwrap().value;
    assert_eq!((booked["reservation_id"].as_str(), booked["user_id"].as_str()), (Some(key), Some("mia_li_3668")));
    assert_eq!(booked["flights"][1]["destination"], "SEA");
    assert!(before["payment_methods"].get("certificate_7504069").is_some());
    assert!(after["payment_methods"].get("certificate_7504069").is_none(), "the certificate is used up");
}

#[test]
fn the_last_element_and_connecting_segments_are_checked() {
    let (mut engine, dir) = airline_engine();
    let mut elsewhere = booking();
    elsewhere["destination"] = json!("ATL");
    let refused = decide(&mut engine, &request("mia_li_3668", "c1", "t1", "book_reservation", &elsewhere));
    assert_eq!(verdict(&refused).2, vec!["itinerary_does_not_match_the_trip".to_owned()]);
    let mut outside = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    overwrite(&mut outside, "flight", "HAT136", |f| f["destination"] = json!("ORD"), "elsewhere");
    let broken = decide(&mut engine, &request("mia_li_3668", "c1", "t2", "book_reservation", &booking()));
    assert_eq!(verdict(&broken).2, vec!["segments_do_not_connect".to_owned()]);
}

#[test]
fn the_ledger_reaches_policy() {
    let (mut engine, dir) = airline_engine();
    let mut outside = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    overwrite(&mut outside, "flight", "HAT298", |f| f["dates"]["2024-05-26"] = json!({"status": "delayed"}), "late");
    let certificate = args(json!({"user_id": USER, "amount": 100, "reservation_id": RESERVATION,
        "complaint": "delayed flight"}));
    let early = decide(&mut engine, &request(USER, "c1", "t1", "send_certificate", &certificate));
    assert_eq!(verdict(&early).2, vec!["delay_certificate_before_change_or_cancel".to_owned()]);
    propose_and_confirm(&mut engine, USER, "c1", "t2", "cancel_reservation", &cancel()).unwrap();
    let before = engine.record("user", USER).unwrap().unwrap().value["payment_methods"].as_object().unwrap().len();
    propose_and_confirm(&mut engine, USER, "c1", "t3", "send_certificate", &certificate).unwrap();
    let methods = engine.record("user", USER).unwrap().unwrap().value["payment_methods"].clone();
    assert_eq!(methods.as_object().unwrap().len(), before + 1);
    let (id, sent) = methods.as_object().unwrap().iter().find(|(_, m)| m["amount"].as_f64() == Some(100.0)).unwrap();
    assert!(id.starts_with("certificate_") && sent["source"] == "certificate");
    // Another conversation's ledger holds no change of this reservation.
    let elsewhere = decide(&mut engine, &request(USER, "c2", "t4", "send_certificate", &certificate));
    assert_eq!(verdict(&elsewhere).2, vec!["delay_certificate_before_change_or_cancel".to_owned()]);
}

/// Answers every semantic check "no": the words do not state the value, nor give any choice.
struct NotStated;

impl Provider for NotStated {
    fn complete(&self, request: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        let content =
            if request.schema_name == "value_classified" { r#"{"choice":"none"}"# } else { r#"{"answer":"no"}"# };
        Ok(ChatAnswer { content: content.to_owned(), prompt_tokens: 30, completion_tokens: 4 })
    }
}

#[test]
fn an_enum_the_user_must_say_carries_evidence() {
    let (mut engine, _dir) = airline_engine_with(Arc::new(NotStated));
    let asked = decide(&mut engine, &request(USER, "c1", "t1", "cancel_reservation", &cancel()));
    let (v, codes, _) = verdict(&asked);
    assert_eq!((v, codes), (Verdict::Ask, vec!["value_not_stated".to_owned()]));
    // With the check passing, the same act is held for confirmation.
    let (mut engine, _dir) = airline_engine();
    let held = decide(&mut engine, &request(USER, "c1", "t1", "cancel_reservation", &cancel()));
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts[0].reasons);
}

#[test]
fn a_pointer_reaches_into_any_user_entry_of_the_turn() {
    let (mut engine, _dir) = airline_engine();
    // The names were said two messages before the confirmation of intent.
    let names = "Ana Lee and Bo Kim are the two passengers now";
    let passengers = json!([
        {"first_name": {"entry": 0, "ptr": [1, 1], "copy": "Ana"}, "last_name": {"entry": 0, "ptr": [2, 2], "copy": "Lee"}, "dob": "1990-01-01"},
        {"first_name": {"entry": 0, "ptr": [4, 4], "copy": "Bo"}, "last_name": {"entry": 0, "ptr": [5, 5], "copy": "Kim"}, "dob": "1985-02-03"},
    ]);
    let body = json!({"conversation": "c1", "turn": "t1", "actor": USER, "at": NOW, "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": names}, {"kind": "model_reply", "text": "Shall I change them?"},
                    {"kind": "user", "text": "Yes please."}],
        "acts": [{"op": "update_reservation_passengers", "args": {"reservation_id": RESERVATION, "passengers": passengers}}]});
    let held = decide(&mut engine, &body);
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts[0].reasons);
    let confirmed = decide(&mut engine, &answer(USER, "t1-yes", "c1", &held.interactions[0].id));
    assert_eq!(verdict(&confirmed).0, Verdict::Commit, "{:?}", confirmed.acts[0].reasons);
    let written = engine.record("reservation", RESERVATION).unwrap().unwrap().value["passengers"].clone();
    assert_eq!(written[1], json!({"first_name": "Bo", "last_name": "Kim", "dob": "1985-02-03"}));
}

#[test]
fn a_dotted_when_key_is_an_error_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let contract = std::fs::read_to_string(airline_dir().join("contract.toml")).unwrap();
    let quoted = r#"when = { "payment_id.source" = "gift_card" }"#;
    assert!(contract.contains(quoted), "the airline contract tests a payment method's source in a `when`");
    std::fs::write(
        dir.path().join("contract.toml"),
        contract.replacen(quoted, r#"when = { payment_id.source = "gift_card" }"#, 1),
    )
    .unwrap();
    std::fs::copy(airline_dir().join("policies.cedar"), dir.path().join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(airline_dir().join("data"), dir.path().join("data")).unwrap();
    let error = load_contract(&dir.path().join("contract.toml")).unwrap_err().to_string();
    assert!(error.contains("when"), "{error}");
    // Quoted, it loads.
    load_contract(&airline_dir().join("contract.toml")).unwrap();
}

#[test]
fn the_contract_language_is_documented() {
    let page = std::fs::read_to_string(airline_dir().join("../../docs/contract.md"))
        .expect("docs/contract.md, the contract reference");
    for kind in [
        "enum", "record", "records", "member", "members", "text", "string", "date", "money", "integer", "bool",
        "objects",
    ] {
        assert!(page.contains(&format!("`{kind}`")), "docs/contract.md does not document the argument kind `{kind}`");
    }
    for topic in [
        "derive",
        "[expressions]",
        "effect",
        "context.args",
        "context.derived",
        "row(",
        "ledger",
        "history",
        "context.now",
    ] {
        assert!(page.contains(topic), "docs/contract.md does not mention `{topic}`");
    }
}

/// The airline contract with `changed_or_cancelled` read from the reservation's `history`
/// (its committed effects in every conversation) in place of the conversation's ledger, each
/// field of the event tested; in a folder of its own, with an engine over a new SQLite file.
fn history_engine() -> (warrant_engine::Engine<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let contract = std::fs::read_to_string(airline_dir().join("contract.toml")).unwrap();
    let ledger = r#"cel = """ledger.exists(e, e.operation in ['cancel_reservation', 'update_reservation_flights']
    && e.args.reservation_id == reservation_id.key)""""#;
    assert!(contract.contains(ledger), "the airline contract reads the ledger for a delay's certificate");
    let history = r#"cel = """history.reservation_id.exists(e, e.operation == 'cancel_reservation'
    && e.args.reservation_id == reservation_id.key && e.actor == 'juan_brown_1657' && e.conversation == 'c1'
    && e.at == '2024-05-15T15:01:00-05:00' && timestamp(e.at) < now && e.outcome == null)""""#;
    std::fs::write(dir.path().join("contract.toml"), contract.replacen(ledger, history, 1)).unwrap();
    std::fs::copy(airline_dir().join("policies.cedar"), dir.path().join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(airline_dir().join("data"), dir.path().join("data")).unwrap();
    let (contract, folder) = load_contract(&dir.path().join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    let model = ModelSource::Setup(ModelSetup::new(Box::new(Stated), "test-model"));
    (crate::build(contract, &folder, store, model), dir)
}

#[test]
fn the_resources_committed_events_reach_policy_from_any_conversation() {
    let (mut engine, _dir) = history_engine();
    // The system of record's own write (a fixture commit would be a turn no replay can read).
    let flight = engine.record("flight", "HAT298").unwrap().unwrap();
    let mut delayed = flight.value.clone();
    delayed["dates"]["2024-05-26"] = json!({"status": "delayed"});
    engine.put_record("flight", "HAT298", &delayed, Precondition::IfMatch(flight.revision)).unwrap();
    let certificate = args(json!({"user_id": USER, "amount": 100, "reservation_id": RESERVATION,
        "complaint": "delayed flight"}));
    let later = |request: Value| at(request, "2024-05-15T16:00:00-05:00");
    // Nothing committed on the reservation yet.
    let early = decide(&mut engine, &later(request(USER, "c2", "t1", "send_certificate", &certificate)));
    assert_eq!(verdict(&early).2, vec!["delay_certificate_before_change_or_cancel".to_owned()]);
    // Cancelled in one conversation (confirmed at 15:01), the certificate is sent in another,
    // whose ledger holds nothing: the reservation's own history says it was cancelled, by whom,
    // where and when.
    propose_and_confirm(&mut engine, USER, "c1", "t2", "cancel_reservation", &cancel()).unwrap();
    let held = decide(&mut engine, &later(request(USER, "c2", "t3", "send_certificate", &certificate)));
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts[0].reasons);
    let confirmed = decide(&mut engine, &later(answer(USER, "t3-yes", "c2", &held.interactions[0].id)));
    assert_eq!(verdict(&confirmed).0, Verdict::Commit, "{:?}", confirmed.acts[0].reasons);
    // The events read are on the replay record: every turn decides again from it alone.
    let stored = engine.stored_turn("c2", "t3-yes").unwrap().unwrap();
    let history = &stored.replay["facts"]["history"];
    assert_eq!(history[0]["row"], json!({"table": "reservation", "key": RESERVATION}), "{history}");
    assert_eq!(history[0]["events"][0]["event"]["kind"], "cancel_reservation", "{history}");
    let report = engine.replay().unwrap();
    assert_eq!(report.turns, report.identical, "{:?}", report.changes);
}
