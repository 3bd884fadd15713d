//! The weights file's layout, parsed and checked before anything reads a weight: the
//! header (`E5S1`, version 1, the model's shape), the tokenizer's tables (pieces, scores,
//! the normalisation map) and the tensor directory, every offset and size checked
//! against the file. Pure: it reads a byte slice and says what is wrong with it; the
//! caller words the error for a person.
//!
//! Layout, little-endian throughout:
//! - header: magic `E5S1`, u32 version, i32 hidden, layers, heads, ffn, vocab rows,
//!   positions, type vocab, f32 layer-norm epsilon, i32 quantisation block (32);
//! - tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob length; u32 offsets
//!   (pieces + 1); f32 scores (pieces); the blob of piece bytes; i32 entries and u32
//!   bytes of the normalisation map, each entry u32 code point, u8 count, u32 code
//!   points;
//! - directory: i32 entries, each u16 name length, name, u8 type (0 f32, 1 Q4_0), u32
//!   element count, u64 offset, u64 byte length.

use std::ops::Range;

/// Size of a Q4_0 block in bytes: an f16 scale and 32 four-bit weights.
pub const Q4_BLOCK_BYTES: usize = 18;
/// Weights per Q4_0 block.
pub const QK: usize = 32;

const MAGIC: &[u8; 4] = b"E5S1";
const VERSION: u32 = 1;

/// The model's shape, from the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ffn: usize,
    pub vocab_rows: usize,
    pub positions: usize,
    pub eps: f32,
}

/// The tokenizer's tables, copied out of the file.
#[derive(Debug)]
pub struct TokenizerTables {
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    /// Byte offsets of each piece in `blob` (pieces + 1).
    pub offsets: Vec<u32>,
    pub scores: Vec<f32>,
    pub blob: Vec<u8>,
    /// Sorted code points that normalisation replaces, and what each becomes.
    pub norm_from: Vec<u32>,
    pub norm_offsets: Vec<u32>,
    pub norm_to: Vec<u32>,
}

/// How a tensor's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    Q4,
}

/// One tensor of the directory: where its bytes are in the file.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: String,
    pub dtype: DType,
    pub elements: usize,
    pub bytes: Range<usize>,
}

/// The whole parsed layout.
#[derive(Debug)]
pub struct Layout {
    pub shape: Shape,
    pub tokenizer: TokenizerTables,
    pub tensors: Vec<Tensor>,
    /// The bytes of the header, tokenizer and directory: part of the model's identity.
    pub head: Range<usize>,
}

impl Layout {
    /// The tensor called `name`, checked to be of `dtype` with `elements` elements.
    pub fn tensor(&self, name: &str, dtype: DType, elements: usize) -> Result<&Tensor, String> {
        let t = self
            .tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| format!("the tensor `{name}` is missing"))?;
        if t.dtype != dtype || t.elements != elements {
            return Err(format!(
                "the tensor `{name}` is {:?} with {} elements, expected {dtype:?} with {elements}",
                t.dtype, t.elements
            ));
        }
        Ok(t)
    }
}

