//! Console sessions: the cookie a sign-in sets, what it stands for (an actor and a CSRF
//! token, until an expiry), and `memdir console`'s one-time sign-in token.
//!
//! Session ids and tokens are 256 random bits from the operating system. The server keeps
//! only the SHA-256 digest of a session id and of the one-time token, compares them in
//! constant time, and never logs them. A session ends at its expiry, at sign-out, when the
//! bearer token it signed in with leaves the tokens file, or when the server stops.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::respond::Page;

/// The session cookie's name.
pub const COOKIE: &str = "memdir_console";
/// How long a session lasts after sign-in (not renewed: sign in again after it).
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Sessions held at once; signing in beyond it ends the oldest of the name that holds
/// the most.
const MAX_SESSIONS: usize = 1024;
/// Sessions one name (a token's, or the local user's) holds at once; its sign-in beyond
/// it ends its own oldest, so no sign-ins of one name can end another's sessions.
pub const MAX_SESSIONS_PER_NAME: usize = 32;

/// A signed-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    /// Recorded as the actor of every version this session makes.
    pub actor: String,
    /// Carried by every form of the session, checked on every POST.
    pub csrf: String,
    /// The SHA-256 of the bearer token signed in with (`serve --http`): the session ends
    /// when that token leaves the tokens file.
    pub token: Option<[u8; 32]>,
    digest: [u8; 32],
    expires: Instant,
}

impl Session {
    /// Checks the CSRF token a POST carried (403 when missing or wrong).
    #[allow(clippy::result_large_err)]
    pub fn check_csrf(&self, presented: Option<&str>) -> Result<(), Page> {
        match presented {
            Some(p) if bool::from(p.as_bytes().ct_eq(self.csrf.as_bytes())) => Ok(()),
            _ => Err(Page::error(
                StatusCode::FORBIDDEN,
                "Forbidden: this form is not from your current console session (its CSRF token is missing or wrong); reload the page and try again",
            )),
        }
    }
}

/// The sessions of one server.
#[derive(Default)]
pub struct Sessions {
    held: Mutex<HashMap<[u8; 32], Session>>,
}

impl Sessions {
    /// Starts a session for `actor`, signed in with `token` if a bearer token; gives the
    /// cookie value to set.
    pub fn start(&self, actor: &str, token: Option<&str>) -> String {
        let id = random_hex();
        let digest = digest(&id);
        let now = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, s| s.expires > now);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for s in held.values() {
            *counts.entry(s.actor.as_str()).or_default() += 1;
        }
        let mine = counts.get(actor).copied().unwrap_or(0);
        // Room is made from this name's own sessions first; past the server's cap, from
        // the name that holds the most.
        let evict = if mine >= MAX_SESSIONS_PER_NAME {
            Some(actor.to_string())
        } else if held.len() >= MAX_SESSIONS {
            counts
                .iter()
                .max_by_key(|(name, n)| (**n, std::cmp::Reverse(**name)))
                .map(|(name, _)| name.to_string())
        } else {
            None
        };
        if let Some(name) = evict
            && let Some(oldest) = held
                .values()
                .filter(|s| s.actor == name)
                .min_by_key(|s| s.expires)
                .map(|s| s.digest)
        {
            held.remove(&oldest);
        }
        held.insert(
            digest,
            Session {
                actor: actor.to_string(),
                csrf: random_hex(),
                token: token.map(self::digest),
                digest,
                expires: now + LIFETIME,
            },
        );
        id
    }

    /// The live session the request's cookie names, if any.
    pub fn find(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers, COOKIE)?;
        let wanted = digest(id);
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // Constant time over the entries, as the bearer tokens are compared.
        let mut found = None;
        for (d, s) in held.iter() {
            if bool::from(d.ct_eq(&wanted)) {
                found = Some(s);
            }
        }
        found.filter(|s| s.expires > Instant::now()).cloned()
    }

    /// Ends a session.
    pub fn end(&self, session: &Session) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(&session.digest);
    }
}

/// `memdir console`'s sign-in token: good for one sign-in, as the local user.
pub struct OneTime {
    digest: Mutex<Option<[u8; 32]>>,
    actor: String,
}

