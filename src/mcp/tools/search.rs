//! `memory_search`: its parameters, its call (with progress notifications while an
//! index is built) and its text.

use std::fmt::Write as _;

use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::clamp;
use super::schema::{input, output};
use crate::mcp::server::MemdirServer;
use crate::memory::{SearchHit, SearchRequest, SearchResult};
use crate::search::Matched;
use crate::search::index::Order;

const DEFAULT_SEARCH_LIMIT: i64 = 10;
const MAX_SEARCH_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for. Words are ANDed (memories with some of them follow when fewer
    /// than `limit` have them all) and
    /// found in any of their forms (`deploying` finds `deployment`); a question's stopwords
    /// (`what`, `the`) are ignored. `"quoted phrase"` matches adjacent words exactly;
    /// `pref*` matches word beginnings. Case and punctuation do not matter; Chinese,
    /// Japanese and Korean work without spaces (`食べた` finds `食べる`).
    pub query: String,
    /// Only search under this folder (or in this file), e.g. `/memories/projects/`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Most hits to return (default 10, at most 100).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 100))]
    pub limit: Option<i64>,
    /// The `next_cursor` of a previous search, for more hits.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
    /// Only memories whose frontmatter `type` is this, e.g. `project`.
    #[serde(default, rename = "type")]
    #[schemars(with = "String")]
    pub kind: Option<String>,
    /// Only memories whose frontmatter `tags` include this.
    #[serde(default)]
    #[schemars(with = "String")]
    pub tag: Option<String>,
    /// true = also return memories whose frontmatter `expires` date has passed (marked
    /// `expired`). Default false: expired memories are left out.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub include_expired: Option<bool>,
    /// Only memories last modified at or after this time: a date (`2026-03-01`, the start
    /// of that day in UTC) or an RFC 3339 date-time (`2026-03-01T09:00:00Z`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub updated_after: Option<String>,
    /// Only memories last modified before this time (a date or an RFC 3339 date-time).
    #[serde(default)]
    #[schemars(with = "String")]
    pub updated_before: Option<String>,
    /// Only memories at least this important (1–5): their frontmatter `importance`,
    /// where a memory without one counts as 3. Use it to keep to what matters when a
    /// search returns too much; leave it out to search everything.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 5))]
    pub min_importance: Option<i64>,
    /// Order of the hits: `relevance` (default; best match first) or `recent` (most
    /// recently modified first).
    #[serde(default)]
    #[schemars(with = "Sort")]
    pub sort: Option<Sort>,
}

/// How search hits are ordered.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    Relevance,
    Recent,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct HitOut {
    pub path: String,
    /// Relevance relative to the best hit of this search (on every page): 1 for the
    /// best, e.g. 0.5 for a hit half as relevant (BM25, times 1.1 at importance 5 down to
    /// 0.9 at importance 1).
    pub score: f64,
    /// The best matching line (1-based).
    pub line: u64,
    /// Up to 3 matching lines, numbered like memory_read.
    pub snippet: String,
    /// The memory's frontmatter `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub description: Option<String>,
    /// RFC 3339 UTC time of the last change.
    pub updated_at: String,
    /// Present (true) when the memory's frontmatter `expires` has passed (only with
    /// include_expired): it is likely out of date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// The memory's frontmatter `importance` (1–5), when it has one (absent counts as 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u8", range(min = 1, max = 5))]
    pub importance: Option<u8>,
    /// How the memory matched: `words` (some query word as typed), `word forms` (some
    /// word only as another form of it, e.g. `deployment` for `deploying`), `meaning`
    /// (among the memories closest in meaning, when the server searches by meaning), or
    /// several of these.
    pub matched: Vec<MatchedOut>,
}

/// How a hit matched its query.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub enum MatchedOut {
    #[serde(rename = "words")]
    Words,
    #[serde(rename = "word forms")]
    WordForms,
    #[serde(rename = "meaning")]
    Meaning,
}

