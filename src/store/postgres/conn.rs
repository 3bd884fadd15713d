//! Connections to the database: the URL (and where its password may come from), the pool,
//! prepared statements kept per connection, every wait for the database bounded, and
//! errors worded for a person, never with the password in them.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::error::{DbError, SqlState};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a call waits for a connection (the database down or unreachable) before it
/// fails with an error.
pub const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// How long one statement waits for the database to answer before its connection is
/// given up: 10 s past the statement and lock time-outs the server enforces (`SESSION`),
/// so only a database that stopped answering (its host frozen, a peer that accepts and
/// never replies) meets it. Neither of those closes the socket, so nothing else would.
pub const ANSWER_WAIT: Duration = Duration::from_secs(40);
/// Connections one process keeps to one database at most.
pub const POOL_SIZE: u32 = 8;
/// Set on every connection: no statement or lock wait runs longer.
const SESSION: &str = "SET statement_timeout = '30s'; SET lock_timeout = '30s'; SET idle_in_transaction_session_timeout = '60s'";

/// The pool of one store's database, and the last reason a connection could not be made
/// (r2d2 says only that it timed out waiting).
pub struct Pool {
    pub pool: r2d2::Pool<Manager>,
    /// The store it serves, named in errors.
    store: String,
    last_error: Arc<Mutex<Option<(String, bool)>>>,
    /// A copy of the pool's settings, to connect once outside it.
    probe: Manager,
}

impl Pool {
    /// Connects once, outside the pool, to tell why a connection fails: the database
    /// refusing (authentication, no such database) or not being reached.
    pub fn connect_now(&self) -> Result<Conn, Failure> {
        r2d2::ManageConnection::connect(&self.probe)
    }

    pub fn get(&self) -> crate::Result<Pooled> {
        self.pool.get().map_err(|e| self.explain(&e))
    }

    pub fn get_timeout(&self, wait: Duration) -> crate::Result<Pooled> {
        self.pool.get_timeout(wait).map_err(|e| self.explain(&e))
    }

    /// Why no connection could be had.
    fn explain(&self, e: &r2d2::Error) -> crate::Error {
        let (why, tls) = self
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| (e.to_string(), false));
        let reason = if tls {
            format!(
                "TLS to the database failed ({why}); check the URL's `sslmode` (and `sslrootcert`) against the server's TLS: waiting will not help"
            )
        } else {
            format!(
                "cannot reach the database ({why}); check that it is running and reachable, then retry (memdir reconnects by itself)"
            )
        };
        crate::Error::Database {
            store: self.store.clone(),
            reason,
        }
    }
}

/// Keeps the last connection error, with its causes, and whether it was TLS failing.
#[derive(Debug)]
struct LastError(Arc<Mutex<Option<(String, bool)>>>);

impl r2d2::HandleError<Failure> for LastError {
    fn handle_error(&self, error: Failure) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((chain(&error), error.is_tls()));
    }
}
pub type Pooled = r2d2::PooledConnection<Manager>;

/// What went wrong on a connection.
#[derive(Debug)]
pub enum Failure {
    /// What the client library or the server reported.
    Pg(tokio_postgres::Error),
    /// The database did not answer within this long; the connection is given up.
    NoAnswer(Duration),
    /// The connection was given up earlier (no answer in time); the statement never ran.
    GivenUp,
    /// This process could not set up the connection's runtime.
    Local(std::io::Error),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        Failure::Pg(e)
    }
}

impl Failure {
    /// What the server said, when it said something.
    pub fn as_db_error(&self) -> Option<&DbError> {
        match self {
            Failure::Pg(e) => e.as_db_error(),
            _ => None,
        }
    }

    pub fn code(&self) -> Option<&SqlState> {
        match self {
            Failure::Pg(e) => e.code(),
            _ => None,
        }
    }

    /// TLS to the database failed (no TLS on a server `sslmode` requires it of, a
    /// certificate that is not trusted or not for that name): a setting to fix, not an
    /// outage to wait out.
    /// An I/O error in the handshake (the server restarting) is not one.
    pub fn is_tls(&self) -> bool {
        let Failure::Pg(e) = self else {
            return false;
        };
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            // `io::Error::source` skips the error it wraps: look inside too.
            let inner = s
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|i| i as &(dyn std::error::Error + 'static));
            if [Some(s), inner]
                .into_iter()
                .flatten()
                .any(|s| s.is::<rustls::Error>() || s.to_string() == "server does not support TLS")
            {
                return true;
            }
            source = s.source();
        }
        false
    }

