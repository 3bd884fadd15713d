//! The generated corpus the search benchmarks measure (included with `#[path]`; not an
//! example of its own): a deterministic (seeded xorshift, no external crate) tree of
//! Markdown files in `area-XX/topic-YY/note-NNNNNN.md` (100 per folder), ~4 KB mean
//! (200 B–20 KB), mostly English from a Zipf-distributed vocabulary, with Russian,
//! Chinese, Japanese and Korean lines, YAML frontmatter on some files, and planted words
//! whose presence is recorded per file; and the query kinds asked of it, each with what a
//! plain reading of the text says it should find.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

/// Files per folder.
pub const PER_FOLDER: usize = 100;
/// Areas (top-level folders); topics fill up below them.
pub const AREAS: usize = 10;

/// xorshift64*, seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Roughly standard normal (Irwin–Hall of 12 uniforms).
    pub fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.unit()).sum::<f64>() - 6.0
    }
}

/// Words drawn with probability ∝ 1 / rank^s.
pub struct Zipf {
    words: Vec<&'static str>,
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(list: &'static str, s: f64) -> Zipf {
        let mut seen = HashSet::new();
        let words: Vec<&'static str> = list
            .split_whitespace()
            .filter(|w| seen.insert(*w))
            .collect();
        let mut acc = 0.0;
        let cdf = (0..words.len())
            .map(|r| {
                acc += 1.0 / ((r + 1) as f64).powf(s);
                acc
            })
            .collect();
        Zipf { words, cdf }
    }

    pub fn pick(&self, rng: &mut Rng) -> &'static str {
        let u = rng.unit() * self.cdf[self.cdf.len() - 1];
        let i = self.cdf.partition_point(|&c| c < u);
        self.words[i.min(self.words.len() - 1)]
    }
}

/// Planted words: never in the vocabularies, so their files are known.
pub const COMMON: &str = "note";
pub const RARE: &str = "compaction";
pub const PAIR: [&str; 2] = ["deploy", "rollback"];
pub const PHRASE: [&str; 2] = ["crash", "safe"];

/// Vocabularies, most frequent first, whitespace-separated.
pub const EN: &str = "\
    the of and to a in is it that for on with as was be by this are or at from have an \
    not but which they you we can were all one there their been if more when will would \
    who so no out up into has do what about time other some could them these than then \
    its only new two may first any like now my over such our also most after just made \
    where me many through should very because those well each even between must how own \
    same under while last here might great both being still high never us day use work \
    part life long down world year people good state system case group place fact number \
    way thing end hand order line form few course power point data file index search \
    query store memory cache server client agent tool task plan test build error value \
    type list path word text page result event model user code change report process \
    function module version config issue review design batch stream lock queue thread \
    table column record field buffer socket token parser schema backup folder entry \
    session context summary meeting project team release branch commit merge feature bug \
    fix patch latency throughput disk network request response handler worker job retry \
    timeout limit budget metric alert dashboard log trace span cluster node shard replica \
    leader follower vote term snapshot segment offset cursor iterator vector map set tree \
    graph edge weight score rank filter prefix suffix pattern regex unicode encoding \
    format json yaml markdown header footer title body link image table chart customer \
    invoice payment order product price discount shipping warehouse supplier contract \
    deadline milestone roadmap priority owner reviewer approval decision tradeoff risk \
    mitigation incident outage postmortem runbook oncall pager monday tuesday friday \
    morning evening week month quarter always often sometimes rarely quickly slowly \
    carefully again later soon today tomorrow yesterday remember prefer avoid check \
    verify update remove add keep move rename open close read write send receive start \
    stop run wait fail pass green red blue small large fast slow old young simple hard \
    easy clear broken stable flaky";

pub const RU: &str = "\
    и в не на что это как для память данные файл поиск индекс сервер запрос ответ работа \
    система время памяти проект задача вопрос ошибка результат версия команда модель \
    клиент хранилище заметка код база таблица строка процесс пользователь агент решение \
    тест сборка изменение список папка путь текст слово день год новый старый большой \
    быстрый медленный важный нужно можно если когда потом всегда очень после перед ещё \
    всё надо проверить обновить сохранить удалить кэш журнал";

/// Chinese words (none starts with 据, so `数据库` is only ever found as a substring).
pub const ZH: &str = "\
    我们 系统 数据 用户 服务器 数据库 搜索 索引 文件 内存 查询 结果 问题 需要 可以 已经 \
    因为 所以 但是 如果 性能 测试 版本 配置 缓存 记忆 项目 团队 发布 错误 修复 功能 模块 \
    接口 存储 备份 日志 线程 进程 网络 安全 时间 今天 明天 会议 计划 完成 开始 重要 简单 \
    复杂 库存 数字 数据中心 分布式 人工智能";