/// A reader over the file that refuses to read past its end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("the file ends inside the {what} (truncated?)"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    fn f32(&mut self, what: &str) -> Result<f32, String> {
        Ok(f32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    /// A count or size stored as i32, refused when negative or above `max`.
    fn count(&mut self, what: &str, max: usize) -> Result<usize, String> {
        let v = self.u32(what)? as i32;
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(|| format!("the {what} is {v}, out of range"))
    }
    /// `n` little-endian u32 values.
    fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, String> {
        let bytes = self.take(n.checked_mul(4).ok_or("overflow")?, what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
}

/// Parses and checks the layout of a weights file.
pub fn parse(bytes: &[u8]) -> Result<Layout, String> {
    let mut c = Cursor { bytes, at: 0 };
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("it is not a memdir embedding model (no `E5S1` header)".into());
    }
    c.take(4, "header")?;
    let version = c.u32("header")?;
    if version != VERSION {
        return Err(format!(
            "it is format version {version}; this memdir reads version {VERSION}"
        ));
    }
    let big = 1 << 24;
    let hidden = c.count("hidden size", 8192)?;
    let layers = c.count("layer count", 256)?;
    let heads = c.count("head count", 256)?;
    let ffn = c.count("feed-forward size", 65536)?;
    let vocab_rows = c.count("vocabulary size", big)?;
    let positions = c.count("position count", 65536)?;
    let _type_vocab = c.count("type vocabulary size", 65536)?;
    let eps = c.f32("header")?;
    let qk = c.count("quantisation block", 1024)?;
    if qk != QK
        || hidden == 0
        || layers == 0
        || heads == 0
        || hidden % heads != 0
        || hidden % QK != 0
        || ffn % QK != 0
        || positions < 3
        || !(eps.is_finite() && eps > 0.0)
    {
        return Err(format!(
            "its header describes a shape memdir cannot run (hidden {hidden}, heads {heads}, ffn {ffn}, block {qk})"
        ));
    }
    let shape = Shape {
        hidden,
        layers,
        heads,
        ffn,
        vocab_rows,
        positions,
        eps,
    };
    let tokenizer = parse_tokenizer(&mut c, vocab_rows)?;
    let tensors = parse_directory(&mut c, bytes.len())?;
    let head = 0..c.at;
    Ok(Layout {
        shape,
        tokenizer,
        tensors,
        head,
    })
}

fn parse_tokenizer(c: &mut Cursor<'_>, vocab_rows: usize) -> Result<TokenizerTables, String> {
    let pieces = c.count("piece count", vocab_rows)?;
    let mut special = [0u32; 4];
    for s in &mut special {
        *s = c.count("special token", pieces.saturating_sub(1))? as u32;
    }
    let [bos, eos, _pad, unk] = special;
    let blob_len = usize::try_from(c.u64("tokenizer")?).map_err(|_| "blob too large")?;
    let offsets = c.u32s(pieces + 1, "tokenizer's piece offsets")?;
    let scores: Vec<f32> = c
        .u32s(pieces, "tokenizer's scores")?
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let blob = c.take(blob_len, "tokenizer's pieces")?.to_vec();
    if offsets[0] != 0
        || offsets.windows(2).any(|w| w[0] > w[1])
        || offsets[pieces] as usize != blob_len
    {
        return Err("its tokenizer's piece offsets are out of order or out of bounds".into());
    }
    if scores.iter().any(|s| !s.is_finite()) {
        return Err("its tokenizer has a score that is not a number".into());
    }
    if std::str::from_utf8(&blob).is_err() {
        return Err("its tokenizer's pieces are not UTF-8".into());
    }
    let entries = c.count("normalisation map size", 1 << 21)?;
    let map_len = c.u32("normalisation map")? as usize;
    let map = c.take(map_len, "normalisation map")?;
    let mut m = Cursor { bytes: map, at: 0 };
    let mut norm_from = Vec::with_capacity(entries);
    let mut norm_offsets = Vec::with_capacity(entries + 1);
    let mut norm_to = Vec::new();
    for _ in 0..entries {
        let from = m.u32("normalisation map")?;
        let n = m.u8("normalisation map")? as usize;
        norm_offsets.push(norm_to.len() as u32);
        norm_to.extend(m.u32s(n, "normalisation map")?);
        if norm_from.last().is_some_and(|&last| last >= from) {
            return Err("its normalisation map is not sorted".into());
        }
        norm_from.push(from);
    }
    norm_offsets.push(norm_to.len() as u32);
    if m.at != map.len() || norm_to.iter().any(|&cp| char::from_u32(cp).is_none()) {
        return Err("its normalisation map is malformed".into());
    }
    Ok(TokenizerTables {
        bos,
        eos,
        unk,
        offsets,
        scores,
        blob,
        norm_from,
        norm_offsets,
        norm_to,
    })
}

fn parse_directory(c: &mut Cursor<'_>, file_len: usize) -> Result<Vec<Tensor>, String> {
    let entries = c.count("tensor count", 1 << 16)?;
    let mut tensors = Vec::with_capacity(entries);
    for _ in 0..entries {
        let name_len = c.u16("tensor directory")? as usize;
        let name = String::from_utf8(c.take(name_len, "tensor directory")?.to_vec())
            .map_err(|_| "a tensor name is not UTF-8")?;
        let dtype = match c.u8("tensor directory")? {
            0 => DType::F32,
            1 => DType::Q4,
            other => return Err(format!("the tensor `{name}` has an unknown type {other}")),
        };
        let elements = c.u32("tensor directory")? as usize;
        let offset = c.u64("tensor directory")?;
        let len = c.u64("tensor directory")?;
        let expected = match dtype {
            DType::F32 => elements * 4,
            DType::Q4 if elements.is_multiple_of(QK) => elements / QK * Q4_BLOCK_BYTES,
            DType::Q4 => return Err(format!("the tensor `{name}` is not whole Q4 blocks")),
        };
        let end = offset
            .checked_add(len)
            .and_then(|e| usize::try_from(e).ok());
        match end {
            Some(end) if len as usize == expected && end <= file_len => tensors.push(Tensor {
                name,
                dtype,
                elements,
                bytes: offset as usize..end,
            }),
            Some(end) if end > file_len => {
                return Err(format!(
                    "the tensor `{name}` ends at byte {end}, past the end of the file ({file_len} bytes; truncated?)"
                ));
            }
            _ => {
                return Err(format!(
                    "the tensor `{name}` is {len} bytes, expected {expected}"
                ));
            }
        }
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny but complete file: the given header fields, a three-piece tokenizer, one
    /// normalisation entry and one f32 tensor.
    fn file(version: u32, tensor_len: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(MAGIC);
        b.extend(version.to_le_bytes());
        for v in [64i32, 1, 2, 64, 4, 8, 2] {
            b.extend(v.to_le_bytes());
        }
        b.extend(1e-12f32.to_le_bytes());
        b.extend(32i32.to_le_bytes());
        // tokenizer: pieces <s>, </s>, <unk>
        for v in [3i32, 0, 1, 1, 2] {
            b.extend(v.to_le_bytes());
        }
        let blob = b"<s></s><unk>";
        b.extend((blob.len() as u64).to_le_bytes());
        for o in [0u32, 3, 7, 12] {
            b.extend(o.to_le_bytes());
        }
        for s in [0f32, 0.0, 0.0] {
            b.extend(s.to_le_bytes());
        }
        b.extend(blob);
        b.extend(1i32.to_le_bytes());
        b.extend(13u32.to_le_bytes());
        b.extend(0x41u32.to_le_bytes());
        b.push(2);
        b.extend(0x61u32.to_le_bytes());
        b.extend(0x62u32.to_le_bytes());
        // directory: one tensor of 4 floats right after it
        b.extend(1i32.to_le_bytes());
        b.extend(1u16.to_le_bytes());
        b.push(b'x');
        b.push(0);
        b.extend(4u32.to_le_bytes());
        let offset = b.len() as u64 + 16;
        b.extend(offset.to_le_bytes());
        b.extend(tensor_len.to_le_bytes());
        b.extend([0u8; 16]);
        b
    }

    fn check(bytes: &[u8], expect: &str) {
        match parse(bytes) {
            Ok(_) => assert_eq!("ok", expect),
            Err(e) => assert!(e.contains(expect), "{e:?} does not contain {expect:?}"),
        }
    }

    #[test]
    fn a_well_formed_file_parses() {
        let layout = parse(&file(1, 16)).unwrap();
        assert_eq!(layout.shape.hidden, 64);
        assert_eq!(layout.tokenizer.norm_to, [0x61, 0x62]);
        assert_eq!(layout.tensors[0].bytes.len(), 16);
        assert!(layout.tensor("x", DType::F32, 4).is_ok());
        assert!(layout.tensor("x", DType::Q4, 4).is_err());
        assert!(layout.tensor("y", DType::F32, 4).is_err());
    }

    #[test]
    fn damaged_files_are_refused_with_the_reason() {
        let good = file(1, 16);
        check(&good, "ok");
        check(b"", "no `E5S1` header");
        check(b"PK\x03\x04 a zip, not a model", "no `E5S1` header");
        check(&file(2, 16), "format version 2");
        check(&file(1, 12), "is 12 bytes, expected 16");
        check(&file(1, 20), "past the end of the file");
        // Cut anywhere: never a panic, always a reason.
        for cut in 0..good.len() {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = good.clone();
        huge[12..16].copy_from_slice(&(-5i32).to_le_bytes());
        check(&huge, "out of range");
    }
}
