//! The arithmetic the forward pass spends its time in: a matrix of 4-bit weights (Q4_0
//! blocks: an f16 scale and 32 four-bit values stored as value + 8) times activations
//! quantised to 8 bits per block of 32 (Q8: an f32 scale and 32 signed bytes). Each
//! output is the sum over blocks of `scale_w * scale_a * (<w, a> - 8 * sum(a))`, in
//! integers inside a block. Two kernels compute it: AVX2 + FMA (x86-64, chosen at run
//! time when the CPU has them) and a portable scalar one (every other CPU, and every
//! CPU under `--features portable`). Not the model: no layer knows about tokens.

use super::format::{Q4_BLOCK_BYTES, QK};

/// Which dot-product kernel the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Plain Rust, for every CPU.
    Scalar,
    /// AVX2 and FMA, for x86-64 CPUs that have them.
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs (the scalar one under `--features portable`).
    pub fn detect() -> Kernel {
        #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }
}

/// IEEE half precision to single.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        // Subnormal: the value is man * 2^-24, exact in f32.
        (0, _) => return sign_of(h) * man as f32 / 16_777_216.0,
        (31, _) => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

fn sign_of(h: u16) -> f32 {
    if h & 0x8000 != 0 { -1.0 } else { 1.0 }
}

/// One Q4 block's scale.
fn block_scale(block: &[u8]) -> f32 {
    f16_to_f32(u16::from_le_bytes([block[0], block[1]]))
}

/// Writes a row of `out.len()` weights (a multiple of 32) as f32.
pub fn dequantize_row(row: &[u8], out: &mut [f32]) {
    for (block, out) in row
        .chunks_exact(Q4_BLOCK_BYTES)
        .zip(out.chunks_exact_mut(QK))
    {
        let d = block_scale(block);
        for (j, &byte) in block[2..].iter().enumerate() {
            out[j] = (f32::from(byte & 0x0f) - 8.0) * d;
            out[j + QK / 2] = (f32::from(byte >> 4) - 8.0) * d;
        }
    }
}

/// Activations quantised per block of 32: the values, each block's scale and sum.
#[derive(Default)]
pub struct Quantized {
    pub values: Vec<i8>,
    pub scales: Vec<f32>,
    pub sums: Vec<i32>,
    width: usize,
}

impl Quantized {
    /// Quantises `rows` (row-major, `width` columns) into `self`, reusing its buffers.
    pub fn fill(&mut self, rows: &[f32], width: usize) {
        self.width = width;
        self.values.clear();
        self.scales.clear();
        self.sums.clear();
        for block in rows.chunks_exact(QK) {
            let max = block.iter().fold(0f32, |m, v| m.max(v.abs()));
            let scale = max / 127.0;
            let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            let mut sum = 0i32;
            for &v in block {
                let q = (v * inverse).round_ties_even().clamp(-128.0, 127.0) as i8;
                sum += i32::from(q);
                self.values.push(q);
            }
            self.scales.push(scale);
            self.sums.push(sum);
        }
    }

    fn rows(&self) -> usize {
        self.values.len() / self.width.max(1)
    }
}

/// Rows of output computed together, so each activation block is loaded once for all.
const ROW_GROUP: usize = 8;

/// `out[t][r - rows.start] = bias[r] + W[r] . x[t]` for the weight rows `rows` of the
/// Q4 matrix `weights` (row-major, `x.width` columns). `out` is row-major, one row of
/// `rows.len()` per token.
pub fn matmul(
    kernel: Kernel,
    weights: &[u8],
    bias: &[f32],
    x: &Quantized,
    rows: std::ops::Range<usize>,
    out: &mut [f32],
) {
    let width = x.width;
    let blocks = width / QK;
    let row_bytes = blocks * Q4_BLOCK_BYTES;
    let tokens = x.rows();
    let n = rows.len();
    // The weights of a group of rows unpacked to one byte each (0..=15), and scales.
    let mut unpacked = vec![0u8; ROW_GROUP * width];
    let mut scales = vec![0f32; ROW_GROUP * blocks];
    let mut group_start = rows.start;
    while group_start < rows.end {
        let group = (rows.end - group_start).min(ROW_GROUP);
        for g in 0..group {
            let row = &weights[(group_start + g) * row_bytes..][..row_bytes];
            for (b, block) in row.chunks_exact(Q4_BLOCK_BYTES).enumerate() {
                scales[g * blocks + b] = block_scale(block);
                let dst = &mut unpacked[g * width + b * QK..][..QK];
                for (j, &byte) in block[2..].iter().enumerate() {
                    dst[j] = byte & 0x0f;
                    dst[j + QK / 2] = byte >> 4;
                }
            }
        }
        for t in 0..tokens {
            let a = &x.values[t * width..][..width];
            let a_scales = &x.scales[t * blocks..][..blocks];
            let a_sums = &x.sums[t * blocks..][..blocks];
            for g in 0..group {
                let w = &unpacked[g * width..][..width];
                let w_scales = &scales[g * blocks..][..blocks];
                let dot = match kernel {
                    #[cfg(target_arch = "x86_64")]
                    Kernel::Avx2 => {
                        // SAFETY: `Kernel::Avx2` is only chosen by `Kernel::detect`, after
                        // the CPU reported AVX2 and FMA.
                        unsafe { avx2::dot(w, w_scales, a, a_scales, a_sums) }
                    }
                    _ => dot_scalar(w, w_scales, a, a_scales, a_sums),
                };
                let r = group_start + g;
                out[t * n + (r - rows.start)] = bias[r] + dot;
            }
        }
        group_start += group;
    }
}

