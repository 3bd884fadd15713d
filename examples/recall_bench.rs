//! memdir's recall benchmark: does `memory_search` find what the agent meant? A program,
//! not a test.
//!
//! ```text
//! cargo build --release && cargo run --release --example recall_bench -- \
//!     [--locomo PATH] [--multilingual PATH] [--baseline-bin PATH] [--bin PATH]
//!     [--model FILE] [--vector-timeout SECS] [--scale N,N] [--scale-queries N]
//!     [--scale-hybrid] [--server-arg ARG]... [--work-dir DIR] [--show-misses]
//! ```
//!
//! Each engine (a column: `lexical-before` from `--baseline-bin` when given, then
//! `lexical-now`, the binary of this checkout, then `hybrid` with `--model`: the same
//! binary started with `--semantic --model FILE`) is the real `memdir` binary, spawned
//! with its own temp stores and index and driven over stdio by the rmcp client, as an
//! agent's host does. The memories are written with `memory_write`; a `--semantic` engine
//! is then polled (`memory_search`'s `pending_vectors`, up to `--vector-timeout`) until it
//! has computed every memory's vector in the background, and only then measured. Every
//! question is one `memory_search` scoped to its store with `limit` 50, and only the
//! order of the hits' paths is used. `--server-arg` is given to every engine. The columns
//! are printed side by side, with each engine's search round-trip p50/p95.
//!
//! **Search latency at scale** (`--scale`, default 10,000 and 100,000 memories; `0` for
//! none): `search_bench`'s generated corpus (`examples/common/corpus.rs`) is written to a
//! store once per size, every engine opens it, and each of `search_bench`'s query kinds is
//! searched `--scale-queries` times over MCP (`limit` 10, after 3 warm-up searches): p50 /
//! p95 per kind and engine. The `hybrid` column is left out there unless `--scale-hybrid`
//! is given, as it first computes a vector for each generated memory (~4 KB each: hours
//! for 100,000 on a small machine).
//!
//! **LoCoMo** (Maharana et al., ACL 2024; `data/locomo10.json` of snap-research/LoCoMo,
//! CC BY-NC 4.0, so it is not in this repository: pass its path, or a file holding some of
//! its conversations, with `--locomo`). Each conversation is one store, in two layouts:
//! one memory per dialog turn (`(session date) Speaker: text`, file named after the
//! turn's `dia_id`) and one memory per session (the date, then a line per turn). A turn
//! that shares an image carries its caption as LoCoMo's own retrieval units do
//! (`text and shared <blip_caption>`, its `task_eval/rag_utils.py`), so the figures
//! compare with the paper's; `--without-captions` leaves captions out (the layout of this
//! bench's figures before 2026-11-27). Recall is computed as LoCoMo's
//! `task_eval/evaluation.py` computes it:
//!
//! - a question's evidence is its list of `dia_id`s, each entry split on `[;,\s]` (a few
//!   entries hold two ids); questions with no evidence are left out;
//! - recall@k of one question = (evidence ids whose unit is among the top k hits) /
//!   (evidence ids); a turn's unit is its own memory, a session's unit is the session
//!   named by the id's part before `:` (`D3:7` → session 3); an id that names no turn
//!   (`D`, `D:11:26`, a turn number past a session's end) stays in the denominator and is
//!   never found, as in `evaluation.py`;
//! - recall@k = the mean over questions, overall and per category (1 multi-hop,
//!   2 temporal, 3 open-domain, 4 single-hop, 5 adversarial: all count).
//!
//! `cargo test --example recall_bench` checks this formula on hand-made cases.
//!
//! **Multilingual set** (`examples/data/recall-multilingual.json`, written for this
//! bench): memories and queries in English, Russian, Chinese, Japanese and Korean; each
//! query has a kind (`exact`, `word-form`, `paraphrase`, `cross-language`) and the ids of
//! the memories it should find, all in one store with distractors. Recall@5 per query is
//! the same fraction (expected ids in the top 5 / expected ids), averaged per language
//! (the query's) and kind. `--multilingual examples/data/recall-multilingual-check.json`
//! runs the second set (161 memories, 166 queries, also German, French and Spanish),
//! written apart from the first and from the search, and kept for checking: no constant
//! of the search is chosen on it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::process::Command;

#[allow(dead_code)]
#[path = "common/host.rs"]
mod host;
use host::memdir_bin;

#[allow(dead_code)]
#[path = "common/stats.rs"]
mod stats;
use stats::Stats;

#[allow(dead_code)]
#[path = "common/corpus.rs"]
mod corpus;

type Client = RunningService<RoleClient, ()>;

/// Hits asked of every search: the largest k reported.
const LIMIT: usize = 50;
const TURN_KS: [usize; 5] = [1, 5, 10, 25, 50];
const SESSION_KS: [usize; 4] = [1, 2, 5, 10];
const MULTILINGUAL_K: usize = 5;
const KINDS: [&str; 4] = ["exact", "word-form", "paraphrase", "cross-language"];
/// The five languages of the committed set first, then the others memdir stems
/// (`src/search/lang.rs`), so that a set of one's own may use them too.
const LANGS: [&str; 21] = [
    "en", "ru", "zh", "ja", "ko", "de", "fr", "es", "it", "pt", "nl", "sv", "no", "da", "fi", "hu",
    "ro", "tr", "el", "ar", "ta",
];
/// The store of the multilingual set.
const ML_STORE: &str = "ml";
/// The store of the generated corpus at scale (the query kinds' paths name it).
const SCALE_STORE: &str = "memories";
/// Hits asked of each search at scale, as `search_bench` asks.
const SCALE_LIMIT: usize = 10;
/// Untimed searches per query kind at scale, before the timed ones.
const SCALE_WARMUP: usize = 3;
/// The generated corpus' seed (`search_bench`'s default).
const SCALE_SEED: u64 = 42;
/// Between two looks at how many vectors a `--semantic` engine still lacks.
const VECTOR_POLL: Duration = Duration::from_secs(1);
/// Between two progress lines while waiting for vectors.
const VECTOR_REPORT: Duration = Duration::from_secs(30);

