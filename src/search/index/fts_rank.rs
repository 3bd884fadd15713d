//! `memdir_rank`: an FTS5 ranking function that computes FTS5's own `bm25()` with the
//! same column weights and floating-point steps, and memdir's constants k1 and b
//! (`search::bm25`; `bm25()` fixes them at 1.2 and 0.75), minus two costs that dominate
//! queries with thousands of matches (measured at 10k files: a word in 92% of files spent
//! 3.3 of its 5.5 ms in the first, a 4-trigram Korean word 1.3 of 4.3 ms in the second):
//!
//! 1. **The document length.** `bm25()` asks FTS5 for it on every row, which is one
//!    lookup in the `%_docsize` table each time. Here it is remembered by row id in
//!    [`Lengths`] (sorted by id and walked with a cursor, as FTS5 hands rows over in
//!    ascending id), so a document's length is read from FTS5 once per process. That is
//!    only true because row ids are never reused (`docs.id` is `AUTOINCREMENT`; an
//!    update is a delete and an insert with a new id), so a remembered length never goes
//!    stale: the map is a memo, never invalidated, only trimmed.
//! 2. **The document-frequency pass.** `bm25()` runs every phrase of the query once more
//!    to count the documents holding it. With [`IDF_LATER`], for a query of one phrase
//!    and no filter, where that count is the number of rows the query returns, the
//!    function leaves the IDF out and the caller multiplies it in afterwards ([`idf`]):
//!    one positive factor, so ranks and ties are unchanged and the product is bit-exact.
//!
//! A third cost is not the function's but the statement's: returning each match to the
//! caller through `sqlite3_step`. Called as `memdir_rank(fts, mode, key)`, the function
//! also collects the row, so the statement need only count them
//! ([`Lengths::take_collected`]).
//!
//! Everything else is `bm25()` itself (the term weight of `search::bm25`), `avgdl` from
//! the table totals once per query, term frequency summed with the column weights. The
//! index's tests rank with `bm25()`'s constants and check scores equal to `bm25()`'s,
//! bit for bit, across clause kinds, filters and updates.
//!
//! This is the one module with FFI in the index: the FTS5 extension API is C, and
//! rusqlite has no safe wrapper for it. Every `unsafe` block states why it holds.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, ffi};

use crate::search::bm25::{self, idf};

/// The SQL name of the function: `memdir_rank(fts, mode)`.
pub const NAME: &str = "memdir_rank";
/// Mode: compute every phrase's IDF in the function, as `bm25()` does.
pub const IDF_HERE: i32 = 0;
/// Mode: leave the IDF out; the caller multiplies by [`idf`] of the rows it got.
pub const IDF_LATER: i32 = 1;

/// Column weights: `body` and `tri` fully, `tail` (lone CJK characters) a little, `stem`
/// (another form of a word) [`FORM_WEIGHT`].
pub const WEIGHTS: [f64; 4] = [1.0, 0.2, 1.0, bm25::FORM_WEIGHT];

/// Document lengths in tokens by row id, as FTS5 counts them, filled as queries meet
/// documents; and the table's row count at the last query that scored anything.
///
/// The lengths are a vector sorted by row id, not a hash map: FTS5 hands a query's rows
/// over in ascending row id, so each query walks the vector with a cursor and a row's
/// length is usually the next entry, read from memory the previous row's read brought
/// into the cache (a hash map scatters the ids: at 100,000 documents, a cache miss a
/// row). Lengths learned during a query are merged in when it ends.
#[derive(Debug, Default)]
pub struct Lengths {
    known: Mutex<Vec<(i64, u32)>>,
    /// Rows collected by queries that ended, `(score, row id, key)`.
    collected: Mutex<Vec<(f64, i64, i64)>>,
    rows: AtomicI64,
    /// The database's schema version when the lengths were learned (0: not yet).
    schema: AtomicI64,
}

