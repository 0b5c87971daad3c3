//! The ladder's routes through the router: a guard's findings with their audits, one audit per
//! finding, the ladder state of guards and prompts, each scoped to its tenant; and recent turns
//! paged newest first.

use serde_json::{Value, json};

use crate::{Place, call, request};

/// A retail turn whose draft announces an order lookup it did not make: one finding.
pub fn announcing(conversation: &str, turn: &str) -> Value {
    let mut body = request(conversation, turn, json!([]), json!([]));
    body["draft"] = json!({"text": "Sure. Let me check your order.", "claims": []});
    body["calls"] = json!([]);
    body
}

async fn one_finding(app: &axum::Router, key: &str) -> String {
    let (status, decided) = call(app, "POST", "/v1/turns", Some(key), Some(announcing("g", "t1"))).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["findings"].as_array().map(Vec::len), Some(1), "{decided}");
    let (status, listed) = call(app, "GET", "/v1/guards/announcement/findings", Some(key), None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["findings"][0]["audit"], Value::Null, "{listed}");
    listed["findings"][0]["finding"]["id"].as_str().unwrap().to_owned()
}

async fn ladder_routes_audit_a_finding_once(mut place: Place) {
    let (_, key) = place.tenant("ladder");
    let app = place.router();
    let k = Some(key.as_str());
    let id = one_finding(&app, &key).await;
    let path = format!("/v1/findings/{id}/audit");

    let (status, ladder) = call(&app, "GET", "/v1/ladder", k, None).await;
    assert_eq!(status, 200, "{ladder}");
    assert_eq!(
        (ladder["guards"][0]["findings"].as_u64(), ladder["guards"][0]["audits"]["audited"].as_u64()),
        (Some(1), Some(0)),
        "{ladder}"
    );
    assert_eq!(ladder["guards"][0]["bars"]["min_audited"], 50, "{ladder}");

    let audit = json!({"label": "false_positive", "who": "ana"});
    let (status, audited) = call(&app, "POST", &path, k, Some(audit.clone())).await;
    assert_eq!(status, 200, "{audited}");
    assert_eq!((audited["finding"].as_str(), audited["label"].as_str()), (Some(id.as_str()), Some("false_positive")));

    // A second audit, agreeing or not, writes nothing and says so with its code.
    let (status, again) = call(&app, "POST", &path, k, Some(json!({"label": "true_positive", "who": "bo"}))).await;
    assert_eq!(
        (status.as_u16(), &again["error"]["code"], &again["error"]["field"]),
        (409, &json!("finding_already_audited"), &json!("id")),
        "{again}"
    );
    let (_, listed) = call(&app, "GET", "/v1/guards/announcement/findings", k, None).await;
    assert_eq!(
        (&listed["findings"][0]["audit"]["label"], &listed["findings"][0]["audit"]["who"]),
        (&json!("false_positive"), &json!("ana")),
        "{listed}"
    );
    let (_, unaudited) = call(&app, "GET", "/v1/guards/announcement/findings?unaudited=true", k, None).await;
    assert_eq!(unaudited["findings"], json!([]), "{unaudited}");

    let (_, ladder) = call(&app, "GET", "/v1/ladder", k, None).await;
    let guard = &ladder["guards"][0];
    assert_eq!(
        (guard["audits"]["audited"].as_u64(), guard["audits"]["false_positives"].as_u64()),
        (Some(1), Some(1)),
        "{ladder}"
    );
    assert_eq!(guard["false_positive_rate"], 1.0, "{ladder}");
    assert_eq!(guard["mode"], "observe", "{ladder}");
    let tasks: Vec<&str> = ladder["prompts"].as_array().unwrap().iter().map(|p| p["task"].as_str().unwrap()).collect();
    assert_eq!(
        tasks,
        ["value_stated", "locate", "uncovered_request", "claims_coverage", "rewrite", "value_classified"],
        "{ladder}"
    );
    assert_eq!(ladder["prompts"][0]["active"], ladder["prompts"][0]["builtin"], "{ladder}");

    // Another tenant neither sees nor audits it.
    let (_, other) = place.tenant("other");
    let o = Some(other.as_str());
    let (_, theirs) = call(&app, "GET", "/v1/guards/announcement/findings", o, None).await;
    assert_eq!(theirs["findings"], json!([]), "{theirs}");
    let (status, refused) = call(&app, "POST", &path, o, Some(audit)).await;
    assert_eq!((status.as_u16(), &refused["error"]["code"]), (404, &json!("unknown_finding")), "{refused}");
    let (_, theirs) = call(&app, "GET", "/v1/ladder", o, None).await;
    assert_eq!(theirs["guards"][0]["findings"], 0, "{theirs}");
}

