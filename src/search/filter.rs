//! Which memories a search may return, as one value: the index applies it in SQL
//! ([`Filter::sql`]), the scan to each file it reads ([`Filter::admits`]), so the two can
//! never disagree on what a filter means.

use crate::frontmatter::{self, Frontmatter, NEUTRAL_IMPORTANCE};

/// A search's filters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    /// Relative path of a file, or of a folder (ending in `/`); `None` = the whole store.
    pub prefix: Option<&'a str>,
    /// Frontmatter `type`.
    pub kind: Option<&'a str>,
    /// A frontmatter tag.
    pub tag: Option<&'a str>,
    /// Leave out memories expired at this time (seconds since the epoch), as
    /// [`Frontmatter::expired_at`] judges them.
    pub live_at: Option<i64>,
    /// Only memories modified at or after this time (nanoseconds since the epoch).
    pub updated_after_ns: Option<i64>,
    /// Only memories modified before this time (nanoseconds since the epoch).
    pub updated_before_ns: Option<i64>,
    /// Only memories whose `importance` is at least this ([`frontmatter::importance`]:
    /// a memory without one counts as the neutral 3).
    pub min_importance: Option<u8>,
}

impl Filter<'_> {
    /// Whether a memory read by the scan passes (the prefix is where the scan reads, so
    /// it is not checked again here).
    pub fn admits(&self, fm: Option<&Frontmatter>, modified_ns: i64) -> bool {
        // `type` and tags compare without regard to ASCII case, as the index's SQL does
        // (`COLLATE NOCASE`, `lower()`): `Feedback` is `feedback`.
        if let Some(kind) = self.kind
            && !fm
                .and_then(|f| f.kind.as_deref())
                .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        {
            return false;
        }
        if let Some(tag) = self.tag
            && !fm.is_some_and(|f| f.tags.iter().any(|t| t.eq_ignore_ascii_case(tag)))
        {
            return false;
        }
        if let Some(now) = self.live_at
            && fm.is_some_and(|f| f.expired_at(now))
        {
            return false;
        }
        if let Some(min) = self.min_importance
            && frontmatter::importance(fm) < min
        {
            return false;
        }
        !(self.updated_after_ns.is_some_and(|a| modified_ns < a)
            || self.updated_before_ns.is_some_and(|b| modified_ns >= b))
    }

    /// SQL conditions on the index's `docs` table (appended after its `MATCH`) and their
    /// arguments, bound from `?2` on. The expiry condition is
    /// [`Frontmatter::expired_at`] in SQL: `docs.expires` holds
    /// [`Frontmatter::expires`].
    pub fn sql(&self) -> (String, Vec<String>) {
        let mut sql = String::new();
        let mut args: Vec<String> = Vec::new();
        let mut bind = |value: String| {
            args.push(value);
            format!("?{}", args.len() + 1)
        };
        if let Some(prefix) = self.prefix {
            match prefix.strip_suffix('/') {
                Some(dir) => {
                    let lo = bind(format!("{dir}/"));
                    let hi = bind(format!("{dir}0"));
                    sql.push_str(&format!(" AND docs.path >= {lo} AND docs.path < {hi}"));
                }
                None => {
                    let p = bind(prefix.to_owned());
                    sql.push_str(&format!(" AND docs.path = {p}"));
                }
            }
        }
        if let Some(kind) = self.kind {
            let k = bind(kind.to_owned());
            sql.push_str(&format!(" AND docs.kind = {k} COLLATE NOCASE"));
        }
        if let Some(tag) = self.tag {
            let t = bind(format!("\u{1f}{}\u{1f}", tag.to_ascii_lowercase()));
            sql.push_str(&format!(" AND instr(lower(docs.tags), {t}) > 0"));
        }
        if let Some(now) = self.live_at {
            let n = bind(now.to_string());
            sql.push_str(&format!(
                " AND (docs.expires IS NULL OR docs.expires > CAST({n} AS INTEGER))"
            ));
        }
        if let Some(min) = self.min_importance {
            // `docs.importance` is NULL for a memory without one: the neutral value.
            let m = bind(min.to_string());
            sql.push_str(&format!(
                " AND coalesce(docs.importance, {NEUTRAL_IMPORTANCE}) >= CAST({m} AS INTEGER)"
            ));
        }
        if let Some(after) = self.updated_after_ns {
            let a = bind(after.to_string());
            sql.push_str(&format!(" AND docs.mtime_ns >= CAST({a} AS INTEGER)"));
        }
        if let Some(before) = self.updated_before_ns {
            let b = bind(before.to_string());
            sql.push_str(&format!(" AND docs.mtime_ns < CAST({b} AS INTEGER)"));
        }
        (sql, args)
    }
}
