//! The history of a memory or of a folder as a timeline (`memory_history`: operation,
//! path, actor, time, size, reason; newest first, paged), the diff between any two
//! versions, restoring a version (`memory_write {restore_version}`: a new version by the
//! person, with the sha256 of the memory the version page showed as its precondition, so
//! a memory changed meanwhile shows the conflict and is not overwritten), and redaction (what `memdir redact` calls) behind a confirmation page that
//! names exactly what will be erased.

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, enc, memory_url};
use crate::console::request::Query;
use crate::console::respond::{self, Page};
use crate::error::Error;
use crate::history::Op;
use crate::memory::{HistoryRequest, RestoreRequest, Version, read, record};

/// The restore form's `sha256` when the memory did not exist: restore creates it, and
/// refuses when one was made meanwhile.
const ABSENT: &str = "absent";

/// Versions on one page of a timeline.
const PAGE: usize = 100;

pub fn history_url(path: &str) -> String {
    format!("/history?path={}", enc(path))
}

/// The operation, for people.
fn op_name(op: Op) -> &'static str {
    match op {
        Op::Created => "created",
        Op::Modified => "modified",
        Op::Renamed => "renamed",
        Op::Deleted => "deleted",
    }
}

/// The store a console path names (`/memories/a.md` → `memories`), refused when none.
#[allow(clippy::result_large_err)]
fn store_of(path: &str) -> Result<String, Page> {
    match path.trim_start_matches('/').split('/').next() {
        Some(name) if !name.is_empty() => Ok(name.to_string()),
        _ => Err(Page::error(
            StatusCode::BAD_REQUEST,
            "Bad Request: name a store, a folder or a memory, e.g. /memories/",
        )),
    }
}

#[allow(clippy::result_large_err)]
fn version_of(raw: Option<&str>, name: &str) -> Result<u64, Page> {
    raw.and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|v| *v >= 1)
        .ok_or_else(|| {
            Page::error(
                StatusCode::BAD_REQUEST,
                &format!("Bad Request: `{name}` must be a version number (1 or more)"),
            )
        })
}

/// One version of store `store` with its content (none when redacted).
async fn one(view: &View, store: &str, version: u64) -> Result<(Version, Option<String>), Page> {
    let scope = format!("/{store}/");
    let found = view
        .run(move |md| {
            HistoryRequest {
                path: Some(&scope),
                limit: 1,
                version: Some(version),
                ..Default::default()
            }
            .run(md)
        })
        .await?;
    let v = found.versions.into_iter().next().ok_or_else(|| {
        Page::error(
            StatusCode::NOT_FOUND,
            &format!("Not Found: /{store} has no version {version}"),
        )
    })?;
    if found.content_truncated {
        return Err(Page::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "version {version} is larger than one result can hold; restore it to a new path to read it"
            ),
        ));
    }
    Ok((v, found.content))
}

