//! The statements of a commit on PostgreSQL, each built once and read back once, whether it
//! runs alone or in a pipeline. A commit's steps are fixed in advance (`txn::plan`) and judged
//! in order, so [`PgTxn::pipelined`] sends every step up to the first write that must look
//! before it writes, and reads their answers after: a commit costs two or three round trips
//! (the pipeline, and `COMMIT`) rather than one a statement. Steps sent after one whose result
//! ends the commit run inside the transaction that is then rolled back.

use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row};

use super::client::Session;
use super::{LOCK_TURN, PgTxn, violated};
use crate::commit::{Answer, EffectHold, RecordWrite};
use crate::error::StoreError;
use crate::ladder::FindingRow;
use crate::row_cache::RowCache;
use crate::rows::{EffectRow, EventRow, InteractionRow, Record, SharedRecord, StoredTurn, TurnRow};
use crate::txn::{self, Action, EffectInsert, Found};

/// A statement and its parameters.
pub(super) struct Request<'a> {
    pub(super) sql: &'static str,
    pub(super) params: Vec<Box<dyn ToSql + Sync + 'a>>,
}

/// Builds a [`Request`] from the statement and its parameters, each borrowed or owned.
macro_rules! request {
    ($sql:expr $(, $param:expr)* $(,)?) => {
        Request { sql: $sql, params: vec![$(Box::new($param) as Box<dyn ToSql + Sync + '_>),*] }
    };
}

pub(super) const SELECT_TURN: &str = "SELECT seq, conversation, turn, request, response, replay
     FROM turns WHERE conversation = $1 AND turn = $2";

/// Inserts a turn, its sequence number taken only once its floor lock is held: the floor is
/// the sequence's last value, read before the lock and so no higher than the number taken.
/// The INSERT reads its row from the locking query, so the number is taken after the lock.
const INSERT_TURN: &str = "WITH floor AS (
         SELECT pg_advisory_xact_lock_shared((hashtext($6)::bigint << 32) | (last_value & 4294967295))
         FROM turns_seq_seq
     )
     INSERT INTO turns (conversation, turn, request, response, replay)
     SELECT $1::text, $2::text, $3::text::json, $4::text::json, $5::text::json FROM floor
     RETURNING seq";

/// Waits for a concurrent commit of the same turn to end. The lookup after it must be a
/// statement of its own: at READ COMMITTED each statement sees what was committed when it
/// began, and the lookup begins after the wait.
pub(super) fn claim<'a>(schema: &'a str, conversation: &'a str, turn: &'a str) -> Request<'a> {
    request!(
        "SELECT pg_advisory_xact_lock($1, hashtext($2::text || '/' || $3::text || '/' || $4::text))",
        LOCK_TURN,
        schema,
        conversation,
        turn,
    )
}

pub(super) fn select_turn<'a>(conversation: &'a str, turn: &'a str) -> Request<'a> {
    request!(SELECT_TURN, conversation, turn)
}

/// A row as a decision reads it: its revision and value, when it is stored and not deleted.
pub(super) const SELECT_RECORD: &str =
    "SELECT revision, value FROM records WHERE tbl = $1 AND key = $2 AND NOT deleted";

/// The effect that holds a row: one whose outcome has not arrived (or is `unknown`), the
/// first by id.
pub(super) const SELECT_PENDING: &str = "SELECT h.effect FROM effect_holds h JOIN effects e ON e.id = h.effect
     WHERE h.tbl = $1 AND h.key = $2 AND (e.outcome IS NULL OR e.outcome = 'unknown')
     ORDER BY h.effect LIMIT 1";

/// A row as [`SELECT_RECORD`] reads it, its value as the text stored, so that a row read
/// before from the same text is not parsed again ([`RowCache`]).
pub(super) const SELECT_SHARED_RECORD: &str =
    "SELECT revision, value::text FROM records WHERE tbl = $1 AND key = $2 AND NOT deleted";

pub(super) fn select_shared_record<'a>(table: &'a str, key: &'a str) -> Request<'a> {
    request!(SELECT_SHARED_RECORD, table, key)
}

pub(super) fn select_pending<'a>(table: &'a str, key: &'a str) -> Request<'a> {
    request!(SELECT_PENDING, table, key)
}

