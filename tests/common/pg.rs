//! A real PostgreSQL server for the tests (and `examples/pg_bench.rs`): the Debian binaries, a cluster made by
//! `initdb` in a temp folder, served only on a private Unix socket. Anything missing or
//! failing panics with what to do: these tests fail, never skip, without PostgreSQL.
//! Their targets are built only with the `external-tests` feature, so `cargo test` alone
//! needs nothing but Rust (docs/decisions/outside-parts.md).
//!
//! When the tests run as root, every PostgreSQL program that refuses root (`initdb`,
//! `postgres`) runs as the `postgres` user, which owns the temp folder.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "child.rs"]
pub mod child;

/// How long the server may take to accept connections or to stop.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The environment variables libpq reads, removed from every program run here so the
/// server is reached only through the arguments given.
const LIBPQ_ENV: &[&str] = &[
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGDATABASE",
    "PGUSER",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGOPTIONS",
    "PGSSLMODE",
    "PGDATA",
];

/// A running PostgreSQL cluster, stopped and deleted on drop.
pub struct PgServer {
    bin: PathBuf,
    /// The uid and gid to run `initdb` and `postgres` as (the `postgres` user when root).
    run_as: Option<(u32, u32)>,
    port: u16,
    /// Settings given to `postgres` after the defaults (`-c NAME=VALUE`), e.g. for TLS.
    settings: Vec<String>,
    child: Option<Child>,
    // Last: removed after the server has stopped.
    dir: tempfile::TempDir,
}

impl PgServer {
    /// Makes a cluster in a new temp folder and starts it; panics if anything fails.
    pub fn start() -> PgServer {
        PgServer::start_with(&[])
    }

