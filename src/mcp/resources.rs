//! MCP resources: every memory is the resource `memory://<store>/<path>` (URI-encoded),
//! readable whole; `memory://{store}/{+path}` is the template; and each store has an
//! index, `memory://<store>/MEMORY.md`: the file when the store has one (Claude Code's
//! convention), else one generated from the memories' frontmatter, held to Claude Code's
//! caps either way (`memory::memory_index`).

use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};

use crate::error::Error;
use crate::memory::{self, INDEX_FILE as INDEX, ListRequest, Memdir, encode_path};
use crate::path::MemPath;

pub const SCHEME: &str = "memory://";
/// Entries per `resources/list` page.
const PAGE: usize = 1000;
/// The longest resource URI taken: a path's 1,024 bytes, each written as `%XX`, and
/// the scheme.
const MAX_URI: usize = SCHEME.len() + 3 * 1024;

/// The resource URI of a canonical memory path (`/<store>/<path>`).
pub fn uri(canonical: &str) -> String {
    format!("{SCHEME}{}", encode_path(canonical.trim_start_matches('/')))
}

/// The canonical memory path of a resource URI; percent-escapes are decoded (as URIs
/// require), and the path then goes through the path policy like any other.
pub fn path_of(uri: &str) -> Result<String, ErrorData> {
    let bad = |why: &str| {
        ErrorData::invalid_params(
            format!(
                "invalid resource URI {:?}: {why}; memories are memory://<store>/<path>, e.g. memory://memories/notes/rust.md",
                crate::text::head_chars(uri, 200)
            ),
            None,
        )
    };
    if uri.len() > MAX_URI {
        return Err(bad(&format!(
            "it is {} bytes long; memory URIs are at most {MAX_URI}",
            uri.len()
        )));
    }
    let rest = uri
        .strip_prefix(SCHEME)
        .ok_or_else(|| bad("it does not start with memory://"))?;
    if rest.contains(['?', '#']) {
        return Err(bad(
            "memory URIs have no query or fragment (a `?` or `#` in a name is written %3F or %23)",
        ));
    }
    let mut bytes = Vec::with_capacity(rest.len());
    let mut raw = rest.bytes();
    while let Some(b) = raw.next() {
        if b != b'%' {
            bytes.push(b);
            continue;
        }
        let hex = [raw.next(), raw.next()];
        let value = match hex {
            [Some(h), Some(l)] => std::str::from_utf8(&[h, l])
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok()),
            _ => None,
        };
        bytes.push(value.ok_or_else(|| bad("a `%` is not followed by two hex digits"))?);
    }
    let path = String::from_utf8(bytes).map_err(|_| bad("it does not decode to UTF-8"))?;
    if path.is_empty() {
        return Err(bad("it names no store"));
    }
    Ok(format!("/{path}"))
}

fn mime(path: &str) -> &'static str {
    if path.ends_with(".md") || path.ends_with(".markdown") {
        "text/markdown"
    } else {
        "text/plain"
    }
}

/// An error of a resource request: a missing memory is "resource not found".
fn error(e: Error) -> ErrorData {
    match e {
        Error::NotFound { .. } | Error::IsFolder { .. } => {
            ErrorData::resource_not_found(e.to_string(), None)
        }
        other => ErrorData::invalid_params(other.to_string(), None),
    }
}

/// One page of memories; the first page also has each store's generated index (for a
/// store without a MEMORY.md file).
pub fn list(m: &Memdir, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
    let mut resources = Vec::new();
    if cursor.is_none_or(str::is_empty) {
        for store in m.stores() {
            let index = format!("/{}/{INDEX}", store.name);
            if matches!(memory::read::text(m, &index), Err(Error::NotFound { .. })) {
                resources.push(
                    Resource::new(uri(&index), index)
                        .with_title(format!("Index of /{}", store.name))
                        .with_description(format!(
                            "The memories of /{} with their names and descriptions (generated: the store has no {INDEX}; at most 200 lines)",
                            store.name
                        ))
                        .with_mime_type("text/markdown"),
                );
            }
        }
    }
    let page = ListRequest {
        path: None,
        depth: None,
        limit: PAGE,
        cursor,
        ..Default::default()
    }
    .run(m)
    .map_err(error)?;
    // The protocol's list has no place to say so: the log does.
    for gone in &page.unavailable {
        tracing::warn!(store = %gone.store, reason = %gone.reason, "resources/list went without a store whose database cannot be reached");
    }
    for e in page.entries.into_iter().filter(|e| !e.is_dir) {
        let mut r = Resource::new(uri(&e.path), e.path.clone())
            .with_mime_type(mime(&e.path))
            .with_size(e.size_bytes);
        if let Some(d) = e.description {
            r = r.with_description(d);
        }
        resources.push(r);
    }
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = page.next_cursor;
    Ok(result)
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new("memory://{store}/{+path}", "memory")
            .with_title("A memory")
            .with_description(
                "A memory by its store and path, e.g. memory://memories/notes/rust.md; memory://<store>/MEMORY.md is the store's index",
            ),
    ])
}

pub fn read(m: &Memdir, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let path = path_of(uri)?;
    if path.len() > 1 && path.ends_with('/') {
        return Err(ErrorData::resource_not_found(
            format!("{uri} ends with `/`, which names a folder; a folder is not a resource"),
            None,
        ));
    }
    let text = match index_of(m, &path) {
        Some(root) => {
            memory::memory_md::memory_index(m, &root)
                .map_err(error)?
                .text
        }
        None => memory::read::text(m, &path).map_err(error)?,
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(mime(&path)),
    ]))
}

/// The store root whose index `path` is, when it is `/<store>/MEMORY.md` of a served
/// store.
fn index_of(m: &Memdir, path: &str) -> Option<MemPath> {
    m.stores()
        .iter()
        .enumerate()
        .find(|(_, s)| path == format!("/{}/{INDEX}", s.name))
        .map(|(i, s)| MemPath::root(i, &s.name))
}

#[cfg(test)]
mod tests {
    use super::{path_of, uri};

    #[test]
    fn uris_encode_and_decode_paths() {
        assert_eq!(
            uri("/memories/notes/rust.md"),
            "memory://memories/notes/rust.md"
        );
        assert_eq!(
            uri("/memories/a b/ü.md"),
            "memory://memories/a%20b/%C3%BC.md"
        );
        for p in ["/memories/a b/ü.md", "/m/100%.md", "/m/x?y#z.md"] {
            assert_eq!(path_of(&uri(p)).unwrap(), p);
        }
        assert!(path_of("memory://m/a.md?x").is_err());
        assert!(path_of("memory://m/a.md#x").is_err());
        assert!(path_of(&format!("memory://m/{}", "q".repeat(4000))).is_err());
        assert!(path_of("file:///etc/passwd").is_err());
        assert!(path_of("memory://m/%zz").is_err());
        assert!(path_of("memory://m/%ff.md").is_err());
        assert!(path_of("memory://").is_err());
        // Decoding happens before the path policy, which then refuses `..`.
        assert_eq!(path_of("memory://m/%2e%2e/x").unwrap(), "/m/../x");
    }
}