    /// The server said something that passes: it is starting up or shutting down, or has
    /// no connection to spare right now.
    pub fn is_transient(&self) -> bool {
        is_lost(self) || self.code() == Some(&SqlState::TOO_MANY_CONNECTIONS)
    }

    /// The statement was sent and no answer says what became of it: the server may
    /// have run it (a commit may have been stored).
    pub fn may_have_run(&self) -> bool {
        match self {
            Failure::NoAnswer(_) => true,
            Failure::Pg(e) => e.as_db_error().is_none(),
            Failure::GivenUp | Failure::Local(_) => false,
        }
    }

    /// The connection is closed and the statement never ran on it, so another connection
    /// may run it. Not so after no answer: the statement may have run.
    pub fn is_closed(&self) -> bool {
        match self {
            Failure::Pg(e) => e.is_closed(),
            Failure::GivenUp => true,
            Failure::NoAnswer(_) | Failure::Local(_) => false,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Pg(e) => e.fmt(f),
            Failure::NoAnswer(wait) => {
                write!(f, "the database did not answer within {} s", wait.as_secs())
            }
            Failure::GivenUp => {
                f.write_str("the connection was given up: the database did not answer")
            }
            Failure::Local(e) => write!(f, "could not set up a connection: {e}"),
        }
    }
}

impl std::error::Error for Failure {}

/// One connection to the database: the async client and a small runtime of its own that
/// carries the connection's messages while a call waits on it (as the synchronous
/// `postgres` client does), with every wait bounded: a database that stops answering
/// fails the call after [`ANSWER_WAIT`] and the connection is given up, where a plain
/// synchronous client would wait for ever.
pub struct Client {
    waiter: Waiter,
    /// `None` only while dropping.
    client: Option<tokio_postgres::Client>,
    /// The task that carries the connection's messages; it ends once the client is gone.
    connection: Option<tokio::task::JoinHandle<()>>,
}

/// The runtime a connection's calls wait on, and whether one waited in vain.
struct Waiter {
    runtime: tokio::runtime::Runtime,
    /// No answer came in time once: every further call fails at once.
    given_up: bool,
}