#[derive(Debug, Parser)]
#[command(about = "memdir recall benchmark: LoCoMo and a multilingual set, engines side by side")]
struct Args {
    /// LoCoMo's data (its `data/locomo10.json`, or a file with some of its conversations).
    /// Without it only the multilingual set runs.
    #[arg(long, value_name = "PATH")]
    locomo: Option<PathBuf>,
    /// The multilingual set (default: examples/data/recall-multilingual.json).
    #[arg(long, value_name = "PATH")]
    multilingual: Option<PathBuf>,
    /// The memdir binary measured as `lexical-now` (default: $MEMDIR_BIN, else
    /// target/release/memdir, refused when older than the sources).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// Another memdir binary (say, built from an older commit), measured in the same run
    /// as the column `lexical-before`.
    #[arg(long, value_name = "PATH")]
    baseline_bin: Option<PathBuf>,
    /// An extra argument for every memdir the bench starts (repeatable).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Where to make the temp folder (default: the system temp folder).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Also list the multilingual queries the last engine misses at k = 5.
    #[arg(long)]
    show_misses: bool,
    /// The embedding model's weights: adds the column `hybrid`, this checkout's binary
    /// started with `--semantic --model FILE` (search by words and meaning).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// How long a `--semantic` engine may take to compute its memories' vectors before
    /// the bench gives up, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    vector_timeout: u64,
    /// Generated-corpus sizes for the search latency at scale, comma-separated (`0`:
    /// none).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
    scale: Vec<usize>,
    /// Timed searches per query kind, engine and size at scale.
    #[arg(long, value_name = "N", default_value_t = 50)]
    scale_queries: usize,
    /// Also measure the `hybrid` column at scale (it first computes a vector for every
    /// generated memory).
    #[arg(long)]
    scale_hybrid: bool,
    /// Leave shared images' captions out of LoCoMo's memories (this bench's layout before
    /// 2026-11-27; LoCoMo's own retrieval units hold them).
    #[arg(long)]
    without_captions: bool,
}

/// One column: a binary and how it is started.
struct Engine {
    label: String,
    bin: PathBuf,
    args: Vec<String>,
    /// Started with `--semantic`: it computes vectors in the background, to be waited for.
    semantic: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut engines = Vec::new();
    if let Some(bin) = &args.baseline_bin {
        engines.push(Engine {
            label: "lexical-before".into(),
            bin: bin.clone(),
            args: args.server_args.clone(),
            semantic: false,
        });
    }
    let now = match &args.bin {
        Some(b) => b.clone(),
        None => memdir_bin()?,
    };
    engines.push(Engine {
        label: "lexical-now".into(),
        bin: now.clone(),
        args: args.server_args.clone(),
        semantic: false,
    });
    if let Some(model) = &args.model {
        if !model.is_file() {
            bail!("--model {}: no such file", model.display());
        }
        let mut server_args = args.server_args.clone();
        server_args.extend([
            "--semantic".to_owned(),
            "--model".to_owned(),
            model.display().to_string(),
        ]);
        engines.push(Engine {
            label: "hybrid".into(),
            bin: now,
            args: server_args,
            semantic: true,
        });
    }
    let vector_timeout = Duration::from_secs(args.vector_timeout);
    let sizes: Vec<usize> = args.scale.iter().copied().filter(|&n| n > 0).collect();
    for e in &engines {
        if !e.bin.is_file() {
            bail!("{} ({}): no such file", e.bin.display(), e.label);
        }
    }

