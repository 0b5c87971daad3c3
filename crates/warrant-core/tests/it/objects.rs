//! `kind = "objects"`: a list of closed objects whose fields are of any argument kind, as the
//! τ-bench airline tools take them (`flights: [{flight_number, date}]`, `passengers:
//! [{first_name, last_name, dob}]`, `payment_methods: [{payment_id, amount}]`). Each element is
//! checked field by field (a record visible, a member present, a text a pointer, money exact),
//! a refusal names the element and field, CEL reads the list as maps and Cedar as a Set of
//! Records.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;

use crate::Rows;
use warrant_core::turn::{self, Decision, Verdict};

const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "user"

[records]
currency = "USD"

[[records.table]]
name = "user"
file = "users.json"
entity = "User"
fields.name = { kind = "text" }
fields.reservations = { kind = "list", of = { kind = "text" } }
fields.payment_methods = { kind = "map", of = { kind = "object", fields = { source = { kind = "text" }, amount = { kind = "money", optional = true } } } }

[[records.table]]
name = "flight"
file = "flights.json"
entity = "Flight"
fields.origin = { kind = "text" }
fields.price = { kind = "money" }

[[records.table]]
name = "booking"
file = "bookings.json"
entity = "Booking"
owner = "user_id"
fields.user_id = { kind = "text" }
fields.passengers = { kind = "list", of = { kind = "object", fields = { first_name = { kind = "text" }, last_name = { kind = "text" }, dob = { kind = "date" }, nickname = { kind = "text", optional = true } } } }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "book"
args.booking = { kind = "record", table = "booking" }
resource = "booking"

[operation.args.flights]
kind = "objects"
max_items = 2
fields.flight_number = { kind = "record", table = "flight" }
fields.date = { kind = "date", plain = true }

[operation.args.passengers]
kind = "objects"
fields.first_name = { kind = "text" }
fields.last_name = { kind = "text" }
fields.dob = { kind = "date", plain = true }
fields.nickname = { kind = "string", optional = true, max_length = 8 }

[operation.args.payment_methods]
kind = "objects"
fields.payment_id = { kind = "member", of = "actor", path = "payment_methods" }
fields.amount = { kind = "money", plain = true }

[[operation.derive]]
name = "price"
cel = "sum(flights.map(f, f.flight_number.price)) * size(passengers)"
type = "money"

[[operation.derive]]
name = "paid"
cel = "sum(payment_methods.map(p, p.amount))"
type = "money"

[[operation.derive]]
name = "gift_cards"
cel = "size(payment_methods.filter(p, p.payment_id.source == 'gift_card'))"
type = "integer"

[[operation.effect]]
set = "booking.passengers"
arg = "passengers"
"#;

const POLICY: &str = r#"
permit (principal, action, resource);
@id("paid_in_full")
forbid (principal, action == Action::"book", resource) unless { context.derived.paid == context.derived.price };
@id("one_passenger_named_ana")
forbid (principal, action == Action::"book", resource)
  when { context.args.passengers.contains({"first_name": "Bo", "last_name": "Kim", "dob": "1990-01-02"}) };
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "policy.cedar" => Ok(POLICY.into()),
            other => Err(format!("no `{other}`")),
        }
    }
}

fn contract() -> Contract {
    Contract::load("objects.toml", CONTRACT, &Files).unwrap()
}

fn facts() -> Rows {
    let rows = [
        (
            "user",
            "ana",
            json!({"name": "Ana", "reservations": [], "payment_methods": {
            "gift_card_1": {"source": "gift_card", "amount": 150}, "credit_card_2": {"source": "credit_card"}}}),
        ),
        ("user", "bo", json!({"name": "Bo", "reservations": [], "payment_methods": {}})),
        ("flight", "HAT001", json!({"origin": "SFO", "price": 100.5})),
        ("flight", "HAT002", json!({"origin": "JFK", "price": 49.5})),
        ("booking", "B1", json!({"user_id": "ana", "passengers": []})),
        ("booking", "B2", json!({"user_id": "bo", "passengers": []})),
    ];
    Rows(
        rows.into_iter()
            .map(|(t, k, v)| (format!("{t}/{k}"), Record { table: t.into(), key: k.into(), revision: 1, value: v }))
            .collect(),
    )
}

