//! The connection a [`PgStore`](super::PgStore) holds: `tokio-postgres` on a runtime of its
//! own, driven only while a call waits, behind calls that block. Blocking calls like the
//! `postgres` crate's, with one thing it cannot do: [`Session::pipeline`] sends several
//! statements before reading the first answer, so that they cost the server and this process
//! one round trip rather than one each.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use tokio::runtime::Runtime;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Connection, Error, NoTls, Row, Socket, Statement, ToStatement};

use crate::error::StoreError;

/// The runtime and the connection's own half, which reads and writes the socket. Nothing
/// drives it between calls: a call polls it for as long as the call waits.
struct Driver {
    runtime: Runtime,
    connection: Pin<Box<Connection<Socket, NoTlsStream>>>,
    /// The connection ended (closed, or failed): it must not be polled again.
    ended: bool,
}

impl Driver {
    fn block_on<T>(&mut self, future: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let mut future = pin!(future);
        let Driver { runtime, connection, ended } = self;
        runtime.block_on(poll_fn(|cx| {
            while !*ended {
                match connection.as_mut().poll_message(cx) {
                    // Notices and notifications: warrant listens for neither.
                    Poll::Ready(Some(Ok(_))) => {}
                    Poll::Ready(Some(Err(e))) => {
                        *ended = true;
                        return Poll::Ready(Err(e));
                    }
                    // Once the connection has ended, the call's own future fails as closed.
                    Poll::Ready(None) => *ended = true,
                    Poll::Pending => break,
                }
            }
            future.as_mut().poll(cx)
        }))
    }
}

/// One connection to PostgreSQL.
pub(crate) struct Client {
    driver: Driver,
    client: tokio_postgres::Client,
}

impl Client {
    /// Connects without TLS.
    pub(crate) fn connect(conninfo: &str) -> Result<Client, StoreError> {
        let config: tokio_postgres::Config = conninfo.parse()?;
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(StoreError::PostgresRuntime)?;
        let (client, connection) = runtime.block_on(config.connect(NoTls))?;
        Ok(Client { driver: Driver { runtime, connection: Box::pin(connection), ended: false }, client })
    }

    /// Ends the connection as a client should: with its client half gone, the connection tells
    /// the server it is leaving and ends, rather than dropping the socket mid-conversation.
    pub(crate) fn close(self) -> Result<(), Error> {
        let Client { mut driver, client } = self;
        drop(client);
        let Driver { runtime, connection, ended } = &mut driver;
        if *ended {
            return Ok(());
        }
        runtime.block_on(poll_fn(|cx| connection.as_mut().poll(cx)))
    }

    /// Opens a read-only transaction that reads one snapshot of the database from its first
    /// statement to its end (REPEATABLE READ); dropped, it rolls back, which writes nothing.
    pub(crate) fn snapshot(&mut self) -> Result<Transaction<'_>, Error> {
        self.batch_execute("START TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        Ok(Transaction { client: self, open: true })
    }

    /// Opens a transaction at READ COMMITTED; dropped without [`Transaction::commit`], it
    /// rolls back.
    pub(crate) fn transaction(&mut self) -> Result<Transaction<'_>, Error> {
        self.batch_execute("START TRANSACTION ISOLATION LEVEL READ COMMITTED")?;
        Ok(Transaction { client: self, open: true })
    }
}

/// An open transaction on a [`Client`].
pub(crate) struct Transaction<'a> {
    client: &'a mut Client,
    open: bool,
}

