//! The library's one error type. Every file-related variant carries the memory path as
//! the agent wrote it (or its canonical form) and never a host path.

use std::io;

/// Everything that can go wrong in a memory operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path broke a lexical rule of the path policy (docs/paths.md, layer 1).
    #[error("invalid path `{path}`: {reason}")]
    InvalidPath { path: String, reason: String },
    /// The path names no store that this server serves.
    #[error("invalid path `{path}`: no store named `{store}`; paths start with one of: {known}")]
    UnknownStore {
        path: String,
        store: String,
        known: String,
    },
    /// Resolving the path at the moment of the operation would leave the store
    /// (a symlink that points outside, dangles outside, or was swapped in).
    /// Produced only by `store::escape`.
    #[error("refused `{path}`: it resolves outside the store (a symlink leading out of the store)")]
    Escape { path: String },
    /// A path that leads into the store's own state folder (`.memdir`) through a
    /// symbolic link. Produced only by `FolderStore::clear_of_state`.
    #[error(
        "refused `{path}`: it leads into memdir's own state folder `.memdir` through a symbolic link; remove the link"
    )]
    StateLink { path: String },
    #[error("The path {path} does not exist")]
    NotFound { path: String },
    #[error("`{path}` already exists")]
    AlreadyExists { path: String },
    /// A create-only write found a memory already there (`held`: with exactly the content
    /// sent, which a retry whose first reply was lost needs to know).
    #[error(
        "`{path}` already exists (content_sha256 {current}){}; to replace it pass that as expected_sha256, or change it with memory_edit",
        held_note(*.held)
    )]
    Occupied {
        path: String,
        current: String,
        held: bool,
    },
    #[error("`{path}` is a folder, not a file")]
    IsFolder { path: String },
    #[error("`{path}` is a file, not a folder")]
    NotAFolder { path: String },
    /// A path written as a folder (a trailing `/`) that names a symbolic link, a FIFO or
    /// another special entry: never followed, only that name can be removed.
    #[error(
        "`{path}` is a {kind}, not a folder; name it without the trailing `/` (a delete then removes only that name, never what a link points at)"
    )]
    LinkNotFolder { path: String, kind: &'static str },
    /// FIFOs, sockets, devices: never opened for reading or writing.
    #[error("refused `{path}`: it is a {kind}, not a regular file")]
    SpecialFile { path: String, kind: &'static str },
    /// A hard link can alias a file outside the store; no path check can see that.
    #[error(
        "refused `{path}`: the file has {links} hard links, and a hard-linked file may alias data outside the store"
    )]
    HardLinked { path: String, links: u64 },
    #[error("the store `/{store}` is read-only; {what} is not allowed")]
    ReadOnly { store: String, what: &'static str },
    #[error(
        "`{path}` is {size} bytes; the limit is {max} bytes per memory (split it into several memories)"
    )]
    TooLarge { path: String, size: u64, max: u64 },
    #[error("`{path}` is not valid UTF-8 text; memdir stores text only")]
    NotUtf8 { path: String },
    /// `expected_sha256` did not match: the message states the current hash so the agent
    /// can re-read and retry. Strict, even when the memory already holds exactly the
    /// content a write sent (`held`, which the message says): two racers that read `n` and
    /// both write `n + 1` must not both succeed.
    #[error(
        "precondition failed for `{path}`: expected_sha256 is {expected} but the current content_sha256 is {current}{}; read the memory again and retry",
        held_note(*.held)
    )]
    Precondition {
        path: String,
        expected: String,
        current: String,
        held: bool,
    },
    /// A precondition named a hash but the memory does not exist.
    #[error(
        "precondition failed for `{path}`: expected_sha256 is {expected} but the memory does not exist"
    )]
    PreconditionMissing { path: String, expected: String },
    /// An edit could not be applied as asked (no match, several matches, line out of range).
    #[error("{0}")]
    Edit(EditFault),
    /// A history version that the store does not hold (never made, or pruned).
    #[error("/{store} has no version {version}; see memory_history")]
    NoSuchVersion { store: String, version: u64 },
    /// A version that was redacted: it stays listed, its content is gone.
    #[error("version {version} was redacted; its content is gone")]
    RedactedVersion { version: u64 },
    /// A move that cannot be done as asked.
    #[error("{0}")]
    Move(MoveFault),
    /// A `view_range` that does not fit the memory's lines.
    #[error("invalid view_range [{start}, {end}]: {why}")]
    ViewRange { start: i64, end: i64, why: String },
    /// An `expected_sha256` that is not a SHA-256 in hex.
    #[error(
        "expected_sha256 must be 64 hex characters (the content_sha256 from memory_read or memory_list), got `{got}`"
    )]
    MalformedSha256 { got: String },
    /// An `expected_sha256` given for a folder.
    #[error("expected_sha256 applies to files, not folders")]
    Sha256OnFolder,
    /// A `memory_list` cursor that no listing of this path (and order) made.
    #[error(
        "invalid cursor {cursor:?}: pass the next_cursor of the previous memory_list page, with the same path{and_order}"
    )]
    Cursor {
        cursor: String,
        and_order: &'static str,
    },
    /// A store could not be opened: its folder cannot be made or opened, or its database
    /// refused (a URL memdir cannot use, authentication, a schema it cannot serve).
    #[error("{0}")]
    Open(String),
    /// A file of the server's own configuration (the HTTP tokens file) cannot be used.
    /// The message names the file, a host path the operator gave, and what to fix; never
    /// its contents.
    #[error("{0}")]
    Config(String),
    /// The embedding model's file cannot be used (missing, truncated, not the model): the
    /// message names the file, what is wrong and how to fix it.
    #[error("{0}")]
    Model(String),
    /// Something that should not happen did (a panicking task, a record that could not
    /// be serialised); the message says what.
    #[error("internal error {0}")]
    Internal(String),
    /// A parameter is missing, contradictory or out of range (the cases above aside).
    #[error("{0}")]
    InvalidArgument(String),
    /// The content looks like it holds a credential.
    #[error(
        "refused to store `{path}`: line {line} looks like a secret ({rule}); remove it or keep secrets out of memory"
    )]
    Secret {
        path: String,
        rule: &'static str,
        line: usize,
    },
    /// The disk is full, a quota or a file size limit was reached (ENOSPC, EDQUOT,
    /// EFBIG). Writes are atomic, so nothing was changed.
    #[error(
        "could not write `{path}`: {source} (the disk is full or a size limit was reached); nothing was changed, free some space and retry"
    )]
    StorageFull {
        path: String,
        #[source]
        source: io::Error,
    },
    /// The database holding a store could not be reached, or refused the change; the
    /// change was not stored (a transaction is all or nothing).
    #[error(
        "the database of store `/{store}` did not complete the call: {reason}; nothing was changed"
    )]
    Database { store: String, reason: String },
    /// The database was asked to commit a change and no answer came (it stopped
    /// answering, or the connection broke): the change may or may not be stored.
    #[error(
        "the database of store `/{store}` did not confirm the change: {reason}; it may or may not have been stored: read the memory (or its history) before you retry"
    )]
    Unconfirmed { store: String, reason: String },
    /// An operating-system error. The message is the OS's, which names no path.
    #[error("could not access `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// A store that an answer over every store leaves out: the database holding it could not