/// The user entry text pointers point into (words numbered from 0, the comma one of them):
/// `Ana` 5, `Lee` 6, `Bo` 8, `Kim` 9.
const WORDS: &str = "Book it for me , Ana Lee and Bo Kim .";

fn decide(args: Value) -> Decision {
    let contract = contract();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "ana",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": WORDS}],
        "acts": [{"op": "book", "args": args}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &facts(), &BTreeSet::new())
}

/// Two flights of 100.50 and 49.50 for one passenger: 150.00, paid 100 by gift card and 50 by
/// credit card.
fn good() -> Value {
    json!({
        "booking": "B1",
        "flights": [{"flight_number": "HAT001", "date": "2026-12-05"}, {"flight_number": "HAT002", "date": "2026-12-09"}],
        "passengers": [{"first_name": {"ptr": [5, 5]}, "last_name": {"ptr": [6, 6]}, "dob": "1990-01-01"}],
        "payment_methods": [{"payment_id": "gift_card_1", "amount": 100}, {"payment_id": "credit_card_2", "amount": 50.0}],
    })
}

fn first(decision: &Decision) -> (Verdict, String, Option<String>) {
    let act = &decision.response.acts[0];
    let reason = act.reasons.first();
    (act.verdict, reason.map_or(String::new(), |r| r.code.as_str().to_owned()), reason.and_then(|r| r.field.clone()))
}

fn with(path: &[&str], value: Value) -> Value {
    let mut args = good();
    let mut target = &mut args;
    let (last, parents) = path.split_last().unwrap();
    for part in parents {
        target = match part.parse::<usize>() {
            Ok(i) => &mut target[i],
            Err(_) => &mut target[*part],
        };
    }
    match last.parse::<usize>() {
        Ok(i) => target[i] = value,
        Err(_) => {
            if value.is_null() {
                target.as_object_mut().unwrap().remove(*last);
            } else {
                target[*last] = value;
            }
        }
    }
    args
}

#[test]
fn the_benchmark_s_list_arguments_arrive_as_they_are_and_commit() {
    let decision = decide(good());
    assert_eq!(first(&decision), (Verdict::Commit, String::new(), None), "{:?}", decision.response.acts);
    // The effect writes the passengers as the row holds them: the words pointed at, the day.
    let write = &decision.writes[0];
    assert_eq!(write.value["passengers"], json!([{"first_name": "Ana", "last_name": "Lee", "dob": "1990-01-01"}]));
    // The event carries each element's checked fields: a record's key, money in minor units.
    let args = &decision.response.effects[0].args;
    assert_eq!(args["flights"][1], json!({"flight_number": "HAT002", "date": "2026-12-09"}));
    assert_eq!(args["payment_methods"][0]["amount"], json!({"units": 10000, "currency": "USD"}));
    assert_eq!(args["payment_methods"][1]["payment_id"], "credit_card_2");
}

#[test]
fn cel_reads_each_element_s_record_and_member_fields_and_policy_the_sums() {
    // Paid 149.99 of 150.00: the policy compares the CEL sums in minor units.
    let short = decide(with(&["payment_methods", "1", "amount"], json!(49.99)));
    let act = &short.response.acts[0];
    assert_eq!(act.verdict, Verdict::Refuse, "{act:?}");
    assert_eq!(act.reasons[0].policies, ["paid_in_full"], "{act:?}");
    // Two passengers double the price: then 300.00 must be paid.
    let bo = json!({"first_name": {"ptr": [8, 8]}, "last_name": {"ptr": [9, 9]}, "dob": "1990-01-02"});
    let mut two = good();
    two["passengers"].as_array_mut().unwrap().push(bo);
    two["payment_methods"][1]["amount"] = json!(200);
    let decided = decide(two);
    let act = &decided.response.acts[0];
    // The second passenger is Bo Kim, born 1990-01-02, whom the policy names as a Record of
    // the Set: the act reached Cedar with both elements, the sums agreeing.
    assert_eq!(act.verdict, Verdict::Refuse, "{act:?}");
    assert_eq!(act.reasons[0].policies, ["one_passenger_named_ana"], "{act:?}");
}

