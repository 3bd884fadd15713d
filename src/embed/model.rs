//! The forward pass of the encoder (BERT layout, XLM-RoBERTa weights): token, position
//! and type embeddings, layer norm; per layer self-attention (12 heads) and a GELU
//! feed-forward block, each added back and layer-normed; then the mean of the last
//! hidden states over the text's tokens. Several texts run as one batch: their tokens
//! are rows of one matrix, so each weight is unpacked once per batch, and attention stays
//! inside each text. The 4-bit weights are read where the file lies; only the small f32
//! tensors (biases, norms, positions) are copied out at load.

use std::ops::Range;

use super::format::{DType, Layout, Q4_BLOCK_BYTES, QK};
use super::kernels::{self, Kernel, Quantized};

/// A Q4 matrix in the file and its f32 bias.
struct Linear {
    weights: Range<usize>,
    bias: Vec<f32>,
    rows: usize,
    cols: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    ffn_in: Linear,
    ffn_out: Linear,
    output_norm: Norm,
}

/// The weights: where the 4-bit ones are in the file, and the f32 ones.
pub struct Weights {
    hidden: usize,
    heads: usize,
    ffn: usize,
    eps: f32,
    positions: usize,
    word: Range<usize>,
    vocab_rows: usize,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

impl Weights {
    /// Finds every tensor the forward pass needs, checked for type and size.
    pub fn new(bytes: &[u8], layout: &Layout) -> Result<Weights, String> {
        let s = &layout.shape;
        let h = s.hidden;
        let f32s = |name: &str, n: usize| -> Result<Vec<f32>, String> {
            Ok(floats(
                &bytes[layout.tensor(name, DType::F32, n)?.bytes.clone()],
            ))
        };
        let linear = |name: &str, rows: usize, cols: usize| -> Result<Linear, String> {
            Ok(Linear {
                weights: layout
                    .tensor(&format!("{name}.w"), DType::Q4, rows * cols)?
                    .bytes
                    .clone(),
                bias: f32s(&format!("{name}.b"), rows)?,
                rows,
                cols,
            })
        };
        let norm = |name: &str| -> Result<Norm, String> {
            Ok(Norm {
                weight: f32s(&format!("{name}.w"), h)?,
                bias: f32s(&format!("{name}.b"), h)?,
            })
        };
        let layers = (0..s.layers)
            .map(|l| {
                Ok(Layer {
                    query: linear(&format!("l{l}.q"), h, h)?,
                    key: linear(&format!("l{l}.k"), h, h)?,
                    value: linear(&format!("l{l}.v"), h, h)?,
                    attention_out: linear(&format!("l{l}.ao"), h, h)?,
                    attention_norm: norm(&format!("l{l}.aln"))?,
                    ffn_in: linear(&format!("l{l}.fi"), s.ffn, h)?,
                    ffn_out: linear(&format!("l{l}.fo"), h, s.ffn)?,
                    output_norm: norm(&format!("l{l}.oln"))?,
                })
            })
            .collect::<Result<_, String>>()?;
        let type_vocab = layout
            .tensors
            .iter()
            .find(|t| t.name == "emb.type")
            .map_or(0, |t| t.elements);
        if type_vocab < h {
            return Err("the tensor `emb.type` is missing or too small".into());
        }
        Ok(Weights {
            hidden: h,
            heads: s.heads,
            ffn: s.ffn,
            eps: s.eps,
            positions: s.positions,
            word: layout
                .tensor("emb.word", DType::Q4, s.vocab_rows * h)?
                .bytes
                .clone(),
            vocab_rows: s.vocab_rows,
            position: f32s("emb.pos", s.positions * h)?,
            token_type: f32s("emb.type", type_vocab)?[..h].to_vec(),
            embedding_norm: norm("emb.ln")?,
            layers,
        })
    }

    pub fn hidden(&self) -> usize {
        self.hidden
    }

    pub fn positions(&self) -> usize {
        self.positions
    }

    pub fn vocab_rows(&self) -> usize {
        self.vocab_rows
    }

    /// The mean of the last hidden states of each sequence (token ids, specials
    /// included, each no longer than [`Weights::positions`]), not normalised. Matrix
    /// products are split over `threads` threads.
    pub fn forward(
        &self,
        file: &[u8],
        kernel: Kernel,
        sequences: &[Vec<u32>],
        threads: usize,
    ) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let tokens: usize = sequences.iter().map(Vec::len).sum();
        let mut segments = Vec::with_capacity(sequences.len());
        let mut x = vec![0f32; tokens * h];
        let row_bytes = h / QK * Q4_BLOCK_BYTES;
        let word = &file[self.word.clone()];
        let mut t = 0;
        for seq in sequences {
            segments.push(t..t + seq.len());
            for (p, &id) in seq.iter().enumerate() {
                let row = &mut x[t * h..][..h];
                kernels::dequantize_row(&word[id as usize * row_bytes..][..row_bytes], row);
                let pos = &self.position[p * h..][..h];
                for ((v, p), ty) in row.iter_mut().zip(pos).zip(&self.token_type) {
                    *v += p + ty;
                }
                t += 1;
            }
        }
        layer_norm(&mut x, None, &self.embedding_norm, h, self.eps);