/// be reached or did not complete the call. The other stores answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// The store's path (`/team`).
    pub store: String,
    /// Why, as [`Error::Database`] words it.
    pub reason: String,
}

impl Error {
    /// The store named by a [`Error::Database`] of a store `stores` holds, if that is what
    /// this is: an answer over every store goes on without it.
    pub fn unavailable_store(&self, stores: &[&str]) -> Option<Unavailable> {
        match self {
            Error::Database { store, reason } if stores.contains(&store.as_str()) => {
                Some(Unavailable {
                    store: format!("/{store}"),
                    reason: reason.clone(),
                })
            }
            _ => None,
        }
    }

    /// A copy of a [`Error::Database`] (for each of several paths one query failed for);
    /// any other error is carried by its message.
    pub fn clone_database(&self) -> Error {
        match self {
            Error::Database { store, reason } => Error::Database {
                store: store.clone(),
                reason: reason.clone(),
            },
            other => Error::InvalidArgument(other.to_string()),
        }
    }

    pub fn invalid_path(path: &str, reason: impl Into<String>) -> Self {
        Error::InvalidPath {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    /// An operating-system error on `path`, rebuilt from its errno so that no host path
    /// a library put into the message can leak; a full disk gets its own variant.
    pub fn io(path: impl Into<String>, e: &io::Error) -> Self {
        let path = path.into();
        let source = e
            .raw_os_error()
            .map(io::Error::from_raw_os_error)
            .unwrap_or_else(|| io::Error::from(e.kind()));
        match e.kind() {
            io::ErrorKind::StorageFull
            | io::ErrorKind::QuotaExceeded
            | io::ErrorKind::FileTooLarge => Error::StorageFull { path, source },
            _ => Error::Io { path, source },
        }
    }
}

/// What a refused write adds when the memory already holds exactly the content sent: it
/// is still refused (a precondition is strict), but a retry whose first reply was lost
/// learns that its write had landed.
fn held_note(held: bool) -> &'static str {
    if held {
        ", which is exactly the content sent: nothing was written, and if this retries a write whose reply was lost, that write had landed"
    } else {
        ""
    }
}

/// Why a move (`memory_edit` with `new_path`) could not be done as asked.
#[derive(Debug, thiserror::Error)]
pub enum MoveFault {
    #[error(
        "cannot move `{from}` to another store (`{to}`); write it there and delete the original"
    )]
    AcrossStores { from: String, to: String },
    #[error("new_path is the same as path (`{path}`)")]
    OntoItself { path: String },
    #[error("cannot move `{from}` into itself (`{to}`)")]
    IntoItself { from: String, to: String },
}