pub const JA_NOUNS: &str = "\
    メモリ データ サーバー ファイル 検索 インデックス キャッシュ テスト バージョン \
    プロジェクト 設定 問題 結果 今日 会議 データベース ユーザー エラー ログ";

pub const JA_PARTICLES: &str = "を は の に で が と も";

pub const JA_VERBS: &str = "使う 確認する 保存した 更新します 読み込む";

pub const KO_NOUNS: &str = "\
    데이터베이스 메모리 서버 파일 검색 인덱스 사용자 프로젝트 오늘 회의 결과 문제 캐시 \
    테스트 버전 설정";

pub const KO_PARTICLES: &str = "를 을 에 에서 가 이 는 은 의 도 로";

pub const KO_VERBS: &str = "사용합니다 저장했습니다 확인하세요 업데이트한다 읽습니다";

pub const TAGS: &[&str] = &["rust", "ops", "search", "infra", "people", "billing", "ml"];
pub const KINDS: &[&str] = &["project", "reference", "feedback", "user"];

pub struct Vocab {
    en: Zipf,
    ru: Zipf,
    zh: Zipf,
    ja: Zipf,
    ko: Zipf,
    ja_particles: Vec<&'static str>,
    ja_verbs: Vec<&'static str>,
    ko_particles: Vec<&'static str>,
    ko_verbs: Vec<&'static str>,
}

impl Vocab {
    pub fn new() -> Vocab {
        for w in [COMMON, RARE, PAIR[0], PAIR[1], PHRASE[0], PHRASE[1]] {
            assert!(
                !EN.split_whitespace().any(|x| x == w),
                "planted word {w} is in the vocabulary"
            );
        }
        Vocab {
            en: Zipf::new(EN, 1.0),
            ru: Zipf::new(RU, 0.9),
            zh: Zipf::new(ZH, 0.9),
            ja: Zipf::new(JA_NOUNS, 0.9),
            ko: Zipf::new(KO_NOUNS, 0.9),
            ja_particles: JA_PARTICLES.split_whitespace().collect(),
            ja_verbs: JA_VERBS.split_whitespace().collect(),
            ko_particles: KO_PARTICLES.split_whitespace().collect(),
            ko_verbs: KO_VERBS.split_whitespace().collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Corpus

/// Lines written per language: en, ru, zh, ja, ko.
#[derive(Default, Debug)]
pub struct LineCounts(pub [u64; 5]);

/// The words a line must carry, each placed strictly inside it (never first or last, so
/// two planted lines can never form a phrase across a line break).
pub fn en_line(rng: &mut Rng, v: &Vocab, plant: &[&str]) -> String {
    let n = rng.range(6, 16);
    let mut words: Vec<&str> = (0..n).map(|_| v.en.pick(rng)).collect();
    if !plant.is_empty() {
        let at = rng.range(1, words.len() - 1);
        for (k, w) in plant.iter().enumerate() {
            words.insert(at + k, w);
        }
    }
    let mut line = String::new();
    match rng.below(20) {
        0 => line.push_str("## "),
        1..=3 => line.push_str("- "),
        _ => {}
    }
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        if i == 0 {
            capitalise(&mut line, w);
        } else {
            line.push_str(w);
        }
    }
    line.push('.');
    line
}

pub fn capitalise(out: &mut String, w: &str) {
    let mut chars = w.chars();
    if let Some(c) = chars.next() {
        out.extend(c.to_uppercase());
        out.push_str(chars.as_str());
    }
}

pub fn ru_line(rng: &mut Rng, v: &Vocab) -> String {
    let n = rng.range(5, 12);
    let mut line = String::new();
    for i in 0..n {
        let w = v.ru.pick(rng);
        if i > 0 {
            line.push(' ');
        }
        match rng.below(10) {
            _ if i == 0 => capitalise(&mut line, w),
            0 => line.push_str(&w.to_uppercase()),
            1 | 2 => capitalise(&mut line, w),
            _ => line.push_str(w),
        }
    }
    line.push('.');
    line
}

pub fn zh_line(rng: &mut Rng, v: &Vocab) -> String {
    let n = rng.range(4, 12);
    let mut line = String::new();
    for i in 0..n {
        if i > 0 && rng.chance(0.15) {
            line.push('，');
        }
        line.push_str(v.zh.pick(rng));
    }
    line.push('。');
    line
}

pub fn ja_line(rng: &mut Rng, v: &Vocab) -> String {
    let mut line = String::new();
    for _ in 0..rng.range(2, 5) {
        line.push_str(v.ja.pick(rng));
        line.push_str(pick(rng, &v.ja_particles));
    }
    line.push_str(pick(rng, &v.ja_verbs));
    line.push('。');
    line
}

pub fn pick(rng: &mut Rng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len())]
}