impl Transaction<'_> {
    pub(crate) fn commit(mut self) -> Result<(), Error> {
        self.open = false;
        self.client.batch_execute("COMMIT")
    }

    pub(crate) fn rollback(mut self) -> Result<(), Error> {
        self.open = false;
        self.client.batch_execute("ROLLBACK")
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if self.open {
            // A connection that cannot roll back has failed, and the server rolls back the
            // transaction when it sees the connection end; the error that led here is what
            // the caller reports.
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

/// The statements a connection or a transaction runs, each call waiting for its answer.
pub(crate) trait Session {
    fn client(&mut self) -> &mut Client;

    fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.prepare(sql))
    }

    fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.batch_execute(sql))
    }

    fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.execute(statement, params))
    }

    fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.query(statement, params))
    }

    fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.query_opt(statement, params))
    }

    fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        let Client { driver, client } = self.client();
        driver.block_on(client.query_one(statement, params))
    }

    /// Sends every statement, in order, before reading any answer, and answers the rows of
    /// each in the same order; the outer error is the connection's own. Each statement ends in
    /// a sync point of its own, so one that fails does not keep the others from running; inside
    /// a transaction, those after it then fail as the transaction has (`25P02`). The
    /// statements must be prepared: one prepared as it went would run after those sent behind
    /// it.
    fn pipeline(
        &mut self,
        statements: &[(&Statement, &[&(dyn ToSql + Sync)])],
    ) -> Result<Vec<Result<Vec<Row>, Error>>, Error> {
        let Client { driver, client } = self.client();
        // The first poll of each sends its statement, and `join_all` polls them first in order.
        let sent = statements.iter().map(|(statement, params)| client.query(*statement, params));
        driver.block_on(async { Ok(futures_util::future::join_all(sent).await) })
    }
}

impl Session for Client {
    fn client(&mut self) -> &mut Client {
        self
    }
}

impl Session for Transaction<'_> {
    fn client(&mut self) -> &mut Client {
        self.client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server the store's tests use (`tests/it/fixture.rs` reads the same variable).
    fn connect() -> Client {
        let conninfo = std::env::var("WARRANT_TEST_POSTGRES")
            .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".to_owned());
        Client::connect(&conninfo).unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{conninfo}`: {e}"))
    }

    fn ints(answer: &Result<Vec<Row>, Error>) -> Option<Vec<i32>> {
        answer.as_ref().ok().map(|rows| rows.iter().map(|row| row.get(0)).collect())
    }

    #[test]
    fn a_pipeline_answers_each_statement_in_order_and_a_failure_stops_only_its_own() {
        let mut client = connect();
        let value = client.prepare("SELECT $1::int").unwrap();
        let divide = client.prepare("SELECT 6 / $1::int").unwrap();
        let (one, two, zero) = (1i32, 2i32, 0i32);
        let answers =
            client.pipeline(&[(&value, &[&one]), (&divide, &[&zero]), (&divide, &[&two]), (&value, &[&two])]).unwrap();
        assert_eq!(answers.len(), 4);
        assert_eq!(ints(&answers[0]), Some(vec![1]));
        let failed = answers[1].as_ref().unwrap_err().as_db_error().map(|db| db.code().clone());
        assert_eq!(failed, Some(tokio_postgres::error::SqlState::DIVISION_BY_ZERO));
        // Outside a transaction, each statement is its own: those after the failure run.
        assert_eq!((ints(&answers[2]), ints(&answers[3])), (Some(vec![3]), Some(vec![2])));

        // Inside one, those after the failure fail as the transaction has, and nothing of it
        // stays once it is rolled back.
        client.batch_execute("CREATE TEMPORARY TABLE pipelined (n int)").unwrap();
        let insert = client.prepare("INSERT INTO pipelined VALUES ($1) RETURNING n").unwrap();
        let mut tx = client.transaction().unwrap();
        let answers = tx.pipeline(&[(&insert, &[&one]), (&divide, &[&zero]), (&insert, &[&two])]).unwrap();
        assert_eq!(ints(&answers[0]), Some(vec![1]));
        assert!(answers[1].is_err());
        let aborted = answers[2].as_ref().unwrap_err().as_db_error().map(|db| db.code().clone());
        assert_eq!(aborted, Some(tokio_postgres::error::SqlState::IN_FAILED_SQL_TRANSACTION));
        drop(tx);
        let count: i64 = client.query_one("SELECT count(*) FROM pipelined", &[]).unwrap().get(0);
        assert_eq!(count, 0);
        // The connection is usable after the rollback.
        let answers = client.pipeline(&[(&insert, &[&two])]).unwrap();
        assert_eq!(ints(&answers[0]), Some(vec![2]));
    }
}