impl Waiter {
    /// Runs `call`, waiting at most `wait`; gives the connection up when no answer came.
    fn bounded<T>(
        &mut self,
        wait: Duration,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Failure> {
        if self.given_up {
            return Err(Failure::GivenUp);
        }
        // The timer is made inside the runtime: it needs the runtime's clock.
        match self
            .runtime
            .block_on(async { tokio::time::timeout(wait, call).await })
        {
            Ok(answer) => answer.map_err(Failure::Pg),
            Err(_) => {
                self.given_up = true;
                Err(Failure::NoAnswer(wait))
            }
        }
    }
}

/// The client of `client`, there until the connection is dropped.
fn pg(client: &Option<tokio_postgres::Client>) -> &tokio_postgres::Client {
    client.as_ref().expect("the client is there until dropped")
}

impl Client {
    /// Connects, the whole start-up exchange (TLS, authentication) included within
    /// [`CONNECT_WAIT`]: the library bounds only the socket's connect.
    fn connect(config: &tokio_postgres::Config, tls: MakeRustlsConnect) -> Result<Client, Failure> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Failure::Local)?;
        let connected = runtime
            .block_on(async { tokio::time::timeout(CONNECT_WAIT, config.connect(tls)).await });
        let Ok(connected) = connected else {
            // A host name lookup may still block a thread of the runtime: not waited for.
            runtime.shutdown_background();
            return Err(Failure::NoAnswer(CONNECT_WAIT));
        };
        let (client, connection) = connected?;
        let connection = runtime.spawn(async move {
            // Its end (the server gone, or the client dropped) shows as a closed client.
            let _ = connection.await;
        });
        Ok(Client {
            waiter: Waiter {
                runtime,
                given_up: false,
            },
            client: Some(client),
            connection: Some(connection),
        })
    }

    pub fn is_closed(&self) -> bool {
        self.waiter.given_up || pg(&self.client).is_closed()
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Failure> {
        let call = pg(&self.client).batch_execute(sql);
        self.waiter.bounded(ANSWER_WAIT, call)
    }

    /// Whether the server answers an empty query within `wait`.
    pub fn answers(&mut self, wait: Duration) -> Result<(), Failure> {
        let call = pg(&self.client).simple_query("");
        self.waiter.bounded(wait, call).map(drop)
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement, Failure> {
        let call = pg(&self.client).prepare(sql);
        self.waiter.bounded(ANSWER_WAIT, call)
    }

    fn query(
        &mut self,
        s: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Failure> {
        let call = pg(&self.client).query(s, params);
        self.waiter.bounded(ANSWER_WAIT, call)
    }

    fn query_one(&mut self, s: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Failure> {
        let call = pg(&self.client).query_one(s, params);
        self.waiter.bounded(ANSWER_WAIT, call)
    }

    fn query_opt(
        &mut self,
        s: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Failure> {
        let call = pg(&self.client).query_opt(s, params);
        self.waiter.bounded(ANSWER_WAIT, call)
    }

    fn execute(&mut self, s: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Failure> {
        let call = pg(&self.client).execute(s, params);
        self.waiter.bounded(ANSWER_WAIT, call)
    }
}

impl Drop for Client {
    /// Says goodbye to a server that still answers (dropping the client sends it
    /// `Terminate`), waiting a moment for that; a given-up connection is just closed.
    fn drop(&mut self) {
        drop(self.client.take());
        if let Some(connection) = self.connection.take()
            && !self.waiter.given_up
        {
            let _ = self
                .waiter
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(1), connection).await });
        }
    }
}

/// A connection and the statements it has prepared.
pub struct Conn {
    pub client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Found lost (the server closed it, e.g. on a restart): the pool discards it instead
    /// of handing it out again.
    pub lost: bool,
}

impl Conn {
    /// Whether the server still answers on this connection (an empty query, within the
    /// connect time-out); marks it lost when not.
    pub fn alive(&mut self) -> bool {
        self.lost = self.lost || self.client.answers(CONNECT_WAIT).is_err();
        !self.lost
    }
}

impl Conn {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, Failure> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    pub fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Failure> {
        let s = self.statement(sql)?;
        self.client.query(&s, params)
    }

    pub fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Failure> {
        let s = self.statement(sql)?;
        self.client.query_one(&s, params)
    }

    pub fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Failure> {
        let s = self.statement(sql)?;
        self.client.query_opt(&s, params)
    }

    pub fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Failure> {
        let s = self.statement(sql)?;
        self.client.execute(&s, params)
    }
}

/// Makes connections for the pool.
pub struct Manager {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Failure;

    fn connect(&self) -> Result<Conn, Failure> {
        let mut client = Client::connect(&self.config, self.tls.clone())?;
        client.batch_execute(SESSION)?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
            lost: false,
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Failure> {
        conn.client.answers(CONNECT_WAIT)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.lost || conn.client.is_closed()
    }
}

/// The pool of store `store` for `url`; connects lazily (the first call says whether the
/// database is there).
pub fn pool(store: &str, url: &str) -> crate::Result<Pool> {
    let (config, tls) = config(url)?;
    let last_error = Arc::new(Mutex::new(None));
    let pool = r2d2::Pool::builder()
        .max_size(POOL_SIZE)
        .min_idle(Some(0))
        .test_on_check_out(false)
        .connection_timeout(CONNECT_WAIT)
        .error_handler(Box::new(LastError(Arc::clone(&last_error))))
        .build_unchecked(Manager {
            config: config.clone(),
            tls: tls.clone(),
        });
    Ok(Pool {
        pool,
        store: store.to_owned(),
        last_error,
        probe: Manager { config, tls },
    })
}

/// The connection settings of `url`, with the password from `PGPASSWORD` or the password
/// file when the URL has none (as libpq does), and the TLS its `sslmode` asks for.
fn config(url: &str) -> crate::Result<(tokio_postgres::Config, MakeRustlsConnect)> {
    let (url_rest, tls) = super::tls::from_url(url)
        .map_err(|e| crate::Error::Open(format!("{}: {e}", redact_url(url))))?;
    let mut config = tokio_postgres::Config::from_str(&url_rest).map_err(|e| {
        crate::Error::Open(format!(
            "{} is not a PostgreSQL URL memdir can use ({e}); write postgresql://USER@HOST:PORT/DATABASE or postgresql://USER@/DATABASE?host=/socket/folder",
            redact_url(url)
        ))
    })?;
    if config.get_dbname().is_none() {
        return Err(crate::Error::Open(format!(
            "{} names no database; write postgresql://USER@HOST:PORT/DATABASE",
            redact_url(url)
        )));
    }
    // As libpq: a local socket never uses TLS, whatever `sslmode` says.
    let sockets_only = !config.get_hosts().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|h| !matches!(h, tokio_postgres::config::Host::Tcp(_)));
    config.ssl_mode(if sockets_only {
        tokio_postgres::config::SslMode::Disable
    } else {
        tls.mode
    });
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_WAIT);
    }
    config.keepalives_idle(Duration::from_secs(30));
    config.application_name("memdir");
    if config.get_password().is_none()
        && let Some(password) = password_for(&config)
    {
        config.password(password);
    }
    Ok((config, tls.connector))
}

