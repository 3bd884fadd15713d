//! The model's tokenizer: XLM-RoBERTa's SentencePiece unigram model. Text is normalised
//! code point by code point (the file's map), runs of spaces become one, a word-start
//! marker (U+2581) replaces each space and starts the text, and the most probable split
//! into known pieces is found by Viterbi over the pieces' log-probabilities; a character
//! no piece covers becomes `<unk>`. Not the search tokenizer (`crate::search::tokenize`).

use super::format::TokenizerTables;

/// SentencePiece's word-start marker.
const WORD_START: char = '\u{2581}';
/// Score of a character no piece covers, below every piece's (as SentencePiece does).
const UNKNOWN_PENALTY: f32 = 10.0;

/// The tokenizer, built once from the file's tables.
pub struct Tokenizer {
    tables: TokenizerTables,
    /// Open-addressing table from a piece's bytes to its id + 1 (0: empty slot).
    slots: Vec<u32>,
    unknown_score: f32,
    longest_piece: usize,
}

impl Tokenizer {
    pub fn new(tables: TokenizerTables) -> Tokenizer {
        let pieces = tables.scores.len();
        let slots_len = (pieces * 2).next_power_of_two().max(16);
        let mut slots = vec![0u32; slots_len];
        let mut longest_piece = 1;
        let mut lowest = 0f32;
        for id in 0..pieces {
            let piece = piece(&tables, id);
            longest_piece = longest_piece.max(piece.len());
            lowest = lowest.min(tables.scores[id]);
            if piece.is_empty() {
                continue;
            }
            let mut at = hash(piece) & (slots_len - 1);
            while slots[at] != 0 {
                at = (at + 1) & (slots_len - 1);
            }
            slots[at] = id as u32 + 1;
        }
        Tokenizer {
            unknown_score: lowest - UNKNOWN_PENALTY,
            tables,
            slots,
            longest_piece,
        }
    }

    pub fn bos(&self) -> u32 {
        self.tables.bos
    }

    pub fn eos(&self) -> u32 {
        self.tables.eos
    }

    /// The id of the piece spelt `bytes`, if any.
    fn lookup(&self, bytes: &[u8]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = hash(bytes) & mask;
        loop {
            let id = self.slots[at].checked_sub(1)?;
            if piece(&self.tables, id as usize) == bytes {
                return Some(id);
            }
            at = (at + 1) & mask;
        }
    }

    /// The text after normalisation, with word-start markers, as UTF-8.
    fn normalise(&self, text: &str) -> String {
        let t = &self.tables;
        let mut out = String::with_capacity(text.len() + 3);
        let mut last_space = false;
        let mut push = |c: char, out: &mut String| {
            let space = c == ' ';
            if space && last_space {
                return;
            }
            if out.is_empty() && !space {
                out.push(WORD_START);
            }
            out.push(if space { WORD_START } else { c });
            last_space = space;
        };
        for c in text.chars() {
            match t.norm_from.binary_search(&(c as u32)) {
                Err(_) => push(c, &mut out),
                Ok(i) => {
                    let to = t.norm_offsets[i] as usize..t.norm_offsets[i + 1] as usize;
                    for &cp in &t.norm_to[to] {
                        // Checked at load: every target is a char.
                        push(
                            char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER),
                            &mut out,
                        );
                    }
                }
            }
        }
        if out.is_empty() {
            out.push(WORD_START);
        }
        out
    }

    /// The ids of `text`'s pieces, without the special tokens, at most `max` of them
    /// (the first ones).
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let normal = self.normalise(text);
        let bytes = normal.as_bytes();
        // Character boundaries: pieces start and end on them.
        let mut starts: Vec<usize> = normal.char_indices().map(|(i, _)| i).collect();
        starts.push(bytes.len());
        let chars = starts.len() - 1;
        // best[e]: the best score of a split of the first e characters, and its last
        // piece (`None`: an unknown character) and where that piece starts.
        let mut best = vec![f32::NEG_INFINITY; chars + 1];
        let mut back: Vec<(Option<u32>, usize)> = vec![(None, 0); chars + 1];
        best[0] = 0.0;
        for i in 0..chars {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            let from = starts[i];
            for e in i + 1..=chars {
                let span = &bytes[from..starts[e]];
                if span.len() > self.longest_piece {
                    break;
                }
                if let Some(id) = self.lookup(span).filter(|&id| id != self.tables.unk) {
                    let score = best[i] + self.tables.scores[id as usize];
                    if score > best[e] {
                        best[e] = score;
                        back[e] = (Some(id), i);
                    }
                }
            }
            let score = best[i] + self.unknown_score;
            if score > best[i + 1] {
                best[i + 1] = score;
                back[i + 1] = (None, i);
            }
        }
        let mut ids = Vec::new();
        let mut e = chars;
        while e > 0 {
            let (id, from) = back[e];
            ids.push(id.unwrap_or(self.tables.unk));
            e = from;
        }
        ids.reverse();
        ids.truncate(max);
        ids
    }
}

fn piece(t: &TokenizerTables, id: usize) -> &[u8] {
    &t.blob[t.offsets[id] as usize..t.offsets[id + 1] as usize]
}

/// FNV-1a: short keys, no adversary (the keys are the file's pieces).
fn hash(bytes: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy vocabulary: ids 0..3 are <s>, <pad>, </s>, <unk>, then these pieces.
    fn toy() -> Tokenizer {
        let pieces: &[(&str, f32)] = &[
            ("<s>", 0.0),
            ("<pad>", 0.0),
            ("</s>", 0.0),
            ("<unk>", 0.0),
            ("▁", -4.0),
            ("▁hello", -5.0),
            ("▁hel", -3.0),
            ("lo", -3.0),
            ("▁world", -6.0),
            ("w", -7.0),
            ("o", -7.0),
            ("r", -7.0),
            ("l", -7.0),
            ("d", -7.0),
            ("▁привет", -6.0),
        ];
        let mut blob = Vec::new();
        let mut offsets = vec![0u32];
        for (p, _) in pieces {
            blob.extend(p.as_bytes());
            offsets.push(blob.len() as u32);
        }
        Tokenizer::new(TokenizerTables {
            bos: 0,
            eos: 2,
            unk: 3,
            offsets,
            scores: pieces.iter().map(|p| p.1).collect(),
            blob,
            // 'A' -> "a"... no: 'H' -> 'h', and U+00A0 (no-break space) -> ' '.
            norm_from: vec![0x48, 0xA0],
            norm_offsets: vec![0, 1, 2],
            norm_to: vec![0x68, 0x20],
        })
    }

    fn check(text: &str, expect: &[u32]) {
        assert_eq!(toy().encode(text, 512), expect, "{text:?}");
    }

    #[test]
    fn splits_into_the_most_probable_pieces() {
        // "▁hel" + "lo" (-6) beats "▁hello" (-5)? No: -5 > -6, so the whole word wins.
        check("hello", &[5]);
        check("hello world", &[5, 8]);
        // Runs of spaces are one; normalisation maps H to h and U+00A0 to a space.
        check("Hello \u{A0}  world", &[5, 8]);
        check("привет", &[14]);
        // A character no piece covers is <unk>, one per character.
        check("hello xy", &[5, 4, 3, 3]);
        check("", &[4]);
        check(" hello", &[5]);
    }

    #[test]
    fn keeps_the_first_tokens() {
        assert_eq!(toy().encode("hello world hello", 2), [5, 8]);
    }
}