impl OneTime {
    /// A fresh token for `actor`; gives the token (for the printed link) too.
    pub fn new(actor: &str) -> (OneTime, String) {
        let token = random_hex();
        (
            OneTime {
                digest: Mutex::new(Some(digest(&token))),
                actor: actor.to_string(),
            },
            token,
        )
    }

    /// Spends the token: the actor when `presented` is it and it was not spent yet.
    pub fn spend(&self, presented: &str) -> Option<&str> {
        let mut held = self.digest.lock().unwrap_or_else(|e| e.into_inner());
        let d = (*held)?;
        if bool::from(d.ct_eq(&digest(presented))) {
            *held = None;
            Some(&self.actor)
        } else {
            None
        }
    }
}

/// The `Set-Cookie` value that sets the session cookie (`Secure` behind TLS).
pub fn set_cookie(id: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={id}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{}",
        LIFETIME.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes it.
pub fn clear_cookie(secure: bool) -> String {
    format!(
        "{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// 256 random bits from the operating system, in hex.
fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    // Without the system's randomness no secret can be made: nothing sensible to do but
    // stop (getrandom fails only on broken or exotic systems).
    getrandom::fill(&mut bytes).expect("the operating system's random number source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cookie: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, cookie.parse().unwrap());
        h
    }

    #[test]
    fn one_names_sign_ins_never_end_another_names_sessions() {
        let sessions = Sessions::default();
        let found = |id: &str| sessions.find(&headers(&format!("{COOKIE}={id}"))).is_some();
        let alice = sessions.start("alice", None);
        let bobs: Vec<String> = (0..MAX_SESSIONS + 10)
            .map(|_| sessions.start("bob", None))
            .collect();
        assert!(found(&alice), "bob's sign-ins ended alice's session");
        let live = bobs.iter().filter(|id| found(id)).count();
        assert_eq!(live, MAX_SESSIONS_PER_NAME);
        // Bob's newest are the ones kept.
        assert!(
            bobs[bobs.len() - MAX_SESSIONS_PER_NAME..]
                .iter()
                .all(|id| found(id))
        );
    }

    /// Past the server's cap, room is made from the name holding the most, so every
    /// name keeps its newest session.
    #[test]
    fn past_the_servers_cap_every_name_keeps_its_newest_session() {
        let sessions = Sessions::default();
        let found = |id: &str| sessions.find(&headers(&format!("{COOKIE}={id}"))).is_some();
        let names = MAX_SESSIONS / MAX_SESSIONS_PER_NAME + 8;
        let mut newest = Vec::new();
        for n in 0..names {
            let mut last = String::new();
            for _ in 0..MAX_SESSIONS_PER_NAME {
                last = sessions.start(&format!("user{n}"), None);
            }
            newest.push(last);
        }
        let held = sessions.held.lock().unwrap().len();
        assert_eq!(held, MAX_SESSIONS);
        assert!(newest.iter().all(|id| found(id)));
    }

    #[test]
    fn a_session_is_found_by_its_cookie_only() {
        let sessions = Sessions::default();
        let id = sessions.start("alice", None);
        for (cookie, found) in [
            (format!("{COOKIE}={id}"), true),
            (format!("other=1; {COOKIE}={id}"), true),
            (format!("{COOKIE}={id}x"), false),
            (format!("{COOKIE}="), false),
            (format!("x{COOKIE}={id}"), false),
            ("".to_string(), false),
        ] {
            let s = sessions.find(&headers(&cookie));
            assert_eq!(s.is_some(), found, "{cookie}");
        }
        let s = sessions.find(&headers(&format!("{COOKIE}={id}"))).unwrap();
        assert_eq!(s.actor, "alice");
        assert!(s.check_csrf(Some(&s.csrf)).is_ok());
        assert!(s.check_csrf(Some("0")).is_err());
        assert!(s.check_csrf(None).is_err());
        sessions.end(&s);
        assert!(sessions.find(&headers(&format!("{COOKIE}={id}"))).is_none());
    }

    #[test]
    fn a_one_time_token_signs_in_once() {
        let (once, token) = OneTime::new("bob");
        assert_eq!(once.spend("wrong"), None);
        assert_eq!(once.spend(&token), Some("bob"));
        assert_eq!(once.spend(&token), None);
    }
}