impl From<Matched> for MatchedOut {
    fn from(m: Matched) -> Self {
        match m {
            Matched::Words => MatchedOut::Words,
            Matched::WordForms => MatchedOut::WordForms,
            Matched::Meaning => MatchedOut::Meaning,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOut {
    pub hits: Vec<HitOut>,
    pub total_hits: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// Fewer memories than asked for have every word: after those (if any), hits have
    /// some of the words. With search by meaning on, hits are ranked by words and
    /// meaning together, and this says that some hits on this page have only some of
    /// the words.
    pub relaxed: bool,
    /// Present (true) when the query went past what a search reads (its first 1,024
    /// bytes, 64 words or phrases, 16 words a phrase, 8 `prefix*` words): only that part
    /// was searched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query_cut: bool,
    /// Present when the server searches by meaning: how many memories in the search's
    /// scope have no meaning vector yet (they are being computed in the background; until
    /// then those memories are found by their words only). 0 when meaning covers all.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub pending_vectors: Option<u64>,
    /// With `pending_vectors`: how many memories in the search's scope there are.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub memories_in_scope: Option<u64>,
    /// Present when a search of every store went on without some of them (their
    /// database could not be reached): their memories were not searched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable_stores: Vec<super::UnavailableOut>,
}

impl From<SearchHit> for HitOut {
    fn from(h: SearchHit) -> Self {
        HitOut {
            path: h.path,
            score: h.score,
            line: h.line as u64,
            snippet: h.snippet,
            name: h.name,
            description: h.description,
            updated_at: h.updated_at,
            expired: h.expired,
            importance: h.importance,
            matched: h.matched.into_iter().map(MatchedOut::from).collect(),
        }
    }
}

impl From<SearchResult> for SearchOut {
    fn from(r: SearchResult) -> Self {
        SearchOut {
            hits: r.hits.into_iter().map(HitOut::from).collect(),
            total_hits: r.total_hits as u64,
            next_cursor: r.next_cursor,
            relaxed: r.relaxed,
            query_cut: r.query_cut,
            pending_vectors: r.coverage.map(|c| c.pending() as u64),
            memories_in_scope: r.coverage.map(|c| c.total as u64),
            unavailable_stores: r.unavailable.into_iter().map(Into::into).collect(),
        }
    }
}

#[tool_router(router = search_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// Full-text search of memory contents, ranked by relevance (BM25, lifted a little
    /// by a memory's frontmatter `importance`) or, with sort `recent`, newest first. Returns paths, the best matching lines (numbered) and
    /// descriptions. Words are ANDed (memories with some of them follow when too few have
    /// them all) and found
    /// in any of their forms; a whole question works; "quoted phrases" (exact) and
    /// prefix* work; any text is a valid query. Memories whose frontmatter
    /// `expires` has passed are left out unless include_expired is true.
    #[tool(
        input_schema = input::<SearchParams>(),
        output_schema = output::<SearchOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_search(
        &self,
        Args(p): Args<SearchParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = p.query.clone();
        let progress = progress_reporter(&ctx);
        let result = self
            .run(move |m| {
                let limit = clamp(p.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, "limit")?;
                SearchRequest {
                    query: &p.query,
                    path: p.path.as_deref(),
                    limit,
                    cursor: p.cursor.as_deref(),
                    kind: p.kind.as_deref(),
                    tag: p.tag.as_deref(),
                    include_expired: p.include_expired.unwrap_or(false),
                    updated_after: p.updated_after.as_deref(),
                    updated_before: p.updated_before.as_deref(),
                    min_importance: p.min_importance,
                    order: match p.sort {
                        None | Some(Sort::Relevance) => Order::Relevance,
                        Some(Sort::Recent) => Order::Recent,
                    },
                }
                .run(m, &progress)
            })
            .await;
        answer(result, |r| {
            let out = SearchOut::from(r);
            let text = render(&query, &out);
            (out, text)
        })
    }
}

/// Sends `notifications/progress` for a request that asked for them (a `progressToken`
/// in its `_meta`), from any thread; nothing once the request is cancelled or the client
/// has gone.
fn progress_reporter(
    ctx: &RequestContext<RoleServer>,
) -> impl Fn(u64, u64) + Sync + Send + 'static {
    let token = ctx.meta.get_progress_token();
    let peer = ctx.peer.clone();
    let cancelled = ctx.ct.clone();
    let runtime = tokio::runtime::Handle::current();
    move |done, total| {
        let Some(token) = token.clone() else { return };
        if cancelled.is_cancelled() {
            return;
        }
        let peer = peer.clone();
        let param = ProgressNotificationParam::new(token, done as f64)
            .with_total(total as f64)
            .with_message(format!("indexing memories: {done} of {total} files"));
        runtime.spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }
}

/// The text of a search: each hit with its score and snippet.
fn render(query: &str, out: &SearchOut) -> String {
    let mut s = String::new();
    super::unavailable_lines(&mut s, &out.unavailable_stores);
    if out.query_cut {
        s.push_str("The query is longer than a search reads: only its first 1,024 bytes, 64 words or phrases, 16 words of a phrase and 8 prefix* words were searched.\n");
    }
    if let (Some(pending), Some(total)) = (out.pending_vectors, out.memories_in_scope)
        && pending > 0
    {
        let _ = writeln!(
            s,
            "Meaning covers {} of {total} memories here; the other {pending} are still being embedded and are found by their words only until then.",
            total - pending
        );
    }
    if out.total_hits == 0 {
        let shown = crate::text::head_chars(query, 200);
        let _ = write!(s, "No memory matches {shown:?}.");
        return s;
    }
    if out.relaxed && out.pending_vectors.is_some() {
        s.push_str("Some hits contain only some of the words.\n");
    } else if out.relaxed {
        s.push_str("Few memories contain every word; after them come memories that contain some of them.\n");
    }
    let _ = writeln!(s, "{} of {} hits:", out.hits.len(), out.total_hits);
    for h in &out.hits {
        let _ = write!(s, "\n{} (score {}", h.path, score(h.score));
        if let Some(i) = h.importance {
            let _ = write!(s, ", importance {i}");
        }
        if h.expired {
            s.push_str(", EXPIRED");
        }
        if h.matched.iter().any(|m| matches!(m, MatchedOut::WordForms)) {
            s.push_str(", matched word forms");
        }
        if h.matched.iter().all(|m| matches!(m, MatchedOut::Meaning)) {
            s.push_str(", matched by meaning only");
        }
        s.push(')');
        if let Some(n) = &h.name {
            let _ = write!(s, " {n}");
        }
        match &h.description {
            Some(d) => {
                let _ = writeln!(s, " — {d}");
            }
            None => s.push('\n'),
        }
        s.push_str(&h.snippet);
        s.push('\n');
    }
    if let Some(c) = &out.next_cursor {
        let _ = writeln!(s, "\nMore hits: search again with cursor \"{c}\".");
    }
    s
}

/// A relative score with three decimals (the best hit is 1.000).
fn score(x: f64) -> String {
    format!("{x:.3}")
}