impl Lengths {
    /// The number of rows in the table when the last query began scoring.
    pub fn rows(&self) -> i64 {
        self.rows.load(Ordering::Relaxed)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Vec<(i64, u32)>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn collected(&self) -> std::sync::MutexGuard<'_, Vec<(f64, i64, i64)>> {
        self.collected.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rows `memdir_rank(fts, mode, key)` collected, as `(score, row id, key)`, since
    /// the last call: a query's rows are handed over when its statement is reset.
    ///
    /// Collecting is what makes a query of many matches cheap: the statement returns one
    /// row (their count) instead of one per match, and each row handed back to the
    /// caller through `sqlite3_step` cost more than scoring it (measured at 100,000
    /// documents, a word in 92% of them: 22.8 ms returned row by row, 9.2 ms counted).
    pub fn take_collected(&self) -> Vec<(f64, i64, i64)> {
        std::mem::take(&mut *self.collected())
    }

    /// Forgets every length if the schema changed since they were learned: someone
    /// rebuilt the index (another memdir version, say), and a rebuilt `docs` table counts
    /// its ids from 1 again, so a remembered id may now name another document.
    pub fn check_schema(&self, version: i64) {
        if self.schema.swap(version, Ordering::Relaxed) != version {
            self.known().clear();
        }
    }

    /// Forgets everything once it holds far more entries than the table has rows (ids of
    /// deleted documents pile up as files change); it refills as queries run.
    pub fn trim(&self) {
        let rows = usize::try_from(self.rows()).unwrap_or(0);
        let mut known = self.known();
        if known.len() > rows.saturating_mul(2).saturating_add(4096) {
            known.clear();
            known.shrink_to_fit();
        }
    }

    /// The length of row `id`, if known, searching from `*cursor` (where the previous
    /// row of the query was found) and leaving it where `id` is or would be.
    fn find(known: &[(i64, u32)], cursor: &mut usize, id: i64) -> Option<u32> {
        let from = (*cursor).min(known.len());
        // Rows come in ascending id: the next row is usually at or just after the cursor.
        let at =
            if known.get(from).is_none_or(|k| k.0 >= id) && (from == 0 || known[from - 1].0 < id) {
                from
            } else if from < known.len() && known[from].0 < id {
                // Gallop ahead: a query of few matches skips a few entries at a time, and
                // the entries near the cursor are the ones in cache.
                let mut step = 1;
                let mut lo = from;
                while lo + step < known.len() && known[lo + step].0 < id {
                    lo += step;
                    step *= 2;
                }
                let hi = (lo + step + 1).min(known.len());
                lo + known[lo..hi].partition_point(|k| k.0 < id)
            } else {
                known[..from].partition_point(|k| k.0 < id)
            };
        *cursor = at;
        known.get(at).filter(|k| k.0 == id).map(|k| k.1)
    }

    /// Adds the lengths one query learned (`learned`, in any order).
    fn merge(&self, mut learned: Vec<(i64, u32)>) {
        if learned.is_empty() {
            return;
        }
        learned.sort_unstable_by_key(|k| k.0);
        learned.dedup_by_key(|k| k.0);
        let mut known = self.known();
        // New documents have the highest ids: usually an append.
        if known.last().is_none_or(|k| k.0 < learned[0].0) {
            known.extend(learned);
            return;
        }
        let old = std::mem::take(&mut *known);
        known.reserve(old.len() + learned.len());
        let (mut a, mut b) = (old.into_iter().peekable(), learned.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 < y.0 => a.next(),
                (Some(x), Some(y)) if x.0 == y.0 => {
                    b.next();
                    a.next()
                }
                (_, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            known.extend(next);
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.known().len()
    }
}

/// Registers `memdir_rank` on `conn`, remembering lengths in `lengths`.
pub fn register(conn: &Connection, lengths: Arc<Lengths>) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let user = Arc::into_raw(lengths) as *mut c_void;
    let name = c"memdir_rank";
    debug_assert_eq!(name.to_str(), Ok(NAME));
    // SAFETY: `api` is the live fts5_api of `conn` (checked non-null by `fts5_api`).
    // `name` is a NUL-terminated static string. `user` is an `Arc<Lengths>` turned into a
    // raw pointer; SQLite hands it to `rank` as `xUserData` while the function exists and
    // passes it to `drop_lengths` exactly once, when the connection closes (FTS5 keeps
    // every registration until then), which turns it back into the `Arc` and drops it.
    let rc = unsafe {
        match (*api).xCreateFunction {
            Some(create) => create(api, name.as_ptr(), user, Some(rank), Some(drop_lengths)),
            None => ffi::SQLITE_ERROR,
        }
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: SQLite did not take ownership of `user` (creation failed), so this is
        // the only owner of the reference made by `into_raw` above.
        drop(unsafe { Arc::from_raw(user as *const Lengths) });
        return Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some("registering memdir_rank with FTS5".into()),
        ));
    }
    Ok(())
}