#[test]
fn each_bad_element_is_refused_naming_its_element_and_field() {
    let cases = [
        (with(&["flights", "1", "flight_numbr"], json!("HAT002")), "unknown_argument", "args.flights[1].flight_numbr"),
        (with(&["flights", "0", "date"], Value::Null), "missing_argument", "args.flights[0].date"),
        (with(&["flights", "1", "flight_number"], json!("HAT404")), "unknown_record", "args.flights[1].flight_number"),
        (with(&["flights", "0", "date"], json!("2026-02-30")), "date_invalid", "args.flights[0].date"),
        (
            with(&["payment_methods", "0", "payment_id"], json!("gift_card_9")),
            "not_a_member",
            "args.payment_methods[0].payment_id",
        ),
        (with(&["payment_methods", "1", "amount"], json!(49.999)), "money_invalid", "args.payment_methods[1].amount"),
        (
            with(&["passengers", "0", "first_name"], json!({"ptr": [40, 41]})),
            "pointer_invalid",
            "args.passengers[0].first_name",
        ),
        (
            with(&["passengers", "0", "nickname"], json!("Annabelle-Lee")),
            "string_too_long",
            "args.passengers[0].nickname",
        ),
        (with(&["passengers", "0"], json!("Ana Lee")), "wrong_argument_type", "args.passengers[0]"),
        (with(&["flights"], json!({"flight_number": "HAT001"})), "wrong_argument_type", "args.flights"),
        (with(&["passengers"], json!([])), "too_few_items", "args.passengers"),
    ];
    for (args, code, field) in cases {
        let decision = decide(args);
        let (_, got, at) = first(&decision);
        assert_eq!((got.as_str(), at.as_deref()), (code, Some(field)), "{:?}", decision.response.acts);
        assert!(decision.writes.is_empty());
    }
    let mut three = good();
    three["flights"].as_array_mut().unwrap().push(json!({"flight_number": "HAT001", "date": "2026-12-10"}));
    assert_eq!(first(&decide(three)).1, "too_many_items");
    // A money field without `plain` takes only the wire form; with it, both.
    let wire = with(&["payment_methods", "1", "amount"], json!({"amount": "50.00", "currency": "USD"}));
    assert_eq!(first(&decide(wire)).0, Verdict::Commit);
}

#[test]
fn cedar_receives_a_set_of_records_and_the_tools_an_array_of_objects() {
    let contract = contract();
    let context = &contract.cedar_schema()[""]["actions"]["book"]["appliesTo"]["context"]["attributes"]["args"];
    let flights = &context["attributes"]["flights"];
    assert_eq!(flights["type"], "Set", "{flights}");
    assert_eq!(flights["element"]["attributes"]["flight_number"], json!({"type": "String"}));
    assert_eq!(
        context["attributes"]["passengers"]["element"]["attributes"]["nickname"],
        json!({"type": "String", "required": false})
    );
    assert_eq!(context["attributes"]["payment_methods"]["element"]["attributes"]["amount"]["type"], "Record");
}