fn dot_scalar(w: &[u8], w_scales: &[f32], a: &[i8], a_scales: &[f32], a_sums: &[i32]) -> f32 {
    let mut acc = 0f32;
    for (b, (wb, ab)) in w.chunks_exact(QK).zip(a.chunks_exact(QK)).enumerate() {
        let isum: i32 = wb
            .iter()
            .zip(ab)
            .map(|(&w, &a)| i32::from(w) * i32::from(a))
            .sum();
        acc += w_scales[b] * a_scales[b] * (isum - 8 * a_sums[b]) as f32;
    }
    acc
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::QK;
    use std::arch::x86_64::*;

    /// The scalar kernel's sum, with 32 byte products per instruction.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA. The slices must hold whole blocks, alike.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(
        w: &[u8],
        w_scales: &[f32],
        a: &[i8],
        a_scales: &[f32],
        a_sums: &[i32],
    ) -> f32 {
        let blocks = w.len() / QK;
        assert!(a.len() >= blocks * QK && w_scales.len() >= blocks && a_scales.len() >= blocks);
        let ones = _mm256_set1_epi16(1);
        let mut acc = _mm256_setzero_ps();
        let mut correction = 0f32;
        for b in 0..blocks {
            // SAFETY: both reads are 32 bytes inside the slices (asserted above).
            let (wv, av) = unsafe {
                (
                    _mm256_loadu_si256(w.as_ptr().add(b * QK).cast()),
                    _mm256_loadu_si256(a.as_ptr().add(b * QK).cast()),
                )
            };
            // Unsigned weights (0..=15) times signed activations, summed in pairs
            // (at most 2 * 15 * 128: no saturation), then in fours as i32.
            let products = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, av), ones);
            let scale = w_scales[b] * a_scales[b];
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products), _mm256_set1_ps(scale), acc);
            correction += scale * a_sums[b] as f32;
        }
        let half = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
        let one = _mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1));
        _mm_cvtss_f32(one) - 8.0 * correction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One Q4 block with scale 0.5 and weights -8..=7, then 8..=-7 mirrored.
    fn block() -> Vec<u8> {
        let mut b = 0x3800u16.to_le_bytes().to_vec(); // 0.5 in f16
        for j in 0..16u8 {
            b.push(j | ((15 - j) << 4));
        }
        b
    }

    #[test]
    fn half_precision_converts_exactly() {
        for (h, f) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x3800, 0.5),
            (0x0000, 0.0),
            (0x7bff, 65504.0),
            (0x0001, 5.960_464_5e-8),
            (0x8001, -5.960_464_5e-8),
        ] {
            assert_eq!(f16_to_f32(h), f, "{h:#06x}");
        }
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn dequantizes_low_nibbles_first() {
        let mut out = [0f32; 32];
        dequantize_row(&block(), &mut out);
        assert_eq!(out[0], -4.0); // (0 - 8) * 0.5
        assert_eq!(out[15], 3.5); // (15 - 8) * 0.5
        assert_eq!(out[16], 3.5); // high nibble of byte 0 is 15
        assert_eq!(out[31], -4.0);
    }

    #[test]
    fn kernels_agree_with_the_dequantized_product() {
        // Two rows of two blocks; three tokens of seeded activations.
        let weights: Vec<u8> = [block(), block(), block(), block()].concat();
        let mut seed = 7u32;
        let x: Vec<f32> = (0..3 * 64)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (seed >> 16) as f32 / 65536.0 * 4.0 - 2.0
            })
            .collect();
        let mut q = Quantized::default();
        q.fill(&x, 64);
        let bias = [0.25f32, -1.0];
        let mut w = [0f32; 64];
        dequantize_row(&weights[..36], &mut w);
        for kernel in [Kernel::Scalar, Kernel::detect()] {
            let mut out = [0f32; 6];
            matmul(kernel, &weights, &bias, &q, 0..2, &mut out);
            for t in 0..3 {
                // The product over the activations as quantised: what both kernels compute.
                let x_q: Vec<f32> = (0..64)
                    .map(|i| f32::from(q.values[t * 64 + i]) * q.scales[t * 2 + i / 32])
                    .collect();
                let exact: f32 = w.iter().zip(&x_q).map(|(a, b)| a * b).sum();
                let float: f32 = w.iter().zip(&x[t * 64..][..64]).map(|(a, b)| a * b).sum();
                for r in 0..2 {
                    let got = out[t * 2 + r] - bias[r];
                    assert!(
                        (got - exact).abs() < 1e-4,
                        "{kernel:?} t{t} r{r}: {got} vs {exact}"
                    );
                    // 8-bit activations: a few percent of a term at most.
                    assert!(
                        (got - float).abs() < 0.25,
                        "{kernel:?} t{t} r{r}: {got} vs {float}"
                    );
                }
            }
        }
    }
}
