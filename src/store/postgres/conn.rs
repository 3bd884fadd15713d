//! Connections to the database: the URL (and where its password may come from), the pool,
//! prepared statements kept per connection, and errors worded for a person, never with
//! the password in them.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a call waits for a connection (the database down or unreachable) before it
/// fails with an error.
pub const CONNECT_WAIT: Duration = Duration::from_secs(5);
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
    last_error: Arc<Mutex<Option<String>>>,
    /// A copy of the pool's settings, to connect once outside it.
    probe: Manager,
}

impl Pool {
    /// Connects once, outside the pool, to tell why a connection fails: the database
    /// refusing (authentication, no such database) or not being reached.
    pub fn connect_now(&self) -> Result<Conn, postgres::Error> {
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
        let why = self
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| e.to_string());
        crate::Error::Database {
            store: self.store.clone(),
            reason: format!(
                "cannot reach the database ({why}); check that it is running and reachable, then retry (memdir reconnects by itself)"
            ),
        }
    }
}

/// Keeps the last connection error, with its causes.
#[derive(Debug)]
struct LastError(Arc<Mutex<Option<String>>>);

impl r2d2::HandleError<postgres::Error> for LastError {
    fn handle_error(&self, error: postgres::Error) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(chain(&error));
    }
}
pub type Pooled = r2d2::PooledConnection<Manager>;

/// A connection and the statements it has prepared.
pub struct Conn {
    pub client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Found lost (the server closed it, e.g. on a restart): the pool discards it instead
    /// of handing it out again.
    pub lost: bool,
}

impl Conn {
    /// Whether the server still answers on this connection (an empty query); marks it
    /// lost when not.
    pub fn alive(&mut self) -> bool {
        self.lost = self.lost || self.client.simple_query("").is_err();
        !self.lost
    }
}

impl Conn {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
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
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query(&s, params)
    }

    pub fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query_one(&s, params)
    }

    pub fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query_opt(&s, params)
    }

    pub fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.execute(&s, params)
    }
}

/// Makes connections for the pool.
pub struct Manager {
    config: postgres::Config,
    tls: MakeRustlsConnect,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        let mut client = self.config.connect(self.tls.clone())?;
        client.batch_execute(SESSION)?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
            lost: false,
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
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
fn config(url: &str) -> crate::Result<(postgres::Config, MakeRustlsConnect)> {
    let (url_rest, tls) = super::tls::from_url(url)
        .map_err(|e| crate::Error::Open(format!("{}: {e}", redact_url(url))))?;
    let mut config = postgres::Config::from_str(&url_rest).map_err(|e| {
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
    config.ssl_mode(tls.mode);
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
fn password_for(config: &postgres::Config) -> Option<String> {
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Some(p);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    let text = read_pgpass(&file)?;
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
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
pub fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("the database refused: {}", db.message());
    }
    if e.is_closed() {
        return "the connection to the database was lost; retry (memdir reconnects by itself)"
            .to_owned();
    }
    format!("{e}")
}

/// An error connecting, with its causes (`error connecting to server: Connection
/// refused`), for a person.
pub fn chain(error: &postgres::Error) -> String {
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
pub fn is_lost(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
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