#[tokio::test]
async fn a_finding_is_audited_once_and_counted_on_the_ladder_on_sqlite() {
    ladder_routes_audit_a_finding_once(Place::sqlite()).await;
}

#[tokio::test]
async fn a_finding_is_audited_once_and_counted_on_the_ladder_on_postgres() {
    ladder_routes_audit_a_finding_once(Place::postgres()).await;
}

#[tokio::test]
async fn bad_audits_and_queries_name_the_field_at_fault_and_write_nothing() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("bad");
    let app = place.router();
    let k = Some(key.as_str());
    let id = one_finding(&app, &key).await;
    let path = format!("/v1/findings/{id}/audit");
    let cases = [
        (
            "a label outside the closed set",
            "POST",
            path.clone(),
            Some(json!({"label": "wrong", "who": "ana"})),
            400,
            "invalid_input",
            json!("label"),
        ),
        (
            "a sample's label on a flag",
            "POST",
            path.clone(),
            Some(json!({"label": "miss", "who": "ana"})),
            400,
            "audit_label_does_not_fit",
            json!("label"),
        ),
        ("no who", "POST", path.clone(), Some(json!({"label": "true_positive"})), 400, "invalid_input", json!("who")),
        (
            "an empty who",
            "POST",
            path.clone(),
            Some(json!({"label": "true_positive", "who": " "})),
            400,
            "invalid_input",
            json!("who"),
        ),
        (
            "an unknown field",
            "POST",
            path.clone(),
            Some(json!({"label": "true_positive", "who": "ana", "why": "x"})),
            400,
            "invalid_input",
            json!("why"),
        ),
        (
            "an unknown finding",
            "POST",
            "/v1/findings/fnd_nope/audit".into(),
            Some(json!({"label": "true_positive", "who": "ana"})),
            404,
            "unknown_finding",
            json!("id"),
        ),
        (
            "an unknown guard",
            "GET",
            "/v1/guards/politeness/findings".into(),
            None,
            404,
            "unknown_guard",
            json!("guard"),
        ),
        (
            "a bad filter",
            "GET",
            "/v1/guards/announcement/findings?unaudited=maybe".into(),
            None,
            400,
            "invalid_input",
            json!("unaudited"),
        ),
        (
            "an unknown filter",
            "GET",
            "/v1/guards/announcement/findings?audited=true".into(),
            None,
            400,
            "invalid_input",
            json!("audited"),
        ),
        ("a limit out of range", "GET", "/v1/turns?limit=0".into(), None, 400, "invalid_input", json!("limit")),
        ("a bad cursor", "GET", "/v1/turns?before=soon".into(), None, 400, "invalid_input", json!("before")),
    ];
    for (what, method, path, body, status, code, field) in cases {
        let (got, answer) = call(&app, method, &path, k, body).await;
        assert_eq!(
            (got.as_u16(), &answer["error"]["code"], &answer["error"]["field"]),
            (status, &json!(code), &field),
            "{what}: {answer}"
        );
    }
    let (_, listed) = call(&app, "GET", "/v1/guards/announcement/findings?unaudited=true", k, None).await;
    assert_eq!(listed["findings"][0]["finding"]["id"], json!(id), "a refused audit wrote something: {listed}");
}

#[tokio::test]
async fn recent_turns_come_newest_first_and_page_back_with_the_cursor() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("pages");
    let app = place.router();
    let k = Some(key.as_str());
    for turn in ["t1", "t2", "t3"] {
        let (status, decided) =
            call(&app, "POST", "/v1/turns", k, Some(request("c", turn, json!([]), json!([])))).await;
        assert_eq!(status, 200, "{decided}");
    }
    let turns = |page: &Value| -> Vec<String> {
        page["turns"].as_array().unwrap().iter().map(|t| t["turn"].as_str().unwrap().to_owned()).collect()
    };
    let (_, first) = call(&app, "GET", "/v1/turns?limit=2", k, None).await;
    assert_eq!(turns(&first), ["t3", "t2"], "{first}");
    let next = first["next"].as_i64().unwrap();
    let (_, second) = call(&app, "GET", &format!("/v1/turns?limit=2&before={next}"), k, None).await;
    assert_eq!(turns(&second), ["t1"], "{second}");
    assert_eq!(second["next"], Value::Null, "{second}");
    let (_, all) = call(&app, "GET", "/v1/turns?limit=3", k, None).await;
    assert_eq!((turns(&all).len(), &all["next"]), (3, &Value::Null), "an exact last page says there is no next: {all}");
}