#[test]
fn an_objects_argument_s_declaration_is_checked_when_the_contract_loads() {
    let cases = [
        (
            "fields.date = { kind = \"date\", plain = true }",
            "fields.date = { kind = \"objects\" }",
            "cannot be of kind `objects`",
        ),
        ("max_items = 2", "max_items = 0", "`max_items` is below `min_items`"),
        ("fields.first_name = { kind = \"text\" }", "fields.first_name = { kind = \"txt\" }", "field `first_name`"),
        (
            "fields.dob = { kind = \"date\", plain = true }",
            "fields.dob = { kind = \"text\", plain = true }",
            "`plain` applies to",
        ),
        (
            "fields.payment_id = { kind = \"member\", of = \"actor\", path = \"payment_methods\" }",
            "fields.payment_id = { kind = \"member\", of = \"flights\", path = \"payment_methods\" }",
            "`of` must be `actor` or a record argument",
        ),
        (
            "fields.payment_id = { kind = \"member\", of = \"actor\", path = \"payment_methods\" }",
            "fields.payment_id = { kind = \"member\", of = \"actor\", path = \"payment_method\" }",
            "has no field `payment_method`",
        ),
    ];
    for (from, to, expected) in cases {
        let text = CONTRACT.replacen(from, to, 1);
        assert_ne!(text, CONTRACT, "{from}");
        let error = Contract::load("objects.toml", &text, &Files).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(error.starts_with("objects.toml:"), "{error}");
    }
    // The passengers written into a list whose elements need a field the argument lacks.
    let lacking = CONTRACT.replacen("fields.dob = { kind = \"date\", plain = true }\n", "", 1);
    let error = Contract::load("objects.toml", &lacking, &Files).unwrap_err().to_string();
    assert!(error.contains("lack `dob`"), "{error}");
}

