//! A private PostgreSQL server for the example programs (included with `#[path]`; not an
//! example of its own): Debian's binaries (`/usr/lib/postgresql/<version>/bin`, the
//! newest, or `$MEMDIR_PG_BIN`), a cluster made by `initdb` in a temp folder, served only
//! on a Unix socket in that folder. As root, `initdb` and `postgres` (which refuse root)
//! run as the `postgres` user through `runuser`. Stopped and deleted on drop; anything
//! that fails panics with what to do.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to accept connections, or to stop.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The variables libpq reads: removed from every program run here, so the server is
/// reached only through the arguments given.
const LIBPQ_ENV: &[&str] = &[
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGDATABASE",
    "PGUSER",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICE",
    "PGOPTIONS",
    "PGSSLMODE",
    "PGDATA",
];

/// A running PostgreSQL cluster.
pub struct PgServer {
    bin: PathBuf,
    /// Run the server programs through `runuser -u postgres --` (we are root).
    as_postgres: bool,
    port: u16,
    child: Option<Child>,
    /// Last: removed after the server has stopped.
    dir: tempfile::TempDir,
}

impl PgServer {
    /// Makes a cluster in a new temp folder and starts it with `settings` (`-c` options,
    /// `name=value`); panics if it cannot.
    pub fn start(settings: &[&str]) -> PgServer {
        let bin = bin_dir();
        let as_postgres = rustix::process::geteuid().is_root();
        // A socket path must stay under 108 bytes, and the `postgres` user must reach it.
        let dir = tempfile::Builder::new()
            .prefix("memdir-pgbench-")
            .tempdir_in("/tmp")
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot make a temp folder in /tmp: {e}"));
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).expect("PostgreSQL: mkdir sock");
        if as_postgres {
            let (uid, gid) = postgres_user();
            for p in [dir.path(), sock.as_path()] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid))
                    .unwrap_or_else(|e| panic!("PostgreSQL: chown {p:?} to postgres: {e}"));
            }
        }
        let mut server = PgServer {
            bin,
            as_postgres,
            port: free_port(),
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
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot run initdb: {e}"));
        assert!(
            out.status.success(),
            "PostgreSQL: initdb -D {data:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        server.launch(settings);
        server
    }

    /// The folder holding the server's socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// The URL memdir is given for database `db` (local socket).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgresql://postgres@/{db}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// The server's major version and binaries folder, for the report.
    pub fn describe(&self) -> String {
        format!("{} (port {}, socket only)", self.bin.display(), self.port)
    }

    /// Creates database `db` with `createdb`.
    pub fn create_db(&self, db: &str) {
        let out = self
            .client("createdb")
            .arg(db)
            .output()
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot run createdb: {e}"));
        assert!(
            out.status.success(),
            "PostgreSQL: createdb {db} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `sql` in database `db` with psql: its unaligned, tuples-only output (one row a
    /// line, columns separated by `|`), trimmed; `Err` with psql's message if it fails.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self
            .client("psql")
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", db])
            .args(["-c", sql])
            .output()
            .map_err(|e| format!("cannot run psql: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    /// Starts `postgres` and polls until it accepts connections (bounded).
    fn launch(&mut self, settings: &[&str]) {
        let log_path = self.dir.path().join("postgres.log");
        let log = std::fs::File::create(&log_path)
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot create {log_path:?}: {e}"));
        let mut cmd = self.program("postgres");
        cmd.arg("-D")
            .arg(self.data_dir())
            .arg("-k")
            .arg(self.socket_dir())
            .args(["-c", "listen_addresses=", "-p", &self.port.to_string()]);
        for s in settings {
            cmd.args(["-c", s]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("PostgreSQL: log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot start postgres: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let ready = self
                .client("pg_isready")
                .args(["-d", "postgres", "-t", "2"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap_or_else(|e| panic!("PostgreSQL: cannot run pg_isready: {e}"));
            if ready.success() {
                return;
            }
            if let Ok(Some(status)) = self.child.as_mut().map_or(Ok(None), Child::try_wait) {
                self.child = None;
                panic!(
                    "PostgreSQL: postgres exited ({status}) before accepting connections:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL: postgres did not accept connections within {READY_WITHIN:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A server program (`initdb`, `postgres`): as the `postgres` user when we are root.
    fn program(&self, name: &str) -> Command {
        let exe = self.bin.join(name);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        cmd.current_dir(self.dir.path()).env("LC_ALL", "C.UTF-8");
        for var in LIBPQ_ENV {
            cmd.env_remove(var);
        }
        cmd
    }

    /// A client program (`psql`, `createdb`, `pg_isready`) aimed at this server.
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
    /// Fast shutdown (SIGINT), bounded; then the temp folder goes.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The postmaster's pid (runuser's child when root), else the one we started.
            let pid = std::fs::read_to_string(self.data_dir().join("postmaster.pid"))
                .ok()
                .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
                .unwrap_or(child.id() as i32);
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            let deadline = Instant::now() + READY_WITHIN;
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb`, or `$MEMDIR_PG_BIN`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMDIR_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("initdb").is_file(),
            "PostgreSQL: MEMDIR_PG_BIN={dir:?} has no initdb"
        );
        return dir;
    }
    let newest = std::fs::read_dir(Path::new("/usr/lib/postgresql"))
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
             Install it (`apt-get install -y postgresql`) or set MEMDIR_PG_BIN to a folder \
             holding initdb, postgres, pg_isready, createdb and psql."
        ),
    }
}

/// The uid and gid of the `postgres` user, from /etc/passwd.
fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("PostgreSQL: read /etc/passwd");
    passwd
        .lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.len() > 3 && f[0] == "postgres")
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .unwrap_or_else(|| {
            panic!(
                "PostgreSQL: running as root and there is no `postgres` user to run initdb and \
                 postgres as (they refuse root); installing Debian's postgresql creates it"
            )
        })
}

/// A port number nothing listens on now (it only names the socket file here).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("PostgreSQL: bind a free port")
        .port()
}