    /// [`start`](Self::start) with server settings (`name=value`, given as `-c`).
    pub fn start_with(settings: &[&str]) -> PgServer {
        let bin = bin_dir();
        let run_as = if rustix::process::geteuid().is_root() {
            Some(postgres_user())
        } else {
            None
        };
        // The socket path must stay under the 107-byte limit, and the `postgres` user
        // must be able to reach the folder: /tmp when root, else the usual temp folder.
        let base = if run_as.is_some() || std::env::temp_dir().as_os_str().len() > 40 {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("memdir-pg-")
            .tempdir_in(&base)
            .unwrap_or_else(|e| panic!("PostgreSQL harness: temp folder in {base:?}: {e}"));
        std::fs::create_dir(dir.path().join("sock")).unwrap();
        if let Some((uid, gid)) = run_as {
            for p in [dir.path().to_owned(), dir.path().join("sock")] {
                std::os::unix::fs::chown(&p, Some(uid), Some(gid))
                    .unwrap_or_else(|e| panic!("PostgreSQL harness: chown {p:?} postgres: {e}"));
            }
        }
        let mut server = PgServer {
            bin,
            run_as,
            port: free_port(),
            settings: settings.iter().map(|s| s.to_string()).collect(),
            child: None,
            dir,
        };
        let data = server.data_dir();
        let out = server
            .program("initdb")
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8"])
            .args(["--locale=C.UTF-8", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .unwrap_or_else(|e| panic!("PostgreSQL harness: run initdb: {e}"));
        assert!(
            out.status.success(),
            "PostgreSQL harness: initdb -D {data:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        server.launch();
        server
    }

    /// The folder holding the server's socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// The port number (it only names the socket file: no TCP listener is opened).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL memdir is given for database `db` (socket form).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgresql://postgres@/{db}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// Creates database `db` (UTF-8).
    pub fn create_db(&self, db: &str) {
        assert!(
            db.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "test database names are plain identifiers: {db:?}"
        );
        self.psql("postgres", &format!("CREATE DATABASE {db}"));
    }

    /// Runs `sql` in database `db` with psql and returns its unaligned, tuples-only output
    /// (one row per line, columns separated by `|`), trimmed. Panics if psql fails.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql)
            .unwrap_or_else(|e| panic!("PostgreSQL harness: psql -d {db} -c {sql:?} failed: {e}"))
    }

    /// [`psql`](Self::psql), with psql's message as the error instead of a panic.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self
            .client("psql")
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                db,
                "-c",
                sql,
            ])
            .output()
            .map_err(|e| format!("cannot run psql: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The binaries folder and port, for a report.
    pub fn describe(&self) -> String {
        format!("{} (port {}, socket only)", self.bin.display(), self.port)
    }

    /// `pg_dump` of database `db`: its whole schema and data as plain SQL.
    pub fn pg_dump(&self, db: &str) -> String {
        let out = self
            .client("pg_dump")
            .args(["--no-owner", "-d", db])
            .output()
            .unwrap_or_else(|e| panic!("PostgreSQL harness: run pg_dump: {e}"));
        assert!(
            out.status.success(),
            "PostgreSQL harness: pg_dump -d {db} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("pg_dump prints UTF-8")
    }

    /// Stops the server (fast shutdown: open connections are closed) and waits for it.
    pub fn stop(&mut self) {
        let mut child = self
            .child
            .take()
            .expect("PostgreSQL harness: stop() of a server that is not running");
        signal(&child, rustix::process::Signal::INT);
        if child::wait_timeout(&mut child, READY_WITHIN).is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "PostgreSQL harness: the server did not stop within {READY_WITHIN:?}:\n{}",
                self.log()
            );
        }
    }

    /// Restarts the server listening on 127.0.0.1 too, with TLS on: a certificate for
    /// `localhost` signed by a CA made here, whose certificate file is returned. Uses the
    /// `openssl` command (Debian's `postgresql` pulls it in through `ssl-cert`).
    pub fn enable_tls(&mut self) -> PathBuf {
        let dir = self.dir.path().join("tls");
        std::fs::create_dir_all(&dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap_or_else(|e| panic!("PostgreSQL harness: run openssl: {e}"));
            assert!(
                out.status.success(),
                "PostgreSQL harness: openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=memdir test CA",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        if let Some((uid, gid)) = self.run_as {
            for f in ["server.key", "server.crt"] {
                std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid)).unwrap();
            }
        }
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            dir.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        self.settings.extend([
            "listen_addresses=127.0.0.1".into(),
            "ssl=on".into(),
            format!("ssl_cert_file={}", dir.join("server.crt").display()),
            format!("ssl_key_file={}", dir.join("server.key").display()),
        ]);
        self.stop();
        self.launch();
        dir.join("ca.crt")
    }

    /// The URL of database `db` over TCP to `host` (after [`enable_tls`]), with `params`.
    pub fn tcp_url(&self, host: &str, db: &str, params: &str) -> String {
        format!("postgresql://postgres@{host}:{}/{db}?{params}", self.port)
    }

    /// Starts the stopped server again: same data, socket folder and port.
    pub fn restart(&mut self) {
        assert!(
            self.child.is_none(),
            "PostgreSQL harness: restart() of a running server"
        );
        self.launch();
    }

    /// A program among the server's binaries (`pg_isready`, `psql`, ...).
    pub fn program_path(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    /// Whether the server is running (not stopped).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Starts `postgres` and waits until it accepts connections.
    fn launch(&mut self) {
        let log_path = self.dir.path().join("postgres.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("PostgreSQL harness: open {log_path:?}: {e}"));
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(&log_path, Some(uid), Some(gid)).unwrap();
        }
        let child = self
            .program("postgres")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-k")
            .arg(self.socket_dir())
            .args(["-c", "listen_addresses=", "-p", &self.port.to_string()])
            .args(self.settings.iter().flat_map(|s| ["-c", s.as_str()]))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("PostgreSQL harness: start postgres: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let ready = self
                .client("pg_isready")
                .args(["-d", "postgres", "-t", "5"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap_or_else(|e| panic!("PostgreSQL harness: run pg_isready: {e}"));
            if ready.success() {
                return;
            }
            if let Ok(Some(status)) = self.child.as_mut().unwrap().try_wait() {
                self.child = None;
                panic!(
                    "PostgreSQL harness: postgres exited ({status}) before accepting connections:\n{}",
                    self.log()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "PostgreSQL harness: postgres did not accept connections within {READY_WITHIN:?}:\n{}",
                    self.log()
                );
            }
            // Polling for readiness, not ordering events: PostgreSQL announces it only in
            // its log file, which would be polled just the same.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A server-side program (`initdb`, `postgres`), as the `postgres` user when root.
    fn program(&self, name: &str) -> Command {
        use std::os::unix::process::CommandExt as _;
        let mut cmd = Command::new(self.bin.join(name));
        cmd.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("LC_ALL", "C.UTF-8");
        for var in LIBPQ_ENV {
            cmd.env_remove(var);
        }
        if let Some((uid, gid)) = self.run_as {
            // std drops the supplementary groups when root sets a uid.
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    /// A client program (`psql`, `pg_dump`, `pg_isready`) aimed at this server.
    fn client(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(name));
        for var in LIBPQ_ENV {
            cmd.env_remove(var);
        }
        cmd.arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", "postgres"])
            .env("PGCONNECT_TIMEOUT", "10")
            .env("LC_ALL", "C.UTF-8");
        cmd
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, rustix::process::Signal::INT);
            let _ = child::wait_timeout(&mut child, READY_WITHIN);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    // It may have exited already; wait() tells.
    let _ = rustix::process::kill_process(pid, sig);
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb` (Debian's layout), or
/// `MEMDIR_TEST_PG_BIN`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMDIR_TEST_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("initdb").is_file(),
            "MEMDIR_TEST_PG_BIN={dir:?} has no initdb"
        );
        return dir;
    }
    let root = Path::new("/usr/lib/postgresql");
    let newest = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max();
    match newest {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL is not installed: no /usr/lib/postgresql/<version>/bin/initdb. \
             These tests need a real server: `apt-get install -y postgresql` (Debian), \
             or set MEMDIR_TEST_PG_BIN to a folder holding initdb, postgres, pg_isready, \
             psql and pg_dump."
        ),
    }
}

/// The uid and gid of the `postgres` user, from /etc/passwd.
fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.len() > 3 && fields[0] == "postgres")
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .unwrap_or_else(|| {
            panic!(
                "the tests run as root and there is no `postgres` user to run initdb and \
                 postgres as (initdb refuses root); installing Debian's postgresql creates it"
            )
        })
}

/// A TCP port nothing listens on now (the OS's pick, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

/// A database name no other test (of this run or an earlier one) uses.
pub fn unique_db(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "t_{clean}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
