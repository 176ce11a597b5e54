//! Recall's exact scan of a small vector index: every vector of both parts side by side in
//! memory, as usearch stores them (f16), scanned by cosine similarity to the query on as many
//! threads as a scan of its size pays for.
//!
//! Why not usearch's own exact search: it reads each vector through a metric called per vector
//! that also recomputes both norms, on one thread, and in a warm server the vectors are out of
//! the cores' caches by the time the model has embedded the query. At 10k vectors its scan was a
//! millisecond of every warm recall and add (docs/recall.md). Here the norms are computed once,
//! the query stays f32 (as [`crate::embed::cosine`] reads stored vectors for the lexical
//! candidates, so both sides of a recall score a vector alike), and the rows are split between
//! threads.

/// A scan this long is split between threads (shorter ones cost less than starting a thread).
const SPLIT_FROM: usize = 4_096;

/// Threads a scan uses at most.
const MAX_THREADS: usize = 4;

/// Vectors of `dim` f16 values, each under its key, with its norm.
pub struct Flat {
    dim: usize,
    keys: Vec<u64>,
    /// Row after row, `dim` f16 bit patterns each.
    data: Vec<u16>,
    norms: Vec<f32>,
    threads: usize,
}

impl Flat {
    /// An empty set of `dim`-dimensional vectors, scanned on up to `threads` threads.
    pub fn new(dim: usize, threads: usize) -> Flat {
        Flat { dim, keys: Vec::new(), data: Vec::new(), norms: Vec::new(), threads: threads.clamp(1, MAX_THREADS) }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Room for `more` vectors.
    pub fn reserve(&mut self, more: usize) {
        self.keys.reserve(more);
        self.norms.reserve(more);
        self.data.reserve(more * self.dim);
    }

    /// Add a vector of f16 bit patterns (as usearch stores it) under `key`.
    pub fn push(&mut self, key: u64, bits: &[u16]) {
        debug_assert_eq!(bits.len(), self.dim);
        self.keys.push(key);
        self.data.extend_from_slice(bits);
        self.norms.push(norm(bits));
    }

    /// The `limit` vectors most similar to `query` (key, cosine similarity), best first, equal
    /// scores in key order.
    pub fn search(&self, query: &[f32], limit: usize) -> Vec<(u64, f32)> {
        let n = self.len();
        if n == 0 || limit == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let qn = query_norm(query);
        let mut scores = vec![0f32; n];
        let threads = if n >= SPLIT_FROM { self.threads } else { 1 };
        let rows = n.div_ceil(threads);
        let score = |first: usize, out: &mut [f32]| {
            for (i, s) in out.iter_mut().enumerate() {
                let r = first + i;
                *s = cosine(query, qn, &self.data[r * self.dim..(r + 1) * self.dim], self.norms[r]);
            }
        };
        if threads == 1 {
            score(0, &mut scores);
        } else {
            std::thread::scope(|scope| {
                let mut chunks = scores.chunks_mut(rows).enumerate();
                // The calling thread scans the first share itself.
                let first = chunks.next();
                for (c, chunk) in chunks {
                    scope.spawn(move || score(c * rows, chunk));
                }
                if let Some((_, chunk)) = first {
                    score(0, chunk);
                }
            });
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        let better = |a: &u32, b: &u32| {
            let (a, b) = (*a as usize, *b as usize);
            scores[b].total_cmp(&scores[a]).then(self.keys[a].cmp(&self.keys[b]))
        };
        if limit < n {
            order.select_nth_unstable_by(limit, better);
            order.truncate(limit);
        }
        order.sort_unstable_by(better);
        order.into_iter().map(|i| (self.keys[i as usize], scores[i as usize])).collect()
    }
}

/// The norm of a vector of f16 bit patterns, as [`cosine`] takes it.
pub fn norm(bits: &[u16]) -> f32 {
    bits.iter().map(|&b| f16_to_f32(b)).map(|x| x * x).sum::<f32>().sqrt()
}

/// The norm of a query, as [`cosine`] takes it.
pub fn query_norm(query: &[f32]) -> f32 {
    query.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// The cosine similarity of `query` (its norm `qn`) and a row of f16 bit patterns (its norm
/// `rn`), 0 when either is zero: how every exact scan of a small index scores, laid out or not
/// (`Vectors::search_best`).
pub fn cosine(query: &[f32], qn: f32, row: &[u16], rn: f32) -> f32 {
    let norms = qn * rn;
    if norms > 0.0 {
        dot(query, row) / norms
    } else {
        0.0
    }
}

/// Dot product of an f32 query with a row of f16 bit patterns.
fn dot(query: &[f32], row: &[u16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c")
        {
            // SAFETY: the CPU has the features `dot_f16c` is compiled for (checked just above).
            return unsafe { dot_f16c(query, row) };
        }
    }
    query.iter().zip(row).map(|(q, &h)| q * f16_to_f32(h)).sum()
}

/// [`dot`] with x86's f16 conversion instructions, 16 values a step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn dot_f16c(query: &[f32], row: &[u16]) -> f32 {
    use std::arch::x86_64::*;
    let n = query.len().min(row.len());
    let (mut a, mut b) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n, within both slices; the loads are unaligned loads.
        unsafe {
            let h0 = _mm_loadu_si128(row.as_ptr().add(i).cast::<__m128i>());
            let h1 = _mm_loadu_si128(row.as_ptr().add(i + 8).cast::<__m128i>());
            a = _mm256_fmadd_ps(_mm256_cvtph_ps(h0), _mm256_loadu_ps(query.as_ptr().add(i)), a);
            b = _mm256_fmadd_ps(_mm256_cvtph_ps(h1), _mm256_loadu_ps(query.as_ptr().add(i + 8)), b);
        }
        i += 16;
    }
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 f32, what an unaligned 256-bit store writes.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(a, b)) };
    let tail: f32 = query[i..n].iter().zip(&row[i..n]).map(|(q, &h)| q * f16_to_f32(h)).sum();
    lanes.iter().sum::<f32>() + tail
}