#[test]
fn a_plain_name_in_an_element_is_located_and_then_stated_like_a_text_argument() {
    use warrant_core::check::{CheckAnswer, CheckAnswers, CheckVerdict};
    let plain = with(&["passengers", "0", "first_name"], json!("Ana"));
    let contract = contract();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "ana",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": WORDS}],
        "acts": [{"op": "book", "args": plain}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    let asked = turn::decide(&contract, &valid, &facts(), &BTreeSet::new());
    assert_eq!(asked.response.acts[0].verdict, Verdict::Ask, "{:?}", asked.response.acts);
    let locate = asked.checks.iter().find(|c| c.arg == "passengers[0].first_name").expect("a locate question");
    assert_eq!(locate.task.to_string(), "locate");
    // Located, the value is the words pointed at, and then it must have been stated.
    let pointer = serde_json::from_value(json!({"ptr": [5, 5]})).unwrap();
    let mut answers = CheckAnswers::new();
    answers.insert(locate.id.clone(), CheckAnswer::Located { pointer });
    let stated = turn::decide_checked(&contract, &valid, &facts(), &BTreeSet::new(), &answers);
    let value_stated = stated.checks.iter().find(|c| c.arg == "passengers[0].first_name" && c.id != locate.id);
    let value_stated = value_stated.expect("a value_stated question");
    answers.insert(value_stated.id.clone(), CheckAnswer::Verdict { verdict: CheckVerdict::Pass });
    let committed = turn::decide_checked(&contract, &valid, &facts(), &BTreeSet::new(), &answers);
    assert_eq!(committed.response.acts[0].verdict, Verdict::Commit, "{:?}", committed.response.acts);
    assert_eq!(committed.writes[0].value["passengers"][0]["first_name"], "Ana");
}

/// The contract with a field a model commonly adds declared on each flight, `equals` its row's
/// `origin`, and an argument beside the booking `equals` its `user_id`.
fn with_equals() -> Contract {
    let text = CONTRACT
        .replacen(
            "fields.date = { kind = \"date\", plain = true }\n",
            "fields.date = { kind = \"date\", plain = true }\nfields.origin = { kind = \"string\", optional = true, equals = \"flight_number.origin\" }\n",
            1,
        )
        .replacen(
            "resource = \"booking\"\n",
            "resource = \"booking\"\nargs.owner = { kind = \"string\", optional = true, equals = \"booking.user_id\" }\n",
            1,
        );
    assert!(text.contains("equals = \"flight_number.origin\"") && text.contains("equals = \"booking.user_id\""));
    Contract::load("objects-equals.toml", &text, &Files).unwrap()
}

fn decide_equals(args: Value) -> Decision {
    let contract = with_equals();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "ana",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": WORDS}],
        "acts": [{"op": "book", "args": args}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &facts(), &BTreeSet::new())
}

#[test]
fn a_declared_field_that_equals_its_row_s_is_accepted_and_one_that_differs_is_refused_naming_it() {
    // Without the fields, and with the rows' own values, the act commits as before.
    assert_eq!(first(&decide_equals(good())).0, Verdict::Commit);
    let mut agreeing = with(&["flights", "1", "origin"], json!("JFK"));
    agreeing["flights"][0]["origin"] = json!("SFO");
    agreeing["owner"] = json!("ana");
    let decision = decide_equals(agreeing.clone());
    assert_eq!(first(&decision).0, Verdict::Commit, "{:?}", decision.response.acts[0].reasons);
    assert_eq!(decision.writes, decide_equals(good()).writes, "the fields change nothing the act writes");
    // Another airport on the second flight: refused, naming that element's field.
    let mut other = agreeing.clone();
    other["flights"][1]["origin"] = json!("SFO");
    let refused = decide_equals(other);
    assert_eq!(
        first(&refused),
        (Verdict::Refuse, "record_field_mismatch".into(), Some("args.flights[1].origin".into()))
    );
    let detail = refused.response.acts[0].reasons[0].detail.clone().unwrap();
    assert!(detail.contains("`SFO`") && detail.contains("`JFK`") && detail.contains("HAT002"), "{detail}");
    // An argument beside its record: the same.
    let mut owner = agreeing.clone();
    owner["owner"] = json!("bo");
    assert_eq!(
        first(&decide_equals(owner)),
        (Verdict::Refuse, "record_field_mismatch".into(), Some("args.owner".into()))
    );
    // Case and spacing are not forgiven: values are compared exactly, never as words.
    let mut lower = agreeing.clone();
    lower["flights"][0]["origin"] = json!("sfo");
    assert_eq!(first(&decide_equals(lower)).1, "record_field_mismatch");
    // A field still not declared is refused, as ever; the plain contract refuses the declared one.
    let mut undeclared = agreeing.clone();
    undeclared["flights"][0]["destination"] = json!("JFK");
    assert_eq!(
        first(&decide_equals(undeclared)),
        (Verdict::Refuse, "unknown_argument".into(), Some("args.flights[0].destination".into()))
    );
    assert_eq!(
        first(&decide(with(&["flights", "0", "origin"], json!("SFO")))),
        (Verdict::Refuse, "unknown_argument".into(), Some("args.flights[0].origin".into()))
    );
}

#[test]
fn equals_names_a_record_and_a_field_its_row_holds() {
    let load = |from: &str, to: &str| {
        let text = CONTRACT.replacen(
            "fields.date = { kind = \"date\", plain = true }\n",
            &format!("fields.date = {{ kind = \"date\", plain = true }}\n{from}{to}\n"),
            1,
        );
        Contract::load("objects-equals.toml", &text, &Files).map(|_| ()).map_err(|e| e.kind.to_string())
    };
    assert_eq!(load("fields.origin = ", "{ kind = \"string\", equals = \"flight_number.origin\" }"), Ok(()));
    let errors = [
        ("{ kind = \"string\", equals = \"flight_number.orgin\" }", "`flight` has no field `orgin`"),
        ("{ kind = \"string\", equals = \"date.origin\" }", "`date` is not a `record` argument"),
        ("{ kind = \"string\", equals = \"origin\" }", "`equals` is `RECORD.FIELD`"),
        ("{ kind = \"integer\", equals = \"flight_number.origin\" }", "`flight.origin` is text"),
        ("{ kind = \"text\", equals = \"flight_number.origin\" }", "`equals` applies to `string`"),
        ("{ kind = \"money\", equals = \"flight_number.price\" }", "`equals` applies to `string`"),
    ];
    for (field, message) in errors {
        let error = load("fields.origin = ", field).unwrap_err();
        assert!(error.contains(message), "{field}: {error}");
    }
}
