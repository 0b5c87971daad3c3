//! The two backends keep the same tables with the same columns in the same order, so that
//! data and tools move between them.

use crate::fixture::{Backend, Fixture, admin};

/// Every table with its columns, in declaration order, sorted by table name.
type Shape = Vec<(String, Vec<String>)>;

fn shape(fx: &Fixture) -> Shape {
    match &fx.backend {
        Backend::Sqlite { path, .. } => {
            let conn = rusqlite::Connection::open(path).unwrap();
            let mut tables = conn
                .prepare(
                    "SELECT name FROM sqlite_schema WHERE type = 'table'
                     AND name NOT LIKE 'sqlite_%' ORDER BY name",
                )
                .unwrap();
            let names: Vec<String> = tables.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
            names
                .into_iter()
                .map(|table| {
                    let mut columns = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid").unwrap();
                    let columns = columns.query_map([&table], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
                    (table, columns)
                })
                .collect()
        }
        Backend::Postgres { conninfo, schema } => {
            let mut client = admin(conninfo);
            let mut shape: Shape = Vec::new();
            for row in client
                .query(
                    "SELECT table_name::text, column_name::text FROM information_schema.columns
                     WHERE table_schema = $1 ORDER BY table_name, ordinal_position",
                    &[schema],
                )
                .unwrap()
            {
                let (table, column): (String, String) = (row.get(0), row.get(1));
                match shape.last_mut() {
                    Some((last, columns)) if *last == table => columns.push(column),
                    _ => shape.push((table, vec![column])),
                }
            }
            shape
        }
    }
}

#[test]
fn both_backends_keep_the_same_tables_and_columns() {
    let sqlite = shape(&Fixture::sqlite());
    let postgres = shape(&Fixture::postgres());
    let tables: Vec<&str> = sqlite.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tables,
        [
            "audits",
            "due_jobs",
            "effect_holds",
            "effects",
            "events",
            "findings",
            "interactions",
            "outbox",
            "promotions",
            "prompt_promotions",
            "prompt_versions",
            "records",
            "schema_version",
            "seeds",
            "turns"
        ]
    );
    assert_eq!(sqlite, postgres);
}

/// A turn's effects (the query `Ledger::turn_effects` runs) are found through an index on both
/// backends, not by scanning every effect: replay reads them for every stored turn.
#[test]
fn a_turns_effects_are_read_through_an_index_on_both_backends() {
    const INDEX: &str = "effects_conversation_turn";
    let query = "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report
                 FROM effects WHERE conversation = 'c' AND turn = 't' ORDER BY id";
    let sqlite = Fixture::sqlite();
    let Backend::Sqlite { path, .. } = &sqlite.backend else { unreachable!() };
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut explain = conn.prepare(&format!("EXPLAIN QUERY PLAN {query}")).unwrap();
    let plan: Vec<String> = explain.query_map([], |row| row.get(3)).unwrap().map(Result::unwrap).collect();
    assert!(plan.iter().any(|step| step.contains(&format!("USING INDEX {INDEX}"))), "sqlite plan: {plan:?}");

    let postgres = Fixture::postgres();
    let Backend::Postgres { conninfo, schema } = &postgres.backend else { unreachable!() };
    let mut client = admin(conninfo);
    // An empty table is cheapest to scan whole; forbidding that asks which index the planner
    // would take for a store of any size.
    client.batch_execute(&format!("SET search_path TO {schema}; SET enable_seqscan = off")).unwrap();
    let plan: Vec<String> =
        client.query(&format!("EXPLAIN {query}"), &[]).unwrap().iter().map(|row| row.get(0)).collect();
    assert!(plan.iter().any(|line| line.contains(INDEX)), "postgres plan: {plan:?}");
}

/// A turn's JSON (request, response, replay record) is compressed with lz4 on a PostgreSQL server
/// that offers it, not with the server's default method: every commit compresses its replay
/// record. The check reads the method of a stored value, not only the column's setting.
#[test]
fn postgres_compresses_a_turns_json_with_lz4_where_the_server_offers_it() {
    let postgres = Fixture::postgres();
    let Backend::Postgres { conninfo, schema } = &postgres.backend else { unreachable!() };
    let mut client = admin(conninfo);
    let offered: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_settings
                            WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))",
            &[],
        )
        .unwrap()
        .get(0);
    // The server CI runs on is built with lz4; were it not, the step would leave the columns
    // alone, which the assertions below would report rather than pass.
    assert!(offered, "this PostgreSQL server offers no lz4: the test cannot tell the step did its work");
    let methods: Vec<(String, String)> = client
        .query(
            "SELECT a.attname::text, a.attcompression::text FROM pg_attribute a
             JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relname = 'turns' AND a.attname IN ('request', 'response', 'replay')
             ORDER BY a.attnum",
            &[schema],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let lz4 = |column: &str| (column.to_owned(), "l".to_owned());
    assert_eq!(methods, [lz4("request"), lz4("response"), lz4("replay")]);

    // A replay record large enough to be compressed is stored compressed with lz4.
    client.batch_execute(&format!("SET search_path TO {schema}")).unwrap();
    let big =
        serde_json::json!({"facts": (0..200).map(|i| format!("row {i} of a long replay record")).collect::<Vec<_>>()});
    client
        .execute(
            "INSERT INTO turns (conversation, turn, request, response, replay) VALUES ('c', 't', '{}', '{}', $1::text::json)",
            &[&big.to_string()],
        )
        .unwrap();
    let stored: Option<String> =
        client.query_one("SELECT pg_column_compression(replay) FROM turns WHERE turn = 't'", &[]).unwrap().get(0);
    assert_eq!(stored.as_deref(), Some("lz4"));
}