    let locomo = match &args.locomo {
        Some(path) => {
            let mut l = Locomo::load(path)?;
            if args.without_captions {
                l.drop_captions();
            }
            Some(l)
        }
        None => None,
    };
    let ml_path = args.multilingual.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/recall-multilingual.json")
    });
    let ml = Multilingual::load(&ml_path)?;

    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("memdir-recall-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    println!("memdir recall benchmark");
    for e in &engines {
        println!("  {:<16} {} {}", e.label, e.bin.display(), e.args.join(" "));
    }
    match (&locomo, &args.locomo) {
        (Some(l), Some(path)) => println!(
            "  LoCoMo           {} ({} conversations, {} turns, {} sessions, {} questions with evidence)",
            path.display(),
            l.conversations.len(),
            l.turn_units().len(),
            l.session_units().len(),
            l.questions().len()
        ),
        _ => println!(
            "  LoCoMo           not run: pass --locomo PATH (snap-research/LoCoMo data/locomo10.json)"
        ),
    }
    println!(
        "  multilingual     {} ({} memories, {} queries)",
        ml_path.display(),
        ml.memories.len(),
        ml.queries.len()
    );

    let started = Instant::now();
    let mut runs = Vec::new();
    let mut failed = None;
    for e in &engines {
        let dir = work.join(&e.label);
        let run = run_engine(e, &dir, locomo.as_ref(), &ml, vector_timeout).await;
        let _ = std::fs::remove_dir_all(&dir);
        match run {
            Ok(run) => runs.push(run),
            Err(err) => {
                failed = Some(err.context(format!("engine {}", e.label)));
                break;
            }
        }
    }
    let mut scale = Vec::new();
    if failed.is_none() {
        for &n in &sizes {
            match run_scale(&engines, n, &work, &args).await {
                Ok(s) => scale.push(s),
                Err(err) => {
                    failed = Some(err.context(format!("search at {n} memories")));
                    break;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    if let Some(err) = failed {
        return Err(err);
    }

    let labels: Vec<&str> = engines.iter().map(|e| e.label.as_str()).collect();
    if let Some(l) = &locomo {
        let questions = l.questions();
        let missing = l.evidence_naming_no_turn();
        let turns: Vec<_> = runs.iter().map(|r| &r.turn).collect();
        let sessions: Vec<_> = runs.iter().map(|r| &r.session).collect();
        print_locomo(
            &format!(
                "LoCoMo, one memory per turn ({} memories in {} stores, {} questions)",
                l.turn_units().len(),
                l.conversations.len(),
                questions.len()
            ),
            &questions,
            &turns,
            &TURN_KS,
            Unit::Turn,
            &labels,
        );
        print_locomo(
            &format!(
                "LoCoMo, one memory per session ({} memories)",
                l.session_units().len()
            ),
            &questions,
            &sessions,
            &SESSION_KS,
            Unit::Session,
            &labels,
        );
        println!(
            "  ({missing} evidence ids name no turn: never found, counted, as evaluation.py does)"
        );
    }
    print_multilingual(&ml, &runs, &labels, args.show_misses);
    print_latency(&runs, &labels, locomo.is_some());
    for s in &scale {
        print_scale(s, &labels, args.scale_queries);
    }
    println!("\ntotal time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

// ---- LoCoMo ---------------------------------------------------------------------------

struct Locomo {
    conversations: Vec<Conversation>,
}

struct Conversation {
    /// The store's name, from the sample id.
    store: String,
    sessions: Vec<Session>,
    questions: Vec<Question>,
}

struct Session {
    /// `N` of `session_N`, as evidence ids name it (`DN:turn`).
    number: String,
    date: String,
    turns: Vec<Turn>,
}

struct Turn {
    dia_id: String,
    speaker: String,
    text: String,
    /// The caption of an image the turn shares (`blip_caption`).
    caption: Option<String>,
}

struct Question {
    /// The conversation's store name, without the layout's `t-` / `s-` prefix.
    conversation: String,
    text: String,
    category: u64,
    evidence: Vec<String>,
}

/// A memory the bench writes, and the key a hit on it maps back to.
struct Memory {
    path: String,
    text: String,
    key: String,
}

impl Turn {
    /// `Speaker: text`, and ` and shared <caption>` for a turn that shares an image.
    fn line(&self) -> String {
        match &self.caption {
            Some(caption) => format!("{}: {} and shared {caption}", self.speaker, self.text),
            None => format!("{}: {}", self.speaker, self.text),
        }
    }
}

#[derive(Clone, Copy)]
enum Unit {
    Turn,
    Session,
}

impl Locomo {
    fn load(path: &Path) -> anyhow::Result<Locomo> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let samples: Vec<Value> = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a LoCoMo file (a JSON list)", path.display()))?;
        let split = regex::Regex::new(r"[;,\s]+").expect("valid regex");
        let mut conversations = Vec::new();
        for (i, sample) in samples.iter().enumerate() {
            let what = || format!("{}: conversation {i}", path.display());
            let id = sample["sample_id"]
                .as_str()
                .map_or_else(|| format!("conv{i}"), str::to_owned);
            let store: String = id
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let conv = sample["conversation"]
                .as_object()
                .with_context(|| format!("{} has no `conversation`", what()))?;
            let mut sessions = Vec::new();
            for (key, turns) in conv {
                let Some(number) = key.strip_prefix("session_") else {
                    continue;
                };
                let Some(turns) = turns.as_array() else {
                    continue; // `session_N_date_time`, or a session with no turns
                };
                let date = conv
                    .get(&format!("session_{number}_date_time"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let turns = turns
                    .iter()
                    .map(|t| {
                        let field = |f: &str| t[f].as_str().unwrap_or_default().to_owned();
                        Turn {
                            dia_id: field("dia_id"),
                            speaker: field("speaker"),
                            text: field("text"),
                            caption: t["blip_caption"]
                                .as_str()
                                .filter(|c| !c.trim().is_empty())
                                .map(str::to_owned),
                        }
                    })
                    .collect();
                sessions.push(Session {
                    number: number.to_owned(),
                    date,
                    turns,
                });
            }
            sessions.sort_by_key(|s| s.number.parse::<u64>().unwrap_or(u64::MAX));
            let questions = sample["qa"]
                .as_array()
                .with_context(|| format!("{} has no `qa`", what()))?
                .iter()
                .filter_map(|q| {
                    let evidence: Vec<String> = q["evidence"]
                        .as_array()?
                        .iter()
                        .filter_map(Value::as_str)
                        .flat_map(|e| split.split(e))
                        .filter(|e| !e.is_empty())
                        .map(str::to_owned)
                        .collect();
                    (!evidence.is_empty()).then(|| Question {
                        conversation: store.clone(),
                        text: q["question"].as_str().unwrap_or_default().to_owned(),
                        category: q["category"].as_u64().unwrap_or(0),
                        evidence,
                    })
                })
                .collect();
            conversations.push(Conversation {
                store,
                sessions,
                questions,
            });
        }
        if conversations.is_empty() {
            bail!("{}: no conversations", path.display());
        }
        Ok(Locomo { conversations })
    }

    fn drop_captions(&mut self) {
        let turns = self.conversations.iter_mut().flat_map(|c| &mut c.sessions);
        for t in turns.flat_map(|s| &mut s.turns) {
            t.caption = None;
        }
    }

    fn questions(&self) -> Vec<&Question> {
        self.conversations
            .iter()
            .flat_map(|c| &c.questions)
            .collect()
    }

    fn turn_units(&self) -> Vec<Memory> {
        let mut out = Vec::new();
        for c in &self.conversations {
            for s in &c.sessions {
                for t in &s.turns {
                    let file: String = t
                        .dia_id
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                        .collect();
                    out.push(Memory {
                        path: format!("/t-{}/{file}.md", c.store),
                        text: format!("({}) {}\n", s.date, t.line()),
                        key: t.dia_id.clone(),
                    });
                }
            }
        }
        out
    }

    fn session_units(&self) -> Vec<Memory> {
        let mut out = Vec::new();
        for c in &self.conversations {
            for s in &c.sessions {
                let mut text = format!("({})\n", s.date);
                for t in &s.turns {
                    let _ = writeln!(text, "{}", t.line());
                }
                out.push(Memory {
                    path: format!("/s-{}/S{}.md", c.store, s.number),
                    text,
                    key: s.number.clone(),
                });
            }
        }
        out
    }

    /// Evidence ids (after splitting) that name no turn of their conversation.
    fn evidence_naming_no_turn(&self) -> usize {
        self.conversations
            .iter()
            .map(|c| {
                let ids: BTreeSet<&str> = c
                    .sessions
                    .iter()
                    .flat_map(|s| &s.turns)
                    .map(|t| t.dia_id.as_str())
                    .collect();
                c.questions
                    .iter()
                    .flat_map(|q| &q.evidence)
                    .filter(|e| !ids.contains(e.as_str()))
                    .count()
            })
            .sum()
    }
}

/// Recall@k of one question, as LoCoMo's `evaluation.py`: the share of its evidence ids
/// whose unit is among the first k keys (dia_ids for turns, session numbers for sessions).
fn recall_at(evidence: &[String], ranked: &[String], k: usize, unit: Unit) -> f64 {
    let top = &ranked[..k.min(ranked.len())];
    let found = evidence
        .iter()
        .filter(|e| match unit {
            Unit::Turn => top.contains(e),
            // `ev.split(':')[0][1:]`: `D3:7` → `3`.
            Unit::Session => {
                let session: String = e.split(':').next().unwrap_or("").chars().skip(1).collect();
                top.contains(&session)
            }
        })
        .count();
    found as f64 / evidence.len() as f64
}

fn category_name(c: u64) -> String {
    let name = match c {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "other",
    };
    format!("{c} {name}")
}

// ---- the multilingual set -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Multilingual {
    #[allow(dead_code)]
    about: String,
    memories: Vec<MlMemory>,
    queries: Vec<MlQuery>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MlMemory {
    id: String,
    lang: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MlQuery {
    query: String,
    lang: String,
    kind: String,
    expect: Vec<String>,
    /// Why the query is hard (for the reader; not used).
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

impl Multilingual {
    fn load(path: &Path) -> anyhow::Result<Multilingual> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let set: Multilingual = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a multilingual recall set", path.display()))?;
        let mut ids = BTreeSet::new();
        for m in &set.memories {
            if m.id.is_empty() || !m.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                bail!(
                    "{}: memory id `{}`: use ASCII letters, digits and `-`",
                    path.display(),
                    m.id
                );
            }
            if !ids.insert(m.id.as_str()) {
                bail!("{}: memory id `{}` appears twice", path.display(), m.id);
            }
            if !LANGS.contains(&m.lang.as_str()) {
                bail!(
                    "{}: memory {}: language `{}` is not one of {LANGS:?}",
                    path.display(),
                    m.id,
                    m.lang
                );
            }
        }
        for q in &set.queries {
            if !LANGS.contains(&q.lang.as_str()) || !KINDS.contains(&q.kind.as_str()) {
                bail!(
                    "{}: query `{}`: language must be one of {LANGS:?} and kind one of {KINDS:?}",
                    path.display(),
                    q.query
                );
            }
            if q.expect.is_empty() {
                bail!("{}: query `{}` expects no memory", path.display(), q.query);
            }
            if let Some(unknown) = q.expect.iter().find(|e| !ids.contains(e.as_str())) {
                bail!(
                    "{}: query `{}` expects unknown memory `{unknown}`",
                    path.display(),
                    q.query
                );
            }
        }
        Ok(set)
    }

    fn units(&self) -> Vec<Memory> {
        self.memories
            .iter()
            .map(|m| Memory {
                path: format!("/{ML_STORE}/{}.md", m.id),
                text: format!("{}\n", m.text),
                key: m.id.clone(),
            })
            .collect()
    }
}

// ---- one engine -----------------------------------------------------------------------

/// What one engine returned: per question (in the order of the data), the keys of its
/// hits, best first, and each search's round-trip time.
#[derive(Default)]
struct Ranked {
    keys: Vec<Vec<String>>,
    times: Vec<Duration>,
    failures: Vec<String>,
}

#[derive(Default)]
struct EngineRun {
    turn: Ranked,
    session: Ranked,
    ml: Ranked,
}

/// Starts `engine` over `stores` (name, folder) with its index in `index`, and makes the
/// MCP handshake.
async fn spawn(
    engine: &Engine,
    stores: &[(String, PathBuf)],
    index: &Path,
) -> anyhow::Result<Client> {
    let mut cmd_args: Vec<String> = Vec::new();
    for (name, folder) in stores {
        cmd_args.push("--store".into());
        cmd_args.push(format!("{name}={}", folder.display()));
    }
    if !engine.args.iter().any(|a| a == "--no-index") {
        cmd_args.push("--index-dir".into());
        cmd_args.push(index.display().to_string());
    }
    cmd_args.extend(engine.args.iter().cloned());
    let cmd = Command::new(&engine.bin).configure(|c| {
        c.args(&cmd_args);
        c.env_remove("RUST_LOG");
        c.env_remove("MEMDIR_SEMANTIC");
        c.env_remove("MEMDIR_MODEL");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {}", engine.bin.display()))?;
    ().serve(transport).await.context("MCP handshake")
}

/// Polls `stores` until none has a memory without a vector (a `--semantic` engine
/// computes them in the background) or `timeout` passes; says how long it took.
async fn wait_for_vectors(
    client: &Client,
    label: &str,
    stores: &[String],
    timeout: Duration,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut reported = t0;
    loop {
        let (mut pending, mut total) = (0, 0);
        for s in stores {
            let out = call(
                client,
                "memory_search",
                json!({"query": "warm", "path": format!("/{s}/"), "limit": 1}),
            )
            .await?;
            let Some(p) = out["pending_vectors"].as_u64() else {
                bail!(
                    "memory_search in /{s}/ gives no `pending_vectors`: this memdir does not search by meaning"
                );
            };
            pending += p;
            total += out["memories_in_scope"].as_u64().unwrap_or(0);
        }
        let waited = t0.elapsed();
        if pending == 0 {
            println!(
                "[{label}] every vector computed ({total} memories): waited {:.1} s",
                waited.as_secs_f64()
            );
            return Ok(());
        }
        if waited > timeout {
            bail!(
                "{pending} of {total} memories still have no vector after {} s: raise --vector-timeout",
                timeout.as_secs()
            );
        }
        if reported.elapsed() >= VECTOR_REPORT {
            println!(
                "[{label}] waiting for vectors: {} of {total} computed after {:.0} s",
                total - pending,
                waited.as_secs_f64()
            );
            reported = Instant::now();
        }
        tokio::time::sleep(VECTOR_POLL).await;
    }
}

async fn run_engine(
    engine: &Engine,
    dir: &Path,
    locomo: Option<&Locomo>,
    ml: &Multilingual,
    vector_timeout: Duration,
) -> anyhow::Result<EngineRun> {
    let mut stores = vec![ML_STORE.to_owned()];
    if let Some(l) = locomo {
        for c in &l.conversations {
            stores.push(format!("t-{}", c.store));
            stores.push(format!("s-{}", c.store));
        }
    }
    let mut folders = Vec::new();
    for s in &stores {
        let d = dir.join("stores").join(s);
        std::fs::create_dir_all(&d)?;
        folders.push((s.clone(), d));
    }
    let client = spawn(engine, &folders, &dir.join("index")).await?;

    let ml_units = ml.units();
    let (turn_units, session_units) = match locomo {
        Some(l) => (l.turn_units(), l.session_units()),
        None => (Vec::new(), Vec::new()),
    };
    let t0 = Instant::now();
    let mut written = 0;
    for m in ml_units.iter().chain(&turn_units).chain(&session_units) {
        call(
            &client,
            "memory_write",
            json!({"path": m.path, "content": m.text}),
        )
        .await
        .with_context(|| format!("writing {}", m.path))?;
        written += 1;
    }
    println!(
        "\n[{}] wrote {written} memories in {:.1} s",
        engine.label,
        t0.elapsed().as_secs_f64()
    );
    // The first search of a store brings its index up to date: not a query to time.
    let t0 = Instant::now();
    for s in &stores {
        call(
            &client,
            "memory_search",
            json!({"query": "warm", "path": format!("/{s}/")}),
        )
        .await?;
    }
    println!(
        "[{}] first search of each of {} stores (index catch-up) {:.1} s",
        engine.label,
        stores.len(),
        t0.elapsed().as_secs_f64()
    );
    if engine.semantic {
        wait_for_vectors(&client, &engine.label, &stores, vector_timeout).await?;
    }
    let t0 = Instant::now();

    let mut run = EngineRun::default();
    let keys_of = |units: &[Memory]| -> HashMap<String, String> {
        units
            .iter()
            .map(|m| (m.path.clone(), m.key.clone()))
            .collect()
    };
    let ml_keys = keys_of(&ml_units);
    for q in &ml.queries {
        search(&client, &q.query, ML_STORE, &ml_keys, &mut run.ml).await?;
    }
    if let Some(l) = locomo {
        let turn_keys = keys_of(&turn_units);
        let session_keys = keys_of(&session_units);
        for q in l.questions() {
            let turns = format!("t-{}", q.conversation);
            let sessions = format!("s-{}", q.conversation);
            search(&client, &q.text, &turns, &turn_keys, &mut run.turn).await?;
            search(&client, &q.text, &sessions, &session_keys, &mut run.session).await?;
        }
    }
    println!(
        "[{}] {} searches in {:.1} s",
        engine.label,
        run.ml.keys.len() + run.turn.keys.len() + run.session.keys.len(),
        t0.elapsed().as_secs_f64()
    );
    client.cancel().await?;
    Ok(run)
}

/// One question: `memory_search` in `store` for the top [`LIMIT`] hits (following
/// `next_cursor` when a page holds fewer), their keys recorded in `out`. A failed search
/// counts as no hits and is reported.
async fn search(
    client: &Client,
    query: &str,
    store: &str,
    keys: &HashMap<String, String>,
    out: &mut Ranked,
) -> anyhow::Result<()> {
    let mut ranked = Vec::new();
    let mut cursor: Option<String> = None;
    let t0 = Instant::now();
    loop {
        let mut args = json!({"query": query, "path": format!("/{store}/"), "limit": LIMIT});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = match call(client, "memory_search", args).await {
            Ok(page) => page,
            Err(e) => {
                out.failures.push(format!("{query:?}: {e:#}"));
                break;
            }
        };
        for hit in page["hits"].as_array().into_iter().flatten() {
            let path = hit["path"].as_str().unwrap_or_default();
            match keys.get(path) {
                Some(k) => ranked.push(k.clone()),
                None => bail!(
                    "search for {query:?} returned {path:?}, a memory the bench did not write"
                ),
            }
        }
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() || ranked.len() >= LIMIT {
            break;
        }
    }
    out.times.push(t0.elapsed());
    ranked.truncate(LIMIT);
    out.keys.push(ranked);
    Ok(())
}

// ---- search latency at scale ------------------------------------------------------------

/// One size of the generated corpus: per engine (in column order; `None` when left
/// out), its first search's time and each query kind's round trips.
struct ScaleRun {
    memories: usize,
    engines: Vec<Option<ScaleEngine>>,
}

struct ScaleEngine {
    /// The first search: the index built over the corpus (and, for a `--semantic` engine,
    /// the wait for its vectors after it).
    catch_up: Duration,
    /// Per query kind of `corpus::QUERIES`: the timed round trips and the hits counted.
    kinds: Vec<(Vec<Duration>, u64)>,
}

/// Writes `search_bench`'s corpus of `n` memories to a store and measures every engine
/// (a `--semantic` one only with `--scale-hybrid`) on it.
async fn run_scale(
    engines: &[Engine],
    n: usize,
    work: &Path,
    args: &Args,
) -> anyhow::Result<ScaleRun> {
    let dir = work.join(format!("scale-{n}"));
    let store = dir.join("store");
    std::fs::create_dir_all(&store)?;
    let t0 = Instant::now();
    let vocab = corpus::Vocab::new();
    let generated = corpus::generate(&store, n, SCALE_SEED, &vocab)?;
    println!(
        "\n[scale] generated {n} memories ({:.0} MB) in {:.1} s",
        generated.bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let mut run = ScaleRun {
        memories: n,
        engines: Vec::new(),
    };
    for (i, e) in engines.iter().enumerate() {
        if e.semantic && !args.scale_hybrid {
            run.engines.push(None);
            continue;
        }
        let index = dir.join(format!("index-{i}"));
        let client = spawn(e, &[(SCALE_STORE.to_owned(), store.clone())], &index).await?;
        let t0 = Instant::now();
        call(&client, "memory_search", json!({"query": "warm"})).await?;
        if e.semantic {
            let timeout = Duration::from_secs(args.vector_timeout);
            wait_for_vectors(&client, &e.label, &[SCALE_STORE.to_owned()], timeout).await?;
        }
        let catch_up = t0.elapsed();
        println!(
            "[{}] {n} memories: first search (index catch-up) {:.1} s",
            e.label,
            catch_up.as_secs_f64()
        );
        let mut kinds = Vec::new();
        for spec in corpus::QUERIES {
            let mut a = json!({"query": spec.query, "limit": SCALE_LIMIT});
            if let Some((path, _)) = spec.path {
                a["path"] = json!(path);
            }
            let mut hits = 0;
            for _ in 0..SCALE_WARMUP {
                let out = call(&client, "memory_search", a.clone())
                    .await
                    .with_context(|| format!("searching {:?}", spec.query))?;
                hits = out["total_hits"].as_u64().unwrap_or(0);
            }
            let mut times = Vec::with_capacity(args.scale_queries);
            for _ in 0..args.scale_queries {
                let t = Instant::now();
                call(&client, "memory_search", a.clone())
                    .await
                    .with_context(|| format!("searching {:?}", spec.query))?;
                times.push(t.elapsed());
            }
            kinds.push((times, hits));
        }
        client.cancel().await?;
        let _ = std::fs::remove_dir_all(&index);
        run.engines.push(Some(ScaleEngine { catch_up, kinds }));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(run)
}

/// One tool call; an error result becomes an error. Returns the structured content.
async fn call(client: &Client, tool: &'static str, args: Value) -> anyhow::Result<Value> {
    let Value::Object(map) = args else {
        bail!("tool arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await?;
    if result.is_error.unwrap_or(false) {
        bail!("{tool} failed: {:?}", result.content);
    }
    Ok(result.structured_content.unwrap_or(Value::Null))
}

// ---- reporting ------------------------------------------------------------------------

/// Width of an engine's column.
fn width(labels: &[&str]) -> usize {
    labels.iter().map(|l| l.len()).max().unwrap_or(0).max(14) + 2
}

fn header(first: &str, labels: &[&str]) {
    let w = width(labels);
    let mut line = format!("{first:<34}");
    for l in labels {
        let _ = write!(line, "{l:>w$}");
    }
    println!("{line}");
}

fn row(first: &str, cells: &[String], labels: &[&str]) {
    let w = width(labels);
    // Chinese, Japanese and Korean characters take two columns of a terminal.
    let wide = first
        .chars()
        .filter(|&c| matches!(c, '\u{1100}'..='\u{115F}' | '\u{2E80}'..='\u{A4CF}' | '\u{AC00}'..='\u{D7A3}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FF60}'))
        .count();
    let pad = 34usize.saturating_sub(wide);
    let mut line = format!("{first:<pad$}");
    for c in cells {
        let _ = write!(line, "{c:>w$}");
    }
    println!("{line}");
}

fn print_locomo(
    title: &str,
    questions: &[&Question],
    runs: &[&Ranked],
    ks: &[usize],
    unit: Unit,
    labels: &[&str],
) {
    println!("\n=== {title}: recall@k");
    header("category (questions)", labels);
    let mut groups: BTreeMap<Option<u64>, Vec<usize>> = BTreeMap::new();
    for (i, q) in questions.iter().enumerate() {
        groups.entry(None).or_default().push(i);
        groups.entry(Some(q.category)).or_default().push(i);
    }
    for (group, members) in &groups {
        let name = group.map_or_else(|| "all".to_owned(), category_name);
        for (j, &k) in ks.iter().enumerate() {
            let first = if j == 0 {
                format!(
                    "{:<24}{:>5} @{k}",
                    format!("{name} ({})", members.len()),
                    ""
                )
            } else {
                format!("{:<29} @{k}", "")
            };
            let cells: Vec<String> = runs
                .iter()
                .map(|r| {
                    let sum: f64 = members
                        .iter()
                        .map(|&i| recall_at(&questions[i].evidence, &r.keys[i], k, unit))
                        .sum();
                    format!("{:.3}", sum / members.len() as f64)
                })
                .collect();
            row(&first, &cells, labels);
        }
    }
    for (label, r) in labels.iter().zip(runs) {
        report_failures(label, r);
    }
}

fn print_multilingual(ml: &Multilingual, runs: &[EngineRun], labels: &[&str], show_misses: bool) {
    println!(
        "\n=== multilingual set ({} memories, {} queries): recall@{MULTILINGUAL_K}, by the query's language",
        ml.memories.len(),
        ml.queries.len()
    );
    header("language  kind (queries)", labels);
    let recall = |r: &EngineRun, i: usize| -> f64 {
        let q = &ml.queries[i];
        let top = &r.ml.keys[i][..MULTILINGUAL_K.min(r.ml.keys[i].len())];
        q.expect.iter().filter(|e| top.contains(e)).count() as f64 / q.expect.len() as f64
    };
    let line = |lang: &str, kind: &str, members: &[usize]| {
        if members.is_empty() {
            return;
        }
        let cells: Vec<String> = runs
            .iter()
            .map(|r| {
                let sum: f64 = members.iter().map(|&i| recall(r, i)).sum();
                format!("{:.3}", sum / members.len() as f64)
            })
            .collect();
        row(
            &format!("{lang:<9} {kind} ({})", members.len()),
            &cells,
            labels,
        );
    };
    let pick = |lang: Option<&str>, kind: Option<&str>| -> Vec<usize> {
        (0..ml.queries.len())
            .filter(|&i| {
                let q = &ml.queries[i];
                lang.is_none_or(|l| q.lang == l) && kind.is_none_or(|k| q.kind == k)
            })
            .collect()
    };
    for lang in LANGS {
        for kind in KINDS {
            line(lang, kind, &pick(Some(lang), Some(kind)));
        }
    }
    for kind in KINDS {
        line("all", kind, &pick(None, Some(kind)));
    }
    for lang in LANGS {
        line(lang, "all kinds", &pick(Some(lang), None));
    }
    line("all", "all kinds", &pick(None, None));
    for (label, r) in labels.iter().zip(runs) {
        report_failures(label, &r.ml);
    }
    if show_misses && let (Some(last), Some(label)) = (runs.last(), labels.last()) {
        println!("\n  {label} misses at k = {MULTILINGUAL_K} (query → expected; got):");
        for (i, q) in ml.queries.iter().enumerate() {
            if recall(last, i) < 1.0 {
                let got = &last.ml.keys[i][..MULTILINGUAL_K.min(last.ml.keys[i].len())];
                println!(
                    "  [{} {}] {} → {}; got [{}]",
                    q.lang,
                    q.kind,
                    q.query,
                    q.expect.join(" "),
                    got.join(" ")
                );
            }
        }
    }
}

fn print_latency(runs: &[EngineRun], labels: &[&str], locomo: bool) {
    println!("\n=== memory_search round trip over MCP, ms: p50 / p95 (limit {LIMIT})");
    header("layout (searches)", labels);
    let mut layouts: Vec<(&str, Vec<&Ranked>)> =
        vec![("multilingual set", runs.iter().map(|r| &r.ml).collect())];
    if locomo {
        layouts.push((
            "LoCoMo, memory per turn",
            runs.iter().map(|r| &r.turn).collect(),
        ));
        layouts.push((
            "LoCoMo, memory per session",
            runs.iter().map(|r| &r.session).collect(),
        ));
    }
    for (name, ranked) in layouts {
        let n = ranked.first().map_or(0, |r| r.times.len());
        let cells: Vec<String> = ranked
            .iter()
            .map(|r| {
                let s = Stats::of(&r.times);
                format!("{:.2} / {:.2}", s.p50, s.p95)
            })
            .collect();
        row(&format!("{name} ({n})"), &cells, labels);
    }
    if locomo {
        println!(
            "  (each question is asked of the session layout right after the turn layout: a \
             server that keeps recent queries' vectors embeds it once)"
        );
    }
}

fn print_scale(run: &ScaleRun, labels: &[&str], queries: usize) {
    println!(
        "\n=== memory_search round trip over MCP at {} memories (search_bench's corpus), ms: p50 / p95 ({queries} searches per kind, limit {SCALE_LIMIT})",
        run.memories
    );
    header("query kind (hits)", labels);
    let cells = |f: &dyn Fn(&ScaleEngine) -> String| -> Vec<String> {
        run.engines
            .iter()
            .map(|e| e.as_ref().map_or_else(|| "-".to_owned(), f))
            .collect()
    };
    row(
        "first search, s",
        &cells(&|e| format!("{:.1}", e.catch_up.as_secs_f64())),
        labels,
    );
    for (k, spec) in corpus::QUERIES.iter().enumerate() {
        // The hits of the last column measured: word forms and meaning find more than
        // the words as typed.
        let hits = run
            .engines
            .iter()
            .rev()
            .flatten()
            .next()
            .map_or(0, |e| e.kinds[k].1);
        row(
            &format!("{} ({hits})", spec.kind),
            &cells(&|e| {
                let s = Stats::of(&e.kinds[k].0);
                format!("{:.2} / {:.2}", s.p50, s.p95)
            }),
            labels,
        );
    }
    if run.engines.iter().any(Option::is_none) {
        println!(
            "  -: not measured at this size (--scale-hybrid measures hybrid here too, after computing a vector for every memory)"
        );
    }
}

fn report_failures(label: &str, r: &Ranked) {
    if let Some(first) = r.failures.first() {
        println!(
            "  {label}: {} searches failed (counted as no hits); first: {first}",
            r.failures.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    /// Both committed sets load: ids unique and known, languages and kinds known.
    #[test]
    fn the_committed_multilingual_sets_are_well_formed() {
        for (file, memories, queries) in [
            ("recall-multilingual.json", 125, 125),
            ("recall-multilingual-check.json", 161, 166),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/data")
                .join(file);
            let set = Multilingual::load(&path).unwrap();
            assert_eq!(set.memories.len(), memories, "{file}");
            assert_eq!(set.queries.len(), queries, "{file}");
        }
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"about": "", "memories": [{"id": "a", "lang": "xx", "text": "t"}], "queries": []}"#,
        )
        .unwrap();
        let err = Multilingual::load(&bad).err().unwrap().to_string();
        assert!(err.contains("language `xx`"), "{err}");
    }

    /// (evidence, ranked keys, k, unit, expected recall)
    #[test]
    fn recall_is_evaluation_py_s() {
        let cases = [
            ("D1:3", "D1:3 D2:1", 1, Unit::Turn, 1.0),
            ("D1:3 D2:1", "D1:3 D5:5 D2:1", 2, Unit::Turn, 0.5),
            ("D1:3 D2:1", "D1:3 D5:5 D2:1", 3, Unit::Turn, 1.0),
            ("D1:3", "", 5, Unit::Turn, 0.0),
            // An id naming no turn stays in the denominator.
            ("D1:3 D", "D1:3", 5, Unit::Turn, 0.5),
            // Sessions: `D12:4` is in session 12, not 1.
            ("D12:4", "1 2", 5, Unit::Session, 0.0),
            ("D12:4 D1:9", "12 1", 1, Unit::Session, 0.5),
            ("D12:4 D12:7", "12", 1, Unit::Session, 1.0),
            ("D:11:26", "11", 1, Unit::Session, 0.0),
        ];
        for (evidence, ranked, k, unit, want) in cases {
            let got = recall_at(&ids(evidence), &ids(ranked), k, unit);
            assert_eq!(got, want, "evidence {evidence:?}, ranked {ranked:?}, k {k}");
        }
    }

    #[test]
    fn evidence_is_split_and_questions_without_it_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locomo.json");
        let data = json!([{
            "sample_id": "sample-1",
            "conversation": {
                "speaker_a": "A", "speaker_b": "B",
                "session_1_date_time": "1 May 2023",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
                "session_2_date_time": "2 May 2023",
            },
            "qa": [
                {"question": "q1", "evidence": ["D1:1; D1:2", "D1:3,D1:4"], "category": 1},
                {"question": "q2", "evidence": [], "category": 5},
            ],
        }]);
        std::fs::write(&path, data.to_string()).unwrap();
        let l = Locomo::load(&path).unwrap();
        let qs = l.questions();
        assert_eq!(qs.len(), 1);
        assert_eq!(qs[0].evidence, ids("D1:1 D1:2 D1:3 D1:4"));
        assert_eq!(l.evidence_naming_no_turn(), 3);
        assert_eq!(
            l.session_units().len(),
            1,
            "a session without turns is no memory"
        );
        let turns = l.turn_units();
        assert_eq!(turns[0].path, "/t-sample-1/D1-1.md");
        assert_eq!(turns[0].text, "(1 May 2023) A: hi\n");
    }

    #[test]
    fn a_shared_image_is_in_the_memory_as_its_caption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locomo.json");
        let data = json!([{
            "sample_id": "s",
            "conversation": {
                "session_1_date_time": "1 May 2023",
                "session_1": [
                    {"speaker": "A", "dia_id": "D1:1", "text": "look",
                     "img_url": ["x"], "blip_caption": "a photo of a dog", "query": "dog"},
                    {"speaker": "B", "dia_id": "D1:2", "text": "nice", "blip_caption": " "},
                ],
            },
            "qa": [{"question": "q", "evidence": ["D1:1"], "category": 4}],
        }]);
        std::fs::write(&path, data.to_string()).unwrap();
        let mut l = Locomo::load(&path).unwrap();
        let turns = l.turn_units();
        assert_eq!(
            turns[0].text,
            "(1 May 2023) A: look and shared a photo of a dog\n"
        );
        assert_eq!(
            turns[1].text, "(1 May 2023) B: nice\n",
            "a blank caption is none"
        );
        assert_eq!(
            l.session_units()[0].text,
            "(1 May 2023)\nA: look and shared a photo of a dog\nB: nice\n"
        );
        l.drop_captions();
        assert_eq!(l.turn_units()[0].text, "(1 May 2023) A: look\n");
    }
}