/// The row [`SELECT_RECORD`] found, if any.
pub(super) fn found_record(table: &str, key: &str, rows: &[Row]) -> Result<Option<Record>, Error> {
    rows.first()
        .map(|row| {
            Ok(Record {
                table: table.to_owned(),
                key: key.to_owned(),
                revision: row.try_get(0)?,
                value: row.try_get(1)?,
            })
        })
        .transpose()
}

/// The row [`SELECT_SHARED_RECORD`] found, if any, its value from `rows` when read before from
/// the same text.
pub(super) fn found_shared(
    table: &str,
    key: &str,
    found: &[Row],
    rows: &RowCache,
) -> Result<Option<SharedRecord>, StoreError> {
    let Some(row) = found.first() else { return Ok(None) };
    let text: &str = row.try_get(1)?;
    Ok(Some(SharedRecord {
        table: table.to_owned(),
        key: key.to_owned(),
        revision: row.try_get(0)?,
        value: rows.value(table, key, text)?,
    }))
}

/// The effect [`SELECT_PENDING`] found, if any.
pub(super) fn found_pending(rows: &[Row]) -> Result<Option<String>, Error> {
    rows.first().map(|row| row.try_get(0)).transpose()
}

/// A shared lock: a writer of the row waits until this commit ends, and the revision read is
/// the latest committed one (a locked row is read again once its writer ends).
pub(super) fn lock_read<'a>(table: &'a str, key: &'a str) -> Request<'a> {
    request!("SELECT revision FROM records WHERE tbl = $1 AND key = $2 AND NOT deleted FOR SHARE", table, key)
}

pub(super) fn record_revision<'a>(table: &'a str, key: &'a str) -> Request<'a> {
    request!("SELECT revision FROM records WHERE tbl = $1 AND key = $2 AND NOT deleted", table, key)
}

pub(super) fn update_record(write: &RecordWrite, revision: i64) -> Request<'_> {
    request!(
        "UPDATE records SET value = $4, revision = $5
         WHERE tbl = $1 AND key = $2 AND revision = $3 AND NOT deleted RETURNING 1",
        &write.table,
        &write.key,
        write.expected_revision,
        &write.value,
        revision,
    )
}

/// A concurrent commit of the same idempotency key makes this wait until it ends, then fail on
/// the constraint, so the key is decided here and nowhere else.
pub(super) fn insert_effect(effect: &EffectRow) -> Request<'_> {
    request!(
        "INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &effect.id,
        &effect.idempotency_key,
        &effect.conversation,
        &effect.turn,
        &effect.op,
        &effect.payload,
    )
}

pub(super) fn insert_hold(hold: &EffectHold) -> Request<'_> {
    request!("INSERT INTO effect_holds (tbl, key, effect) VALUES ($1, $2, $3)", &hold.table, &hold.key, &hold.effect)
}

pub(super) fn insert_interaction(interaction: &InteractionRow) -> Request<'_> {
    request!(
        "INSERT INTO interactions (id, conversation, turn, payload, options, state)
         VALUES ($1, $2, $3, $4, $5, 'open')",
        &interaction.id,
        &interaction.conversation,
        &interaction.turn,
        &interaction.payload,
        txn::options_json(&interaction.options),
    )
}

/// A concurrent answer makes this wait, then check `state` again on the answered row.
pub(super) fn answer<'a>(answer: &'a Answer, turn: &'a str) -> Request<'a> {
    request!(
        "UPDATE interactions SET state = 'answered', answer_option = $2, answer_turn = $3
         WHERE id = $1 AND state = 'open' RETURNING 1",
        &answer.interaction,
        &answer.option,
        turn,
    )
}

pub(super) fn insert_turn<'a>(turn: &'a TurnRow, schema: &'a str) -> Request<'a> {
    request!(
        INSERT_TURN,
        &turn.conversation,
        &turn.turn,
        turn.request.as_str(),
        turn.response.as_str(),
        turn.replay.as_str(),
        schema,
    )
}

pub(super) fn insert_event(event: &EventRow) -> Request<'_> {
    request!(
        "INSERT INTO events (id, conversation, kind, payload, effect)
         VALUES ($1, $2, $3, $4, $5) RETURNING seq",
        &event.id,
        &event.conversation,
        &event.kind,
        &event.payload,
        &event.effect,
    )
}