/// The password libpq would use for `config`: `PGPASSWORD`, else the first matching line
/// of the password file (`PGPASSFILE` or `~/.pgpass`, `host:port:database:user:password`,
/// `*` matching anything).
fn password_for(config: &tokio_postgres::Config) -> Option<String> {
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Some(p);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    let text = read_pgpass(&file)?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        // libpq matches a socket connection as `localhost`.
        _ => "localhost".to_owned(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config.get_dbname().unwrap_or_default().to_owned();
    let user = config.get_user().map(str::to_owned).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            let [h, p, d, u, password] = <[String; 5]>::try_from(fields).ok()?;
            let fits = |pattern: &str, value: &str| pattern == "*" || pattern == value;
            (fits(&h, &host) && fits(&p, &port) && fits(&d, &db) && fits(&u, &user))
                .then_some(password)
        })
}

/// The password file, if it exists and only its owner can read it (libpq ignores it
/// otherwise).
fn read_pgpass(file: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!("ignoring the password file: it is readable by others (chmod 0600 it)");
            return None;
        }
    }
    std::fs::read_to_string(file).ok()
}

/// The fields of one password-file line (`:` separates, `\` escapes).
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    fields.last_mut().unwrap().push(n);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// `url` without its password (in the user part or a `password=` parameter), to show.
pub fn redact_url(url: &str) -> String {
    if url.contains("://") {
        crate::secrets::redact_urls(url)
    } else {
        crate::secrets::redact_urls(&format!("://{url}"))[3..].to_owned()
    }
}

/// A database error for a person: what went wrong, and what to do when it is the
/// connection.
pub fn describe(e: &Failure) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("the database refused: {}", db.message());
    }
    match e {
        Failure::NoAnswer(_) | Failure::GivenUp => format!(
            "{e}; check that it is running and not stopped or overloaded, then retry (memdir reconnects by itself)"
        ),
        _ if e.is_closed() => {
            "the connection to the database was lost; retry (memdir reconnects by itself)"
                .to_owned()
        }
        _ => format!("{e}"),
    }
}

/// An error connecting, with its causes (`error connecting to server: Connection
/// refused`), for a person.
pub fn chain(error: &Failure) -> String {
    let Failure::Pg(error) = error else {
        return error.to_string();
    };
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// Whether `e` says the connection is gone (closed, or the server shutting down), so the
/// statement never ran and a new connection may run it.
pub fn is_lost(e: &Failure) -> bool {
    e.is_closed()
        || e.code().is_some_and(|c| {
            [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(c)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_lines_split_with_escapes() {
        assert_eq!(
            split_pgpass(r"db\:1:5432:*:bob:pa\:ss:word"),
            ["db:1", "5432", "*", "bob", "pa:ss:word"]
        );
    }
}
