//! Agent paths of the memory tool mapped onto the stores (`/memories` is the first
//! store, `/<name>` another), and library errors in the tool's words.

use crate::error::Error;
use crate::memory::Memdir;

/// The root every agent path of this profile starts with: the first store.
const ROOT: &str = "/memories";

/// An agent path mapped onto the stores.
pub(super) struct Mapped<'a> {
    /// As the agent wrote it: results and errors name this.
    pub(super) shown: &'a str,
    /// The canonical `/<store>/...` path the library takes.
    pub(super) canonical: String,
    /// The root the agent path starts with (`/memories`, or `/<store>`).
    pub(super) root: String,
    /// The canonical root of the store it maps to (`/<store>`).
    pub(super) store_root: String,
}

impl Mapped<'_> {
    pub(super) fn is_root(&self) -> bool {
        self.shown.trim_end_matches('/') == self.root
    }

    /// A library error in the tool's words where it has words for it, else memdir's
    /// message naming the path as the agent wrote it.
    pub(super) fn error(&self, e: Error, not_found: &str) -> String {
        match e {
            Error::NotFound { .. } => not_found.to_owned(),
            Error::Escape { .. } | Error::StateLink { .. } => self.escape(),
            other => self.renamed(other.to_string()),
        }
    }

    pub(super) fn escape(&self) -> String {
        format!("Path {} would escape {} directory", self.shown, self.root)
    }

    /// `message` with paths in the agent's terms: the store's canonical root (`/notes`)
    /// written as the root the agent uses for it (`/memories`), wherever it starts a path.
    pub(super) fn renamed(&self, message: String) -> String {
        if self.store_root == self.root {
            return message;
        }
        let mut out = String::with_capacity(message.len());
        let mut rest = message.as_str();
        while let Some(at) = rest.find(&self.store_root) {
            let after = &rest[at + self.store_root.len()..];
            let before = rest[..at].chars().next_back();
            let starts_path = !before.is_some_and(|c| c.is_alphanumeric() || c == '/');
            let ends_segment = after
                .chars()
                .next()
                .is_none_or(|c| matches!(c, '/' | '`' | ' ' | ',' | ';' | ')' | '\''));
            out.push_str(&rest[..at]);
            out.push_str(if starts_path && ends_segment {
                &self.root
            } else {
                &self.store_root
            });
            rest = after;
        }
        out.push_str(rest);
        out
    }
}

/// Maps an agent path: `/memories[/...]` is the first store, `/<name>[/...]` another.
pub(super) fn map<'a>(m: &Memdir, shown: &'a str) -> Result<Mapped<'a>, String> {
    let stores = m.stores();
    let under = |root: &str| {
        shown
            .strip_prefix(root)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .map(str::to_owned)
    };
    let (root, store_root, canonical) = if let Some(rest) = under(ROOT) {
        let store_root = format!("/{}", stores[0].name);
        let canonical = format!("{store_root}{rest}");
        (ROOT.to_owned(), store_root, canonical)
    } else {
        stores
            .iter()
            .skip(1)
            .map(|s| format!("/{}", s.name))
            .find(|root| root != ROOT && under(root).is_some())
            .map(|root| (root.clone(), root, shown.to_owned()))
            .ok_or_else(|| {
                // Cut only where no path could be valid: the answer does not grow with
                // what it answers.
                let shown = crate::text::head_chars(shown, 1100);
                format!("Path must start with {ROOT}, got: {shown}")
            })?
    };
    let mapped = Mapped {
        shown,
        canonical,
        root,
        store_root,
    };
    if shown.split('/').any(|segment| segment == "..") {
        return Err(mapped.escape());
    }
    Ok(mapped)
}

pub(super) fn missing(shown: &str) -> String {
    format!("The path {shown} does not exist. Please provide a valid path.")
}