pub(super) fn insert_finding(finding: &FindingRow) -> Request<'_> {
    request!(
        "INSERT INTO findings (id, guard, version, conversation, turn, kind, payload, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING 1",
        &finding.id,
        &finding.guard,
        &finding.version,
        &finding.conversation,
        &finding.turn,
        finding.kind.as_str(),
        &finding.payload,
        &finding.at,
    )
}

/// The turn a lookup found, if any.
pub(super) fn found_turn(rows: &[Row]) -> Result<Option<StoredTurn>, StoreError> {
    rows.first().map(decode_turn).transpose()
}

/// The revision a lookup found, if any.
pub(super) fn found_revision(rows: &[Row]) -> Result<Option<i64>, StoreError> {
    Ok(rows.first().map(|row| row.try_get(0)).transpose()?)
}

/// Whether a statement that answers a row for each row it wrote wrote one.
pub(super) fn wrote_one(rows: &[Row]) -> bool {
    rows.len() == 1
}

pub(super) fn effect_inserted(
    inserted: Result<Vec<Row>, Error>,
    effect: &EffectRow,
) -> Result<EffectInsert, StoreError> {
    match violated(&inserted, &SqlState::UNIQUE_VIOLATION) {
        Some("effects_idempotency_key_key") => Ok(EffectInsert::KeyTaken),
        Some("effects_pkey") => Err(StoreError::IdTaken { kind: "effect", id: effect.id.clone() }),
        _ => {
            inserted?;
            Ok(EffectInsert::Inserted)
        }
    }
}

pub(super) fn interaction_inserted(
    inserted: Result<Vec<Row>, Error>,
    interaction: &InteractionRow,
) -> Result<(), StoreError> {
    if violated(&inserted, &SqlState::UNIQUE_VIOLATION) == Some("interactions_pkey") {
        return Err(StoreError::IdTaken { kind: "interaction", id: interaction.id.clone() });
    }
    inserted?;
    Ok(())
}

/// The turn's sequence number, or `None` when (conversation, turn) is taken.
pub(super) fn turn_inserted(inserted: Result<Vec<Row>, Error>) -> Result<Option<i64>, StoreError> {
    if violated(&inserted, &SqlState::UNIQUE_VIOLATION) == Some("turns_conversation_turn_key") {
        return Ok(None);
    }
    one_seq(inserted?).map(Some)
}

/// The event's sequence number.
pub(super) fn event_inserted(inserted: Result<Vec<Row>, Error>, event: &EventRow) -> Result<i64, StoreError> {
    if violated(&inserted, &SqlState::UNIQUE_VIOLATION) == Some("events_id_key") {
        return Err(StoreError::IdTaken { kind: "event", id: event.id.clone() });
    }
    if violated(&inserted, &SqlState::FOREIGN_KEY_VIOLATION) == Some("events_effect_fkey") {
        return Err(StoreError::UnknownEffectReference {
            event: event.id.clone(),
            effect: event.effect.clone().unwrap_or_default(),
        });
    }
    one_seq(inserted?)
}

fn one_seq(rows: Vec<Row>) -> Result<i64, StoreError> {
    match rows.as_slice() {
        [row] => Ok(row.try_get(0)?),
        _ => Err(StoreError::Corrupt { what: format!("an insert answered {} sequence numbers", rows.len()) }),
    }
}

pub(super) fn decode_turn(row: &Row) -> Result<StoredTurn, StoreError> {
    Ok(StoredTurn {
        seq: row.try_get(0)?,
        conversation: row.try_get(1)?,
        turn: row.try_get(2)?,
        request: row.try_get(3)?,
        response: row.try_get(4)?,
        replay: row.try_get(5)?,
    })
}