/// The connection's `fts5_api`, fetched the documented way: `SELECT fts5(?1)` with a
/// pointer bound under the type name `fts5_api_ptr`.
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    // SAFETY: `db` is `conn`'s open handle, used only on this thread for the duration of
    // this call. The statement is prepared from a NUL-terminated static string, the bound
    // pointer (`&mut api`) outlives the statement, which is finalized before returning,
    // and `fts5()` writes one `fts5_api*` through it, the type it was bound as.
    let rc = unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
        let mut rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            std::ptr::null_mut(),
        );
        if rc == ffi::SQLITE_OK {
            rc = ffi::sqlite3_bind_pointer(
                stmt,
                1,
                (&raw mut api).cast::<c_void>(),
                c"fts5_api_ptr".as_ptr(),
                None,
            );
        }
        if rc == ffi::SQLITE_OK && ffi::sqlite3_step(stmt) != ffi::SQLITE_ROW {
            rc = ffi::SQLITE_ERROR;
        }
        ffi::sqlite3_finalize(stmt);
        rc
    };
    if rc != ffi::SQLITE_OK || api.is_null() {
        return Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(if rc == ffi::SQLITE_OK {
                ffi::SQLITE_ERROR
            } else {
                rc
            }),
            Some("this SQLite has no FTS5 extension API".into()),
        ));
    }
    Ok(api)
}

unsafe extern "C" fn drop_lengths(user: *mut c_void) {
    // SAFETY: `user` is the pointer `register` made with `Arc::into_raw`; SQLite calls
    // this once, when it lets go of it.
    drop(unsafe { Arc::from_raw(user as *const Lengths) });
}

/// What one query computes once, kept as FTS5 auxiliary data for the query's lifetime.
struct PerQuery {
    /// The mode of the call that computed this; FTS5 shares this data between every
    /// `memdir_rank` call of one statement, so calls of another mode are refused.
    mode: i32,
    avgdl: f64,
    /// Per phrase: its IDF, or 1.0 in [`IDF_LATER`] mode.
    idf: Vec<f64>,
    /// Where in [`Lengths`] the previous row's length was found.
    cursor: Cell<usize>,
    /// Lengths read from FTS5 during this query, merged into [`Lengths`] when it ends.
    learned: RefCell<Vec<(i64, u32)>>,
    /// The rows collected by this query, handed to [`Lengths`] when it ends.
    collected: RefCell<Vec<(f64, i64, i64)>>,
    /// The `Lengths` of the connection, which outlives every query on it.
    lengths: *const Lengths,
}

