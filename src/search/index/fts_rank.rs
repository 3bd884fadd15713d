//! `memdir_rank`: an FTS5 ranking function that computes FTS5's own `bm25()` with the
//! same constants, column weights and floating-point steps, minus two costs that dominate
//! queries with thousands of matches (measured at 10k files: a word in 92% of files spent
//! 3.3 of its 5.5 ms in the first, a 4-trigram Korean word 1.3 of 4.3 ms in the second):
//!
//! 1. **The document length.** `bm25()` asks FTS5 for it on every row, which is one
//!    lookup in the `%_docsize` table each time. Here it is remembered by row id in
//!    [`Lengths`], so a document's length is read from FTS5 once per process. That is
//!    only true because row ids are never reused (`docs.id` is `AUTOINCREMENT`; an
//!    update is a delete and an insert with a new id), so a remembered length never goes
//!    stale: the map is a memo, never invalidated, only trimmed.
//! 2. **The document-frequency pass.** `bm25()` runs every phrase of the query once more
//!    to count the documents holding it. With [`IDF_LATER`], for a query of one phrase
//!    and no filter, where that count is the number of rows the query returns, the
//!    function leaves the IDF out and the caller multiplies it in afterwards ([`idf`]):
//!    one positive factor, so ranks and ties are unchanged and the product is bit-exact.
//!
//! Everything else is `bm25()` itself (the constants and term weight of `search::bm25`),
//! `avgdl` from the table totals once per query, term frequency summed with the column
//! weights. The index's tests check scores equal to `bm25()` across clause kinds, filters
//! and updates.
//!
//! This is the one module with FFI in the index: the FTS5 extension API is C, and
//! rusqlite has no safe wrapper for it. Every `unsafe` block states why it holds.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::hash::{BuildHasherDefault, Hasher};
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
#[derive(Debug, Default)]
pub struct Lengths {
    by_id: Mutex<HashMap<i64, u32, BuildHasherDefault<IdHasher>>>,
    rows: AtomicI64,
    /// The database's schema version when the lengths were learned (0: not yet).
    schema: AtomicI64,
}

impl Lengths {
    /// The number of rows in the table when the last query began scoring.
    pub fn rows(&self) -> i64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// Forgets every length if the schema changed since they were learned: someone
    /// rebuilt the index (another memdir version, say), and a rebuilt `docs` table counts
    /// its ids from 1 again, so a remembered id may now name another document.
    pub fn check_schema(&self, version: i64) {
        if self.schema.swap(version, Ordering::Relaxed) != version {
            let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
            map.clear();
        }
    }

    /// Forgets everything once it holds far more entries than the table has rows (ids of
    /// deleted documents pile up as files change); it refills as queries run.
    pub fn trim(&self) {
        let rows = usize::try_from(self.rows()).unwrap_or(0);
        let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > rows.saturating_mul(2).saturating_add(4096) {
            map.clear();
            map.shrink_to_fit();
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Row ids are small distinct integers: a multiplicative hash spreads them well enough,
/// at a fraction of SipHash's cost (the map is looked up once per matching row).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_i64(&mut self, id: i64) {
        self.0 = (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
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
}

unsafe extern "C" fn drop_per_query(data: *mut c_void) {
    // SAFETY: `data` is the `Box<PerQuery>` that `per_query` handed to `xSetAuxdata`;
    // FTS5 calls this once, when the query ends.
    drop(unsafe { Box::from_raw(data as *mut PerQuery) });
}

/// The FTS5 auxiliary function: `memdir_rank(fts, mode)`.
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
        score(&*api, fts, mode)
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

/// The current row's score: minus its BM25, as `bm25()` returns it (lower is better).
///
/// # Safety
/// `api` and `fts` must be the extension API and context FTS5 passed to this call.
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    mode: i32,
) -> Result<f64, c_int> {
    // SAFETY (whole body): each call passes `fts` back to the API that gave it, with
    // out-pointers to locals; the user data is the `Lengths` kept alive by `register`.
    unsafe {
        let lengths = &*(call!(api, xUserData(fts)) as *const Lengths);
        let query = per_query(api, fts, mode, lengths)?;
        let id = call!(api, xRowid(fts));
        let known = lengths
            .by_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .copied();
        let tokens = match known {
            Some(n) => n,
            None => {
                let mut n: c_int = 0;
                check(call!(api, xColumnSize(fts, -1, &mut n)))?;
                let n = u32::try_from(n).unwrap_or(0);
                lengths
                    .by_id
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, n);
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