pub fn ko_line(rng: &mut Rng, v: &Vocab) -> String {
    let mut line = String::new();
    for _ in 0..rng.range(3, 7) {
        line.push_str(v.ko.pick(rng));
        line.push_str(pick(rng, &v.ko_particles));
        line.push(' ');
    }
    line.push_str(pick(rng, &v.ko_verbs));
    line.push('.');
    line
}

/// Body lines of about `target` bytes; 30% of files mix in other languages.
pub fn body(rng: &mut Rng, v: &Vocab, target: usize, counts: &mut LineCounts) -> Vec<String> {
    let mixed = rng.chance(0.30);
    let mut lines = Vec::new();
    let mut bytes = 0;
    while bytes < target {
        let (lang, line) = if !mixed {
            (0, en_line(rng, v, &[]))
        } else {
            match rng.unit() {
                u if u < 0.27 => (1, ru_line(rng, v)),
                u if u < 0.47 => (2, zh_line(rng, v)),
                u if u < 0.57 => (3, ja_line(rng, v)),
                u if u < 0.67 => (4, ko_line(rng, v)),
                _ => (0, en_line(rng, v, &[])),
            }
        };
        counts.0[lang] += 1;
        bytes += line.len() + 1;
        lines.push(line);
        if rng.chance(0.15) {
            lines.push(String::new());
            bytes += 1;
        }
    }
    lines
}

/// One corpus file: its relative path and text.
pub fn document(i: usize, seed: u64, v: &Vocab, counts: &mut LineCounts) -> (String, String) {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let folder = i / PER_FOLDER;
    let rel = format!(
        "area-{:02}/topic-{:02}/note-{i:06}.md",
        folder % AREAS,
        folder / AREAS
    );
    // Log-normal size: median ~3.1 KB, mean ~4 KB, clipped to 200 B..20 KB.
    let target = ((3100f64).ln() + 0.7 * rng.normal())
        .exp()
        .clamp(200.0, 20_000.0) as usize;
    let mut text = String::with_capacity(target + 512);
    if rng.chance(0.3) {
        let _ = write!(
            text,
            "---\ndescription: {}\ntype: {}\ntags: [{}, {}]\n---\n",
            en_line(&mut rng, v, &[]).trim_start_matches(['#', '-', ' ']),
            KINDS[rng.below(KINDS.len())],
            TAGS[rng.below(TAGS.len())],
            TAGS[rng.below(TAGS.len())],
        );
    }
    let has_common = rng.chance(0.92);
    let mut title = String::new();
    for _ in 0..3 {
        title.push(' ');
        title.push_str(v.en.pick(&mut rng));
    }
    if has_common {
        let _ = writeln!(text, "# Note {i}:{title}\n");
    } else {
        let _ = writeln!(text, "# Memory {i}:{title}\n");
    }
    let mut lines = body(&mut rng, v, target.saturating_sub(text.len()), counts);
    let mut plant = |rng: &mut Rng, words: &[&str]| {
        let line = en_line(rng, v, words);
        let at = rng.below(lines.len() + 1);
        lines.insert(at, line);
        counts.0[0] += 1;
    };
    if has_common {
        for _ in 0..rng.below(4) {
            plant(&mut rng, &[COMMON]);
        }
    }
    if rng.chance(0.03) {
        plant(&mut rng, &[RARE]);
    }
    for w in PAIR {
        if rng.chance(0.08) {
            plant(&mut rng, &[w]);
        }
    }
    if rng.chance(0.02) {
        plant(&mut rng, &PHRASE);
    }
    for w in PHRASE {
        if rng.chance(0.03) {
            plant(&mut rng, &[w]);
        }
    }
    for l in lines {
        text.push_str(&l);
        text.push('\n');
    }
    (rel, text)
}

