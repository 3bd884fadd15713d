//! Bearer tokens for the HTTP transport: the tokens file (`NAME TOKEN` per line), and the
//! constant-time lookup of a presented token. Tokens are kept only as SHA-256 digests and
//! never logged, echoed or compared byte by byte with an early exit.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{Error, Result};

/// Shortest token accepted: 16 characters of a random hex or base64 string is already
/// 64 bits; the README's recipe makes 64 hex characters.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Longest actor name: it is recorded in every version the token's requests make.
const MAX_NAME_CHARS: usize = 64;

/// The tokens of one tokens file: each one's actor name and digest.
#[derive(Debug, Default)]
pub struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

impl Tokens {
    /// Parses a tokens file: one `NAME TOKEN` per line, blank lines and lines starting
    /// with `#` ignored. Errors name the line, never the token.
    pub fn parse(text: &str) -> Result<Tokens> {
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(name), Some(token), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(Error::Config(format!(
                    "line {}: expected `NAME TOKEN` (two fields separated by a space)",
                    n + 1
                )));
            };
            if name.chars().count() > MAX_NAME_CHARS
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._@-+".contains(c))
            {
                return Err(Error::Config(format!(
                    "line {}: the name must be 1 to {MAX_NAME_CHARS} characters of letters, digits and . _ @ - +",
                    n + 1
                )));
            }
            if token.chars().count() < MIN_TOKEN_CHARS || !token.is_ascii() {
                return Err(Error::Config(format!(
                    "line {}: the token of {name} must be at least {MIN_TOKEN_CHARS} ASCII characters (make one with `openssl rand -hex 32`)",
                    n + 1
                )));
            }
            let digest = digest(token.as_bytes());
            if entries.iter().any(|(_, d)| *d == digest) {
                return Err(Error::Config(format!(
                    "line {}: this token is already listed on an earlier line; every token names one actor",
                    n + 1
                )));
            }
            entries.push((name.to_string(), digest));
        }
        Ok(Tokens { entries })
    }

    /// The actor whose token `presented` is. Every entry is compared in constant time, so
    /// the time taken does not tell how much of a token matched or which entry did.
    pub fn actor(&self, presented: &[u8]) -> Option<&str> {
        self.actor_of_digest(&digest(presented))
    }

    /// The actor whose token has the SHA-256 digest `wanted` (compared as in `actor`):
    /// whether a token presented earlier is still in force.
    pub fn actor_of_digest(&self, wanted: &[u8; 32]) -> Option<&str> {
        let mut found = None;
        for (name, d) in &self.entries {
            if bool::from(d.ct_eq(wanted)) {
                found = Some(name.as_str());
            }
        }
        found
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The SHA-256 of a token as presented: what the tokens in force are compared by.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The tokens in force, re-read from their file on request (SIGHUP).
#[derive(Clone)]
pub struct TokenFile {
    path: PathBuf,
    tokens: Arc<RwLock<Arc<Tokens>>>,
}

impl TokenFile {
    /// Loads the file, refusing one that others can read, that has a bad line, or that
    /// lists no token (which would lock every client out).
    pub fn load(path: &Path) -> Result<TokenFile> {
        let tokens = read(path)?;
        Ok(TokenFile {
            path: path.to_path_buf(),
            tokens: Arc::new(RwLock::new(Arc::new(tokens))),
        })
    }

    /// Re-reads the file; on error the tokens in force stay.
    pub fn reload(&self) -> Result<usize> {
        let tokens = read(&self.path)?;
        let n = tokens.len();
        *self.tokens.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tokens);
        Ok(n)
    }

    /// Whether the token with digest `presented` still names `actor`: what a console
    /// session and a listen stream opened with it need to go on (revoked, or moved to
    /// another name, they end).
    pub fn still_names(&self, presented: &[u8; 32], actor: &str) -> bool {
        self.current().actor_of_digest(presented) == Some(actor)
    }

    pub fn current(&self) -> Arc<Tokens> {
        Arc::clone(&self.tokens.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn read(path: &Path) -> Result<Tokens> {
    let text = crate::store::config::read_secret_file(path)?;
    let tokens =
        Tokens::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    if tokens.is_empty() {
        return Err(Error::Config(format!(
            "{} lists no token: add a line `NAME TOKEN` (e.g. `alice $(openssl rand -hex 32)`)",
            path.display()
        )));
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123";
    const B: &str = "fedcba9876543210fedc";

    /// A token moved to another name no longer stands for the first: what a session or
    /// a listen stream opened with it checks.
    #[cfg(unix)]
    #[test]
    #[allow(clippy::disallowed_methods)] // a test's own tokens file, outside any store
    fn a_token_moved_to_another_name_no_longer_names_the_first() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        let write = |text: &str| {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        };
        write(&format!("alice {A}\n"));
        let file = TokenFile::load(&path).unwrap();
        let presented = digest(A.as_bytes());
        assert!(file.still_names(&presented, "alice"));
        write(&format!("bob {A}\n"));
        file.reload().unwrap();
        assert!(!file.still_names(&presented, "alice"));
        assert!(file.still_names(&presented, "bob"));
        write(&format!("bob {B}\n"));
        file.reload().unwrap();
        assert!(!file.still_names(&presented, "bob"));
    }

    #[test]
    fn tokens_name_their_actor() {
        let t = Tokens::parse(&format!("# team\n\nalice {A}\n  bob   {B}  \n")).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.actor(A.as_bytes()), Some("alice"));
        assert_eq!(t.actor(B.as_bytes()), Some("bob"));
        assert_eq!(t.actor(b"0123456789abcdef012"), None);
        assert_eq!(t.actor(b""), None);
        assert_eq!(t.actor(format!("{A} ").as_bytes()), None);
    }

    #[test]
    fn bad_lines_are_refused_without_echoing_the_token() {
        let cases: &[(&str, &str)] = &[
            ("alice", "line 1: expected `NAME TOKEN`"),
            ("alice tok en x", "line 1: expected `NAME TOKEN`"),
            (
                "alice short",
                "line 1: the token of alice must be at least 16",
            ),
            ("al/ice 0123456789abcdef0123", "line 1: the name must be"),
            (
                "a 0123456789abcdef0123\nb 0123456789abcdef0123",
                "line 2: this token is already listed",
            ),
        ];
        for (text, expect) in cases {
            let e = Tokens::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(expect), "{text:?}: {e}");
            assert!(!e.contains("0123456789abcdef"), "{e}");
            assert!(!e.contains("short"), "{e}");
        }
    }
}
