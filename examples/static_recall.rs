//! Measures a distilled static table against the full model on the multilingual recall
//! set (`examples/data/recall-multilingual.json`): recall@5 per query kind and overall.
//!
//! The static table is model2vec's idea at its plainest: each vocabulary token run
//! through the model alone (`<s> token </s>`, mean-pooled, unit length), and a text's
//! vector the mean of its tokens' vectors (with the same `query: ` / `passage: `
//! prefixes), unit length. A token's row depends on that token alone, so computing only
//! the rows the set's texts use gives exactly what the whole 250k-row table would.
//!
//! ```text
//! cargo run --release --example static_recall -- --model FILE
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Instant;

use memdir::embed::Model;
use serde_json::Value;

const K: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
    else {
        eprintln!("usage: static_recall --model FILE");
        std::process::exit(2);
    };
    let model = Model::load(&PathBuf::from(path)).unwrap_or_else(|e| panic!("{e}"));
    let set: Value = serde_json::from_str(include_str!("data/recall-multilingual.json")).unwrap();
    let memories: Vec<(String, String)> = set["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().into(),
                m["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    let queries: Vec<(String, String, Vec<String>)> = set["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["query"].as_str().unwrap().into(),
                q["kind"].as_str().unwrap().into(),
                q["expect"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e.as_str().unwrap().into())
                    .collect(),
            )
        })
        .collect();

    // The full model.
    let t = Instant::now();
    let texts: Vec<&str> = memories.iter().map(|m| m.1.as_str()).collect();
    let full_docs = model.embed_passages(&texts);
    let full_queries: Vec<Vec<f32>> = queries.iter().map(|q| model.embed_query(&q.0)).collect();
    let full_time = t.elapsed();

    // The static table, for the tokens the set uses.
    let doc_tokens: Vec<Vec<u32>> = memories
        .iter()
        .map(|m| content(&model.tokens("passage: ", &m.1)))
        .collect();
    let query_tokens: Vec<Vec<u32>> = queries
        .iter()
        .map(|q| content(&model.tokens("query: ", &q.0)))
        .collect();
    let mut ids: Vec<u32> = doc_tokens
        .iter()
        .chain(&query_tokens)
        .flatten()
        .copied()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let special = model.tokens("", "");
    let (bos, eos) = (special[0], special[special.len() - 1]);
    let t = Instant::now();
    let rows = model.embed_tokens(&ids.iter().map(|&id| vec![bos, id, eos]).collect::<Vec<_>>());
    let distill_time = t.elapsed();
    let table: HashMap<u32, Vec<f32>> = ids.into_iter().zip(rows).collect();
    let mean = |tokens: &[u32]| {
        let mut v = vec![0f32; model.dim()];
        for id in tokens {
            v.iter_mut().zip(&table[id]).for_each(|(a, b)| *a += b);
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= n);
        v
    };
    let static_docs: Vec<Vec<f32>> = doc_tokens.iter().map(|t| mean(t)).collect();
    let static_queries: Vec<Vec<f32>> = query_tokens.iter().map(|t| mean(t)).collect();

    println!(
        "{} memories, {} queries; {} distinct tokens distilled in {:.1} s ({:.1} ms each); full model on the set: {:.1} s",
        memories.len(),
        queries.len(),
        table.len(),
        distill_time.as_secs_f64(),
        distill_time.as_secs_f64() * 1000.0 / table.len() as f64,
        full_time.as_secs_f64()
    );
    println!("recall@{K}     {:>8} {:>8}", "full", "static");
    let full = recall(&memories, &queries, &full_docs, &full_queries);
    let stat = recall(&memories, &queries, &static_docs, &static_queries);
    for (kind, (f, n)) in &full {
        println!(
            "{kind:14} {:8.3} {:8.3}   ({n} queries)",
            f / *n as f64,
            stat[kind].0 / *n as f64
        );
    }
}

/// A sequence without its `<s>` and `</s>`.
fn content(ids: &[u32]) -> Vec<u32> {
    ids[1..ids.len() - 1].to_vec()
}

/// Per kind (and "all"): the sum of each query's recall@K, and the number of queries.
fn recall(
    memories: &[(String, String)],
    queries: &[(String, String, Vec<String>)],
    docs: &[Vec<f32>],
    query_vectors: &[Vec<f32>],
) -> BTreeMap<String, (f64, usize)> {
    let mut out: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for ((_, kind, expect), q) in queries.iter().zip(query_vectors) {
        let mut ranked: Vec<(f32, &str)> = docs
            .iter()
            .zip(memories)
            .map(|(d, m)| (d.iter().zip(q).map(|(a, b)| a * b).sum(), m.0.as_str()))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top: Vec<&str> = ranked.iter().take(K).map(|r| r.1).collect();
        let r = expect.iter().filter(|e| top.contains(&e.as_str())).count() as f64
            / expect.len() as f64;
        for key in [kind.as_str(), "all"] {
            let e = out.entry(key.to_string()).or_default();
            e.0 += r;
            e.1 += 1;
        }
    }
    out
}