        let mut scratch = Scratch {
            kernel,
            threads,
            file,
            quantized: Quantized::default(),
        };
        let mut q = vec![0f32; tokens * h];
        let mut k = vec![0f32; tokens * h];
        let mut v = vec![0f32; tokens * h];
        let mut context = vec![0f32; tokens * h];
        let mut projected = vec![0f32; tokens * h];
        let mut mid = vec![0f32; tokens * self.ffn];
        for layer in &self.layers {
            scratch.quantized.fill(&x, h);
            scratch.linear(&layer.query, &mut q);
            scratch.linear(&layer.key, &mut k);
            scratch.linear(&layer.value, &mut v);
            for seg in &segments {
                self.attention(&q, &k, &v, seg.clone(), &mut context);
            }
            scratch.quantized.fill(&context, h);
            scratch.linear(&layer.attention_out, &mut projected);
            layer_norm(&mut x, Some(&projected), &layer.attention_norm, h, self.eps);

            scratch.quantized.fill(&x, h);
            scratch.linear(&layer.ffn_in, &mut mid);
            mid.iter_mut().for_each(|m| *m = gelu(*m));
            scratch.quantized.fill(&mid, self.ffn);
            scratch.linear(&layer.ffn_out, &mut projected);
            layer_norm(&mut x, Some(&projected), &layer.output_norm, h, self.eps);
        }

        segments
            .iter()
            .map(|seg| {
                let mut mean = vec![0f32; h];
                for t in seg.clone() {
                    mean.iter_mut()
                        .zip(&x[t * h..][..h])
                        .for_each(|(m, v)| *m += v);
                }
                let n = seg.len().max(1) as f32;
                mean.iter_mut().for_each(|m| *m /= n);
                mean
            })
            .collect()
    }

    /// Scaled dot-product attention of the tokens `seg` among themselves, per head.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32], seg: Range<usize>, out: &mut [f32]) {
        let h = self.hidden;
        let hd = h / self.heads;
        let scale = 1.0 / (hd as f32).sqrt();
        let mut weights = vec![0f32; seg.len()];
        for t in seg.clone() {
            for head in 0..self.heads {
                let cols = head * hd..(head + 1) * hd;
                let qh = &q[t * h..][cols.clone()];
                let mut max = f32::NEG_INFINITY;
                for (w, s) in weights.iter_mut().zip(seg.clone()) {
                    let kh = &k[s * h..][cols.clone()];
                    *w = qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f32>() * scale;
                    max = max.max(*w);
                }
                let mut sum = 0f32;
                for w in &mut weights {
                    *w = (*w - max).exp();
                    sum += *w;
                }
                let o = &mut out[t * h..][cols.clone()];
                o.fill(0.0);
                for (w, s) in weights.iter().zip(seg.clone()) {
                    let p = w / sum;
                    let vh = &v[s * h..][cols.clone()];
                    o.iter_mut().zip(vh).for_each(|(o, v)| *o += p * v);
                }
            }
        }
    }
}

/// What the matrix products of one forward pass share.
struct Scratch<'a> {
    kernel: Kernel,
    threads: usize,
    file: &'a [u8],
    quantized: Quantized,
}

impl Scratch<'_> {
    /// `out = quantized . W^T + b`, the weight rows split over the threads.
    fn linear(&self, lin: &Linear, out: &mut [f32]) {
        debug_assert_eq!(self.quantized.values.len() % lin.cols, 0);
        let weights = &self.file[lin.weights.clone()];
        let x = &self.quantized;
        if self.threads <= 1 {
            kernels::matmul(self.kernel, weights, &lin.bias, x, 0..lin.rows, out);
            return;
        }
        // Ranges of rows, in multiples of 8, one per thread.
        let per = lin.rows.div_ceil(self.threads).next_multiple_of(8);
        let ranges: Vec<Range<usize>> = (0..lin.rows)
            .step_by(per)
            .map(|s| s..(s + per).min(lin.rows))
            .collect();
        let parts: Vec<Vec<f32>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranges[1..]
                .iter()
                .map(|r| {
                    let r = r.clone();
                    scope.spawn(move || part(self.kernel, weights, lin, x, r))
                })
                .collect();
            let mut parts = vec![part(self.kernel, weights, lin, x, ranges[0].clone())];
            parts.extend(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("matmul thread")),
            );
            parts
        });
        let tokens = out.len() / lin.rows;
        for (r, p) in ranges.iter().zip(&parts) {
            for t in 0..tokens {
                out[t * lin.rows + r.start..t * lin.rows + r.end]
                    .copy_from_slice(&p[t * r.len()..(t + 1) * r.len()]);
            }
        }
    }
}

/// The products of the weight rows `rows` for every token, one row of `rows.len()` each.
fn part(kernel: Kernel, w: &[u8], lin: &Linear, x: &Quantized, rows: Range<usize>) -> Vec<f32> {
    let tokens = x.values.len() / lin.cols;
    let mut out = vec![0f32; tokens * rows.len()];
    kernels::matmul(kernel, w, &lin.bias, x, rows, &mut out);
    out
}

/// `x = LayerNorm(x + y)` per row of `width` (`x = LayerNorm(x)` without `y`).
fn layer_norm(x: &mut [f32], y: Option<&[f32]>, norm: &Norm, width: usize, eps: f32) {
    for (t, row) in x.chunks_exact_mut(width).enumerate() {
        if let Some(y) = y {
            row.iter_mut()
                .zip(&y[t * width..][..width])
                .for_each(|(r, y)| *r += y);
        }
        let mean = row.iter().sum::<f32>() / width as f32;
        let var = row.iter().map(|r| (r - mean) * (r - mean)).sum::<f32>() / width as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((r, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *r = (*r - mean) * inv * w + b;
        }
    }
}

/// GELU, the exact (erf) form.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function, to about 1e-7 (Abramowitz and Stegun 7.1.26), in f64 inside.
fn erf(x: f32) -> f32 {
    let x = f64::from(x);
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    (if x < 0.0 { -y } else { y }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_close_to_known_values() {
        for (x, e) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-1.0, -0.842_700_8),
            (2.0, 0.995_322_3),
            (4.0, 0.999_999_98),
        ] {
            assert!((erf(x) - e).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }
}