/// Why an edit could not be applied as asked. The messages start with the words of
/// Anthropic's memory tool, which models know, and go on to say what to do; the
/// compatibility profile (`crate::mcp`) renders the same facts in that tool's exact words.
#[derive(Debug, thiserror::Error)]
pub enum EditFault {
    #[error(
        "No replacement was performed, old_str `{}` did not appear verbatim in {path}. Read the memory and copy the exact text, including whitespace.",
        crate::text::head_chars(old, QUOTED_CHARS)
    )]
    NoMatch { path: String, old: String },
    /// `old_str` occurs `count` times; `lines` holds the lines it occurs on, each once,
    /// at most [`LISTED_LINES`] of them (`more_lines`: it occurs on others too).
    #[error(
        "No replacement was performed. Multiple occurrences of old_str `{}` in lines: {}. Please ensure it is unique (include more surrounding text), or set replace_all to true.",
        crate::text::head_chars(old, QUOTED_CHARS),
        listed_lines(lines, *count)
    )]
    Ambiguous {
        path: String,
        old: String,
        lines: Vec<usize>,
        more_lines: bool,
        count: usize,
    },
    #[error(
        "Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {lines}]"
    )]
    InsertLine { line: i64, lines: usize },
}

/// Lines listed in an ambiguous-match error before the rest are only counted.
pub const LISTED_LINES: usize = 20;
/// Characters of `old_str` quoted back in an error.
const QUOTED_CHARS: usize = 200;

/// `1, 3, 7`, and the count of occurrences when there are more than listed lines.
pub fn listed_lines(lines: &[usize], count: usize) -> String {
    let mut listed: Vec<String> = lines.iter().map(usize::to_string).collect();
    if count > lines.len() {
        listed.push(format!("… ({count} occurrences in all)"));
    }
    listed.join(", ")
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