/// `GET /history?path=P[&cursor=C]`.
pub async fn page(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    let store = store_of(&path)?;
    let cursor = query.get("cursor").map(str::to_string);
    let found = {
        let path = path.clone();
        view.run(move |md| {
            HistoryRequest {
                path: Some(&path),
                limit: PAGE,
                cursor: cursor.as_deref(),
                ..Default::default()
            }
            .run(md)
        })
        .await?
    };
    let writable = !view.read_only(&path);
    let is_memory = !path.ends_with('/');
    let body = html! {
        h1 { "History of " (path) }
        p.actions {
            @if is_memory { a href=(memory_url(&path)) { "Memory" } }
            @else { a href=(layout::folder_url(&path)) { "Folder" } }
        }
        @if found.versions.is_empty() {
            p.muted { "No versions recorded here." }
        } @else {
            form method="get" action="/diff" {
                input type="hidden" name="store" value=(store);
                input type="hidden" name="path" value=(path);
                table.history {
                    thead { tr {
                        th { "from" } th { "to" } th { "version" } th { "operation" } th { "path" }
                        th { "actor" } th { "time" } th.num { "size" } th { "" }
                    } }
                    tbody {
                        @for (i, v) in found.versions.iter().enumerate() {
                            tr {
                                td { input type="radio" name="from" value=(v.version)
                                        aria-label=(format!("compare from version {}", v.version))
                                        checked[i == 1] disabled[v.redacted]; }
                                td { input type="radio" name="to" value=(v.version)
                                        aria-label=(format!("compare to version {}", v.version))
                                        checked[i == 0] disabled[v.redacted]; }
                                td.num { (v.version) }
                                td { (op_name(v.operation)) }
                                td {
                                    @if v.redacted { span.badge { "redacted" } }
                                    @else {
                                        (v.path)
                                        @if let Some(from) = &v.from { span.muted { " (from " (from) ")" } }
                                    }
                                    @if let Some(reason) = &v.reason { div.muted { "reason: " (reason) } }
                                }
                                td { (v.actor) }
                                td { (v.at) }
                                td.num { (layout::size(v.size_bytes)) }
                                td {
                                    @if !v.redacted {
                                        a href=(format!("/version?store={}&version={}", enc(&store), v.version)) { "view" }
                                        @if writable {
                                            " · "
                                            a href=(format!("/redact?store={}&version={}", enc(&store), v.version)) { "redact" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                p.actions { button type="submit" { "Compare the two versions chosen" } }
            }
            @if let Some(next) = &found.next_cursor {
                p { a href=(format!("{}&cursor={}", history_url(&path), enc(next))) { "Older versions" } }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("History of {path}"), &view.session, body),
    ))
}

/// `GET /version?store=S&version=V`: one version's content, with its restore button.
pub async fn version(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let version = version_of(query.get("version"), "version")?;
    let (v, content) = one(&view, &store, version).await?;
    let writable = !view.read_only(&format!("/{store}/"));
    let restorable = writable && !v.redacted && !v.path.is_empty();
    let now = if restorable {
        Some(current(&view, &v.path).await?)
    } else {
        None
    };
    let body = html! {
        h1 { "Version " (v.version) " of /" (store) }
        dl.fields {
            dt { "path" } dd { (v.path) }
            dt { "operation" } dd { (op_name(v.operation)) }
            dt { "actor" } dd { (v.actor) }
            dt { "time" } dd { (v.at) }
            dt { "size" } dd { (layout::size(v.size_bytes)) }
            dt { "sha256" } dd { code { (v.content_sha256) } }
        }
        p.actions {
            @if !v.path.is_empty() { a href=(history_url(&v.path)) { "History" } }
            @if let Some(now) = &now {
                (restore_form(&view, &v, now.as_ref().map(|(sha, _)| sha.as_str()), "Restore this version at "))
            }
        }
        h2 { "Content" }
        @match &content {
            Some(text) => pre.raw { (text) },
            None => p.muted { "This version's content is not kept (redacted)." },
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Version {version}"), &view.session, body),
    ))
}

/// `GET /diff?store=S&from=V1&to=V2`: the line diff of two versions' contents.
pub async fn diff(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let from = version_of(query.get("from"), "from")?;
    let to = version_of(query.get("to"), "to")?;
    let (a, old) = one(&view, &store, from).await?;
    let (b, new) = one(&view, &store, to).await?;
    let (Some(old), Some(new)) = (old, new) else {
        return Err(Page::error(
            StatusCode::GONE,
            "Gone: one of the two versions is redacted; its content is not kept",
        ));
    };
    let body = html! {
        h1 { "Version " (from) " → version " (to) }
        dl.fields {
            dt { "from" } dd { "v" (a.version) " " (op_name(a.operation)) " " (a.path) " by " (a.actor) " at " (a.at) }
            dt { "to" } dd { "v" (b.version) " " (op_name(b.operation)) " " (b.path) " by " (b.actor) " at " (b.at) }
        }
        p.muted { "Lines only in version " (from) " are marked −, lines only in version " (to) " +." }
        (layout::diff(&old, &new))
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Diff {from} → {to}"), &view.session, body),
    ))
}

/// The memory at `path` as it is now: its sha256 and text, `None` when there is none.
async fn current(view: &View, path: &str) -> Result<Option<(String, String)>, Page> {
    let path = path.to_string();
    match view.try_run(move |md| read::text(md, &path)).await? {
        Ok(text) => Ok(Some((crate::text::sha256_hex(text.as_bytes()), text))),
        Err(Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(respond::library_error(&e)),
    }
}

/// The button that restores version `v` at its path over the memory whose sha256 is
/// `now` (`None`: no memory there).
fn restore_form(view: &View, v: &Version, now: Option<&str>, label: &str) -> maud::Markup {
    html! {
        form method="post" action="/restore" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="path" value=(v.path);
            input type="hidden" name="version" value=(v.version);
            input type="hidden" name="sha256" value=(now.unwrap_or(ABSENT));
            button type="submit" { (label) (v.path) }
        }
    }
}

/// `POST /restore {path, version, sha256}`: the version's content written at `path`, a
/// new version by the person, if the memory there is still the one the page showed
/// (`sha256`, or `absent`); else the conflict, and nothing written.
pub async fn restore(view: View, form: &Query) -> Result<Page, Page> {
    let path = form.required("path")?.to_string();
    let version = version_of(form.get("version"), "version")?;
    let shown = form.required("sha256")?.to_string();
    let actor = view.session.actor.clone();
    let restored = {
        let (path, shown) = (path.clone(), shown.clone());
        view.try_run(move |md| {
            RestoreRequest {
                path: &path,
                version,
                if_absent: shown == ABSENT,
                expected_sha256: (shown != ABSENT).then_some(shown.as_str()),
                actor: &actor,
            }
            .run(md)
        })
        .await?
    };
    match restored {
        Ok(_) => Ok(Page::redirect(memory_url(&path))),
        Err(
            Error::Precondition { .. } | Error::PreconditionMissing { .. } | Error::Occupied { .. },
        ) => restore_conflict(view, &path, version).await,
        Err(e) => Err(respond::library_error(&e)),
    }
}

/// The memory changed (or was deleted, or made) since the version page showed it: the
/// memory now against the version, nothing written, and the choice to restore anyway.
async fn restore_conflict(view: View, path: &str, version: u64) -> Result<Page, Page> {
    let (v, content) = one(&view, &store_of(path)?, version).await?;
    let now = current(&view, path).await?;
    let (sha, theirs) = match &now {
        Some((sha, text)) => (Some(sha.as_str()), text.as_str()),
        None => (None, ""),
    };
    let body = html! {
        h1 { "Conflict: " (path) " changed meanwhile" }
        p.message {
            "Someone changed this memory after the version page showed it"
            @if now.is_none() { " (it is deleted now)" }
            ". Nothing was written. Below, lines only in the memory as it is now are marked "
            "−, lines only in version " (version) " +."
        }
        (layout::diff(theirs, content.as_deref().unwrap_or("")))
        p.actions {
            (restore_form(&view, &v, sha, &format!("Restore version {version} anyway at ")))
            a href=(history_url(path)) { "Cancel" }
        }
    };
    Ok(Page::html(
        StatusCode::CONFLICT,
        layout::frame(&format!("Conflict: {path}"), &view.session, body),
    ))
}

/// `GET /redact?store=S&version=V`: what will be erased, and the button that does it.
pub async fn redact_form(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let version = version_of(query.get("version"), "version")?;
    view.writable_store(&store)?;
    let (v, _) = one(&view, &store, version).await?;
    if v.redacted {
        return Err(Page::error(
            StatusCode::GONE,
            &format!("Gone: version {version} of /{store} is already redacted"),
        ));
    }
    let body = html! {
        h1 { "Redact version " (v.version) " of /" (store) "?" }
        p.message {
            "This erases, for good, the content and the path of this one version from the history: "
            "it cannot be restored or compared afterwards. Who made it and when stay. "
            "The memory as it is now is not changed."
        }
        dl.fields {
            dt { "path" } dd #redact-path { (v.path) }
            dt { "version" } dd #redact-version { (v.version) }
            dt { "time" } dd #redact-time { (v.at) }
            dt { "operation" } dd { (op_name(v.operation)) }
            dt { "actor" } dd { (v.actor) }
            dt { "size" } dd { (layout::size(v.size_bytes)) }
            dt { "sha256" } dd { code { (v.content_sha256) } }
        }
        form method="post" action="/redact" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="store" value=(store);
            input type="hidden" name="version" value=(v.version);
            p.actions {
                button type="submit" { "Erase version " (v.version) }
                a href=(history_url(&v.path)) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Redact version {version}"), &view.session, body),
    ))
}

/// `POST /redact {store, version}`.
pub async fn redact(view: View, form: &Query) -> Result<Page, Page> {
    let store = form.required("store")?.to_string();
    let version = version_of(form.get("version"), "version")?;
    view.writable_store(&store)?;
    {
        let store = store.clone();
        view.run(move |md| record::redact(md, Some(&store), version))
            .await?;
    }
    Ok(Page::redirect(history_url(&format!("/{store}/"))))
}