unsafe extern "C" fn drop_per_query(data: *mut c_void) {
    // SAFETY: `data` is the `Box<PerQuery>` that `per_query` handed to `xSetAuxdata`;
    // FTS5 calls this once, when the query ends. Its `lengths` is the user data of the
    // function, which SQLite keeps until the connection closes, after its queries.
    let query = unsafe { Box::from_raw(data as *mut PerQuery) };
    let lengths = unsafe { &*query.lengths };
    lengths.merge(query.learned.take());
    let collected = query.collected.take();
    if !collected.is_empty() {
        lengths.collected().extend(collected);
    }
}

/// The FTS5 auxiliary function: `memdir_rank(fts, mode)`, or `memdir_rank(fts, mode, key)`
/// to also collect the row (see [`Lengths::take_collected`]).
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its extension API, the current query's context, the
    // SQL function context and `argc` argument values, all valid for this call.
    let outcome = std::panic::catch_unwind(|| unsafe {
        let mode = if argc >= 1 {
            ffi::sqlite3_value_int(*argv)
        } else {
            IDF_HERE
        };
        let key = (argc >= 2).then(|| ffi::sqlite3_value_int64(*argv.add(1)));
        score(&*api, fts, mode, key)
    });
    // SAFETY: `ctx` is valid for this call; the message is a static C string.
    unsafe {
        match outcome {
            Ok(Ok(score)) => ffi::sqlite3_result_double(ctx, score),
            Ok(Err(rc)) => ffi::sqlite3_result_error_code(ctx, rc),
            Err(_) => ffi::sqlite3_result_error(ctx, c"memdir_rank failed".as_ptr(), -1),
        }
    }
}

/// Calls an optional FTS5 API entry, or fails the query if this FTS5 lacks it.
macro_rules! call {
    ($api:expr, $f:ident ( $($arg:expr),* )) => {
        match $api.$f {
            Some(f) => f($($arg),*),
            None => return Err(ffi::SQLITE_ERROR),
        }
    };
}

/// The current row's score: minus its BM25, as `bm25()` returns it (lower is better);
/// with a `key`, the row is also collected as `(score, row id, key)`.
///
/// # Safety
/// `api` and `fts` must be the extension API and context FTS5 passed to this call.
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    mode: i32,
    key: Option<i64>,
) -> Result<f64, c_int> {
    // SAFETY (whole body): each call passes `fts` back to the API that gave it, with
    // out-pointers to locals; the user data is the `Lengths` kept alive by `register`.
    unsafe {
        let lengths = &*(call!(api, xUserData(fts)) as *const Lengths);
        let query = per_query(api, fts, mode, lengths)?;
        let id = call!(api, xRowid(fts));
        let mut cursor = query.cursor.get();
        let known = Lengths::find(&lengths.known(), &mut cursor, id);
        query.cursor.set(cursor);
        let tokens = match known {
            Some(n) => n,
            None => {
                let mut n: c_int = 0;
                check(call!(api, xColumnSize(fts, -1, &mut n)))?;
                let n = u32::try_from(n).unwrap_or(0);
                query.learned.borrow_mut().push((id, n));
                n
            }
        };
        let d = f64::from(tokens);
        let mut score = 0.0;
        for (phrase, idf) in query.idf.iter().enumerate() {
            let mut freq = 0.0;
            let mut iter = ffi::Fts5PhraseIter {
                a: std::ptr::null(),
                b: std::ptr::null(),
            };
            let (mut col, mut off): (c_int, c_int) = (0, 0);
            check(call!(
                api,
                xPhraseFirst(fts, phrase as c_int, &mut iter, &mut col, &mut off)
            ))?;
            while col >= 0 {
                freq += usize::try_from(col)
                    .ok()
                    .and_then(|c| WEIGHTS.get(c))
                    .copied()
                    .unwrap_or(1.0);
                call!(api, xPhraseNext(fts, &mut iter, &mut col, &mut off));
            }
            score += idf * bm25::term_weight(freq, d, query.avgdl);
        }
        if let Some(key) = key {
            query.collected.borrow_mut().push((-score, id, key));
        }
        Ok(-score)
    }
}