/// An IEEE half-precision bit pattern as f32 (exact: every f16 is an f32).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = (u32::from(h) & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let frac = u32::from(h) & 0x3ff;
    let bits = match exp {
        0 if frac == 0 => sign,
        // Subnormal: the value is frac × 2^-24.
        0 => {
            let magnitude = frac as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        0x1f => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((u32::from(exp) + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 to f16 by rounding to nearest, for the tests (normal values only).
    fn to_f16(x: f32) -> u16 {
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
        if x == 0.0 || exp <= 0 {
            return sign;
        }
        let frac = bits & 0x7f_ffff;
        let mut h = u32::from(sign) | ((exp as u32) << 10) | (frac >> 13);
        if frac & 0x1fff > 0x1000 || (frac & 0x1fff == 0x1000 && h & 1 == 1) {
            h += 1;
        }
        h as u16
    }

    #[test]
    fn half_precision_values_read_exactly() {
        for (h, x) in [(0x3c00u16, 1.0f32), (0xc000, -2.0), (0x3555, 0.333_251_95), (0x0000, 0.0), (0x7bff, 65504.0)] {
            assert_eq!(f16_to_f32(h), x, "{h:#06x}");
        }
        assert_eq!(f16_to_f32(0x0001), f32::powi(2.0, -24), "the smallest subnormal");
        assert_eq!(f16_to_f32(0x8001), -f32::powi(2.0, -24));
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        crate::embed::normalize(&mut v);
        v
    }

    #[test]
    fn the_scan_ranks_as_cosine_does_on_every_thread_count() {
        // Past the split, so that the threads share the rows, and a dimension with a tail.
        let dim = 36;
        for threads in [1, 2, 3] {
            let mut flat = Flat::new(dim, threads);
            let rows: Vec<Vec<f32>> = (0..SPLIT_FROM as u64 + 77).map(|k| unit(k, dim)).collect();
            for (k, r) in rows.iter().enumerate() {
                let bits: Vec<u16> = r.iter().map(|&x| to_f16(x)).collect();
                flat.push(k as u64 * 3, &bits);
            }
            let query: Vec<f32> = unit(999_999, dim).iter().map(|x| x * 4.0).collect();
            let found = flat.search(&query, 10);
            // The same ten by cosine over the stored (f16) values, computed plainly.
            let mut expected: Vec<(u64, f32)> = rows
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    let stored: Vec<f32> = r.iter().map(|&x| f16_to_f32(to_f16(x))).collect();
                    (k as u64 * 3, crate::embed::cosine(&query, &stored))
                })
                .collect();
            expected.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            expected.truncate(10);
            assert_eq!(found.len(), 10);
            for (f, e) in found.iter().zip(&expected) {
                assert_eq!(f.0, e.0, "{threads} threads: {found:?} against {expected:?}");
                assert!((f.1 - e.1).abs() < 1e-5, "{threads} threads: {} against {}", f.1, e.1);
            }
            assert!(found.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
            // Asking for more than there are gives every vector, once.
            assert_eq!(flat.search(&query, usize::MAX).len(), rows.len());
        }
    }

    #[test]
    fn equal_scores_come_in_key_order_and_a_zero_vector_scores_zero() {
        let mut flat = Flat::new(4, 1);
        let one = [to_f16(1.0), 0, 0, 0];
        for key in [9, 4, 7] {
            flat.push(key, &one);
        }
        flat.push(1, &[0, 0, 0, 0]);
        let found = flat.search(&[2.0, 0.0, 0.0, 0.0], 4);
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), vec![4, 7, 9, 1]);
        assert_eq!(found[3].1, 0.0);
        assert!(flat.search(&[1.0, 0.0], 4).is_empty(), "a query of another dimension finds nothing");
        assert!(Flat::new(4, 1).search(&[1.0; 4], 3).is_empty());
    }
}