impl<C: Session> PgTxn<'_, C> {
    /// Runs one statement and waits for its rows.
    pub(super) fn run(&mut self, request: &Request<'_>) -> Result<Vec<Row>, Error> {
        let statement = self.prepared(request.sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = request.params.iter().map(|p| &**p as _).collect();
        self.tx.query(&statement, &params)
    }

    /// Sends every statement before it reads any answer; the outer error is the connection's.
    pub(super) fn run_all(&mut self, requests: &[Request<'_>]) -> Result<Vec<Result<Vec<Row>, Error>>, Error> {
        // Prepared first, each once per connection: one prepared in the pipeline would run
        // after the statements sent behind it.
        let statements = requests.iter().map(|request| self.prepared(request.sql)).collect::<Result<Vec<_>, _>>()?;
        let params: Vec<Vec<&(dyn ToSql + Sync)>> =
            requests.iter().map(|request| request.params.iter().map(|p| &**p as _).collect()).collect();
        let sent: Vec<_> =
            statements.iter().zip(&params).map(|(statement, params)| (statement, params.as_slice())).collect();
        self.tx.pipeline(&sent)
    }

    /// The commit's steps from the first: every step up to the first [`Action::Write`] in one
    /// pipeline (that write alone, waiting for each statement, when it comes first). The
    /// answers end at the first error.
    pub(super) fn pipelined(&mut self, actions: &[Action<'_>]) -> Vec<Result<Found, StoreError>> {
        let run = actions.iter().take_while(|action| !matches!(action, Action::Write(_))).count();
        if run == 0 {
            return actions.first().map(|action| txn::perform_one(self, action)).into_iter().collect();
        }
        let actions = actions.get(..run).unwrap_or(actions);
        let schema = self.schema;
        let requests: Vec<Request<'_>> = actions.iter().flat_map(|action| requests(action, schema)).collect();
        let answers = match self.run_all(&requests) {
            Ok(answers) => answers,
            Err(failed) => return vec![Err(failed.into())],
        };
        let mut answers = answers.into_iter();
        let mut found = Vec::with_capacity(actions.len());
        for action in actions {
            let one = read_back(action, &mut answers);
            let failed = one.is_err();
            found.push(one);
            if failed {
                break;
            }
        }
        found
    }
}

/// The statements of one step that runs in a pipeline: a claim's lock and lookup, a
/// replacement and the row's revision after it (its `actual` when it did not apply), or one.
fn requests<'a>(action: &Action<'a>, schema: &'a str) -> Vec<Request<'a>> {
    match *action {
        Action::Claim(turn) => {
            vec![claim(schema, &turn.conversation, &turn.turn), select_turn(&turn.conversation, &turn.turn)]
        }
        Action::Read(read) => vec![lock_read(&read.table, &read.key)],
        Action::Replace(write, revision) => {
            vec![update_record(write, revision), record_revision(&write.table, &write.key)]
        }
        Action::Write(_) => Vec::new(),
        Action::Effect(effect) => vec![insert_effect(effect)],
        Action::Hold(hold) => vec![insert_hold(hold)],
        Action::Open(interaction) => vec![insert_interaction(interaction)],
        Action::Answer(given, turn) => vec![answer(given, turn)],
        Action::Turn(turn) => vec![insert_turn(turn, schema)],
        Action::Event(event) => vec![insert_event(event)],
        Action::Finding(finding) => vec![insert_finding(finding)],
    }
}

/// What one step found, from the answers to its [`requests`], taken in order.
fn read_back(
    action: &Action<'_>,
    answers: &mut impl Iterator<Item = Result<Vec<Row>, Error>>,
) -> Result<Found, StoreError> {
    let mut next = || {
        answers
            .next()
            .ok_or_else(|| StoreError::Corrupt { what: "a pipeline answered fewer statements than it sent".to_owned() })
    };
    Ok(match *action {
        Action::Claim(_) => {
            next()??;
            Found::Turn(found_turn(&next()??)?.map(Box::new))
        }
        Action::Read(_) => Found::Revision(found_revision(&next()??)?),
        Action::Replace(..) => {
            let applied = wrote_one(&next()??);
            let actual = found_revision(&next()??)?;
            Found::Written { applied, actual: if applied { None } else { actual } }
        }
        Action::Write(_) => {
            return Err(StoreError::Corrupt { what: "a write that looks first was pipelined".to_owned() });
        }
        Action::Effect(effect) => Found::Effect(effect_inserted(next()?, effect)?),
        Action::Hold(_) => {
            next()??;
            Found::Inserted
        }
        Action::Open(interaction) => {
            interaction_inserted(next()?, interaction)?;
            Found::Inserted
        }
        Action::Answer(..) => Found::Answered(wrote_one(&next()??)),
        Action::Turn(_) => Found::Numbered(turn_inserted(next()?)?),
        Action::Event(event) => {
            event_inserted(next()?, event)?;
            Found::Inserted
        }
        Action::Finding(_) => Found::Finding(wrote_one(&next()??)),
    })
}