/// What a plain reading of the text says a query should find.
#[derive(Clone, Copy, Debug)]
pub enum Oracle {
    /// Whole words, any case (ё as е): every word, or any (when the engine relaxed).
    Words(&'static [&'static str]),
    /// Two adjacent whole words.
    Phrase(&'static str, &'static str),
    /// A plain substring.
    Substring(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct QuerySpec {
    pub kind: &'static str,
    pub query: &'static str,
    /// Scope, as the agent passes it, and as a store-relative prefix.
    pub path: Option<(&'static str, &'static str)>,
    pub oracle: Oracle,
    /// The needle for `rg -i -l -F`, where one literal says the same.
    pub rg: Option<&'static str>,
    pub common: bool,
}

pub const QUERIES: &[QuerySpec] = &[
    QuerySpec {
        kind: "one word",
        query: RARE,
        path: None,
        oracle: Oracle::Words(&[RARE]),
        rg: Some(RARE),
        common: false,
    },
    QuerySpec {
        kind: "two words",
        query: "deploy rollback",
        path: None,
        oracle: Oracle::Words(&PAIR),
        rg: None,
        common: false,
    },
    QuerySpec {
        kind: "phrase",
        query: "\"crash safe\"",
        path: None,
        oracle: Oracle::Phrase(PHRASE[0], PHRASE[1]),
        rg: None,
        common: false,
    },
    QuerySpec {
        kind: "chinese 数据库",
        query: "数据库",
        path: None,
        oracle: Oracle::Substring("数据库"),
        rg: Some("数据库"),
        common: false,
    },
    QuerySpec {
        kind: "russian Память",
        query: "Память",
        path: None,
        oracle: Oracle::Words(&["память"]),
        rg: Some("память"),
        common: false,
    },
    QuerySpec {
        kind: "japanese メモリ",
        query: "メモリ",
        path: None,
        oracle: Oracle::Substring("メモリ"),
        rg: Some("メモリ"),
        common: false,
    },
    QuerySpec {
        kind: "korean 데이터베이스",
        query: "데이터베이스",
        path: None,
        oracle: Oracle::Substring("데이터베이스"),
        rg: Some("데이터베이스"),
        common: false,
    },
    QuerySpec {
        kind: "common (>=90%)",
        query: COMMON,
        path: None,
        oracle: Oracle::Words(&[COMMON]),
        rg: Some(COMMON),
        common: true,
    },
    QuerySpec {
        kind: "path-filtered",
        query: "deploy",
        path: Some(("/memories/area-03/", "area-03/")),
        oracle: Oracle::Words(&["deploy"]),
        rg: None,
        common: false,
    },
];

/// Per query: files meeting every clause, and files meeting any.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expected {
    pub all: usize,
    pub any: usize,
}

/// Whole words of `text` as the tokenizer cuts non-CJK text (CJK runs stay whole here,
/// and never equal a Latin or Cyrillic needle).
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

pub fn same_word(w: &str, lower: &str) -> bool {
    w.len() == lower.len() && (w == lower || w.to_lowercase().replace('ё', "е") == lower)
}

pub fn oracle(spec: &QuerySpec, rel: &str, text: &str) -> (bool, bool) {
    if let Some((_, prefix)) = spec.path
        && !rel.starts_with(prefix)
    {
        return (false, false);
    }
    match spec.oracle {
        Oracle::Words(needles) => {
            let mut found = vec![false; needles.len()];
            for w in words(text) {
                for (f, n) in found.iter_mut().zip(needles) {
                    *f |= same_word(w, n);
                }
            }
            (found.iter().all(|&f| f), found.iter().any(|&f| f))
        }
        Oracle::Phrase(a, b) => {
            let mut prev = false;
            let mut hit = false;
            for w in words(text) {
                hit |= prev && same_word(w, b);
                prev = same_word(w, a);
            }
            (hit, hit)
        }
        Oracle::Substring(s) => {
            let hit = text.contains(s);
            (hit, hit)
        }
    }
}

pub struct Corpus {
    pub files: usize,
    pub bytes: u64,
    pub min: usize,
    pub max: usize,
    pub frontmatter: usize,
    pub lines: LineCounts,
    pub expected: Vec<Expected>,
    pub rels: Vec<String>,
}

pub fn generate(store: &Path, n: usize, seed: u64, v: &Vocab) -> anyhow::Result<Corpus> {
    let mut c = Corpus {
        files: n,
        bytes: 0,
        min: usize::MAX,
        max: 0,
        frontmatter: 0,
        lines: LineCounts::default(),
        expected: vec![Expected::default(); QUERIES.len()],
        rels: Vec::with_capacity(n),
    };
    let mut made = HashSet::new();
    for i in 0..n {
        let (rel, text) = document(i, seed, v, &mut c.lines);
        let host = store.join(&rel);
        if let Some(parent) = host.parent()
            && made.insert(parent.to_owned())
        {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&host, &text).with_context(|| format!("writing {}", host.display()))?;
        c.bytes += text.len() as u64;
        c.min = c.min.min(text.len());
        c.max = c.max.max(text.len());
        c.frontmatter += usize::from(text.starts_with("---\n"));
        for (e, spec) in c.expected.iter_mut().zip(QUERIES) {
            let (all, any) = oracle(spec, &rel, &text);
            e.all += usize::from(all);
            e.any += usize::from(any);
        }
        c.rels.push(rel);
    }
    Ok(c)
}