/// The query's [`PerQuery`], computed on its first row.
///
/// # Safety
/// As [`score`].
unsafe fn per_query<'q>(
    api: &'q ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    mode: i32,
    lengths: &Lengths,
) -> Result<&'q PerQuery, c_int> {
    // SAFETY (whole body): as in `score`; the auxiliary data pointer is either null or the
    // `Box<PerQuery>` set below, which FTS5 keeps until the query ends, so the reference
    // returned lives as long as any call of this query.
    unsafe {
        let existing = call!(api, xGetAuxdata(fts, 0)) as *const PerQuery;
        if !existing.is_null() {
            let existing = &*existing;
            if existing.mode != mode {
                return Err(ffi::SQLITE_MISUSE);
            }
            return Ok(existing);
        }
        let phrases = usize::try_from(call!(api, xPhraseCount(fts))).unwrap_or(0);
        let (mut rows, mut tokens): (i64, i64) = (0, 0);
        check(call!(api, xRowCount(fts, &mut rows)))?;
        check(call!(api, xColumnTotalSize(fts, -1, &mut tokens)))?;
        lengths.rows.store(rows, Ordering::Relaxed);
        let mut idfs = vec![1.0; phrases];
        if mode != IDF_LATER {
            for (phrase, slot) in idfs.iter_mut().enumerate() {
                let mut hits: i64 = 0;
                check(call!(
                    api,
                    xQueryPhrase(
                        fts,
                        phrase as c_int,
                        (&raw mut hits).cast::<c_void>(),
                        Some(count_row)
                    )
                ))?;
                *slot = idf(rows, hits);
            }
        }
        let data = Box::into_raw(Box::new(PerQuery {
            mode,
            avgdl: tokens as f64 / rows as f64,
            idf: idfs,
            cursor: Cell::new(0),
            learned: RefCell::new(Vec::new()),
            collected: RefCell::new(Vec::new()),
            lengths: std::ptr::from_ref(lengths),
        }));
        let rc = call!(
            api,
            xSetAuxdata(fts, data.cast::<c_void>(), Some(drop_per_query))
        );
        // On failure FTS5 has already called the destructor on `data`.
        check(rc)?;
        Ok(&*data)
    }
}

unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    hits: *mut c_void,
) -> c_int {
    // SAFETY: `hits` is the `&mut i64` `per_query` passed to `xQueryPhrase`, alive for
    // the whole (synchronous) call.
    unsafe { *(hits as *mut i64) += 1 };
    ffi::SQLITE_OK
}

fn check(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id looked up from every cursor position finds its length (or none, and
    /// leaves the cursor at its place), whichever way the cursor has to go.
    #[test]
    fn lengths_are_found_from_any_cursor() {
        let known: Vec<(i64, u32)> = (0..200).map(|i| (3 * i + 1, i as u32)).collect();
        for start in 0..=known.len() + 1 {
            for id in 0..=3 * 200 + 2 {
                let mut cursor = start;
                let found = Lengths::find(&known, &mut cursor, id);
                let want = known.iter().find(|k| k.0 == id).map(|k| k.1);
                assert_eq!(found, want, "id {id} from {start}");
                assert_eq!(
                    cursor,
                    known.partition_point(|k| k.0 < id),
                    "id {id} from {start}"
                );
            }
        }
    }

    /// Lengths learned out of order, some already known, merge into one sorted list.
    #[test]
    fn learned_lengths_merge_sorted() {
        let lengths = Lengths::default();
        lengths.merge(vec![(5, 50), (1, 10)]);
        lengths.merge(vec![(9, 90), (7, 70)]);
        lengths.merge(vec![(3, 30), (5, 50), (8, 80), (3, 30), (0, 1)]);
        let want = [(0, 1), (1, 10), (3, 30), (5, 50), (7, 70), (8, 80), (9, 90)];
        assert_eq!(*lengths.known(), want);
    }
}
