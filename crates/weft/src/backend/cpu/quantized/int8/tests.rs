//! The int8 kernels at every level this CPU reaches: exact against a
//! scalar integer reference of the scheme, and within the bound that
//! rounding `x` to int8 allows of the float product.

use super::super::Row;
use super::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[-1, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1_000_000.0 - 1.0
    }
}

/// A test case: `m` rows of `x` against `n` weight rows of `k` codes.
struct Case {
    bits: u32,
    gs: usize,
    m: usize,
    k: usize,
    n: usize,
    x: Vec<f32>,
    words: Vec<u32>,
    s: Vec<f32>,
    b: Vec<f32>,
}

impl Case {
    fn new(rng: &mut Rng, bits: u32, gs: usize, m: usize, k: usize, n: usize) -> Case {
        // Blocks of very different sizes, an all-zero block, exact ties.
        let x = (0..m * k)
            .map(|j| {
                let blk = j / BLOCK;
                match blk % 5 {
                    0 => rng.unit(),
                    1 => rng.unit() * 100.0,
                    2 if blk % 10 == 2 => 0.0,
                    2 => rng.unit() * 1e-3,
                    3 => (rng.next() % 9) as f32 - 4.0,
                    _ => rng.unit() * 7.5,
                }
            })
            .collect();
        let words = (0..n * k * bits as usize / 32).map(|_| rng.next() as u32).collect();
        let groups = n * k / gs;
        let s = (0..groups).map(|_| (rng.next() % 1000) as f32 / 3000.0 + 0.001).collect();
        let b = (0..groups).map(|_| rng.unit() * 2.0).collect();
        Case { bits, gs, m, k, n, x, words, s, b }
    }

    fn code(&self, r: usize, j: usize) -> u32 {
        let bit = (r * self.k + j) * self.bits as usize;
        (self.words[bit / 32] >> (bit % 32)) & ((1 << self.bits) - 1)
    }

    fn ng(&self) -> usize {
        self.k / self.gs
    }

    /// Weight `j` of row `r`, dequantized in float64.
    fn w(&self, r: usize, j: usize) -> f64 {
        let g = r * self.ng() + j / self.gs;
        self.s[g] as f64 * self.code(r, j) as f64 + self.b[g] as f64
    }

    fn rows_words(&self, r: usize, count: usize) -> &[u32] {
        let per = self.k * self.bits as usize / 32;
        &self.words[r * per..(r + count) * per]
    }

    /// The scheme for row `i` of `x` and weight row `r`, written from its
    /// definition with logical element indices and scalar integers.
    fn reference(&self, i: usize, r: usize, s: &[f32], b: &[f32]) -> f32 {
        let (k, ng, nb) = (self.k, self.ng(), self.k / 32);
        let x = &self.x[i * k..(i + 1) * k];
        let mut xs = vec![0f32; ng];
        // Per block: its d and codes of x.
        let mut blocks = Vec::new();
        for blk in 0..nb {
            let xb = &x[blk * 32..(blk + 1) * 32];
            let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let q: Vec<i32> = xb.iter().map(|&v| if d == 0.0 { 0 } else { (v / d).round() as i32 }).collect();
            assert!(q.iter().all(|v| v.abs() <= 127));
            let g = blk * 32 / self.gs;
            xs[g] = (q.iter().sum::<i32>() as f32).mul_add(d, xs[g]);
            blocks.push((d, q));
        }
        // Lane `l` of a step: (block, its first element, element count).
        let lanes: Vec<[(usize, usize, usize); 8]> = if self.bits == 4 {
            (0..nb.div_ceil(2)).map(|j| std::array::from_fn(|l| (2 * j + l / 4, 8 * (l % 4), 8))).collect()
        } else {
            (0..nb).map(|blk| std::array::from_fn(|l| (blk, 4 * l, 4))).collect()
        };
        let mut a = [0f32; 8];
        for step in &lanes {
            for (l, &(blk, e0, len)) in step.iter().enumerate() {
                let (lane, c) = if blk < nb {
                    let (d, q) = &blocks[blk];
                    let lane: i32 = (e0..e0 + len).map(|e| self.code(r, blk * 32 + e) as i32 * q[e]).sum();
                    (lane, s[r * ng + blk * 32 / self.gs] * d)
                } else {
                    // The padding block of an odd 4-bit block count.
                    (0, 0.0)
                };
                a[l] = (lane as f32).mul_add(c, a[l]);
            }
        }
        let mut bsum = [0f32; 8];
        for g in 0..ng {
            bsum[g % 8] = b[r * ng + g].mul_add(xs[g], bsum[g % 8]);
        }
        let tree = |t: [f32; 8]| ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
        tree(a) + tree(bsum)
    }

    /// `y` (`[m, n]`) through the threaded driver at `level`, with scales
    /// and biases of type `S`.
    fn run<S: Element + Sync>(&self, level: Level, s: &[S], b: &[S]) -> Vec<f32> {
        let p = Prepared::new(self.bits, self.gs, &self.x, self.m, self.k).expect("the int8 kernels apply");
        let ng = self.ng();
        let mut y = vec![0f32; self.m * self.n];
        let rows = |r: usize, count: usize| Row { words: self.rows_words(r, count), s: &s[r * ng..(r + count) * ng], b: &b[r * ng..(r + count) * ng] };
        qmv(level, &p, self.n, rows, &mut y);
        y
    }
}

fn levels() -> Vec<Level> {
    let l: Vec<Level> = [Level::Portable, Level::Avx2, Level::Vnni].into_iter().filter(|l| l.available()).collect();
    eprintln!("int8 levels on this CPU: {l:?} (best {:?})", Level::best());
    l
}

/// Shapes: every group size, block counts odd and even (an odd 4-bit
/// count pairs the last block with padding), rows 1 to 9
/// (each of the 8/4/2/1-row kernels, alone and after another), and enough
/// weight rows (`n`) for several parallel tasks (whole and partial ones).
fn shapes() -> Vec<(u32, usize, usize, usize, usize)> {
    let mut v = Vec::new();
    for bits in [4u32, 8] {
        for gs in [32usize, 64, 128] {
            for (m, groups, n) in [(1, 1, 3), (1, 3, 40), (1, 2, 19), (2, 5, 17), (3, 2, 5), (5, 7, 9), (8, 3, 33), (9, 9, 4)] {
                v.push((bits, gs, m, gs * groups, n));
            }
        }
    }
    v
}

#[test]
fn every_level_matches_the_scalar_integer_reference_exactly() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let levels = levels();
    for (bits, gs, m, k, n) in shapes() {
        let c = Case::new(&mut rng, bits, gs, m, k, n);
        let sh: Vec<f16> = c.s.iter().map(|&v| f16::from_f32(v)).collect();
        let bh: Vec<f16> = c.b.iter().map(|&v| f16::from_f32(v)).collect();
        let (s16, b16): (Vec<f32>, Vec<f32>) = (sh.iter().map(|h| h.to_f32()).collect(), bh.iter().map(|h| h.to_f32()).collect());
        for &level in &levels {
            for (scales, y) in [("f32", c.run(level, &c.s, &c.b)), ("f16", c.run(level, &sh, &bh))] {
                let (s, b) = if scales == "f32" { (&c.s, &c.b) } else { (&s16, &b16) };
                for i in 0..m {
                    for r in 0..n {
                        let want = c.reference(i, r, s, b);
                        let got = y[i * n + r];
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "{level:?} {scales} scales, bits {bits} gs {gs} m {m} k {k} n {n}, x row {i} w row {r}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn int8_product_is_within_the_rounding_bound_of_the_float_product() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let level = Level::best();
    for (bits, gs, m, k, n) in shapes() {
        let c = Case::new(&mut rng, bits, gs, m, k, n);
        let y = c.run(level, &c.s, &c.b);
        for i in 0..m {
            let x = &c.x[i * k..(i + 1) * k];
            for r in 0..n {
                // |x̂ - x| <= d / 2 per element, so the products differ by
                // at most sum over blocks of d / 2 * sum |ŵ|; float
                // rounding adds a little relative to sum |ŵ x|.
                let (mut want, mut bound, mut mag) = (0f64, 0f64, 0f64);
                for blk in 0..k / 32 {
                    let amax = x[blk * 32..(blk + 1) * 32].iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
                    let mut wsum = 0f64;
                    for j in blk * 32..(blk + 1) * 32 {
                        let w = c.w(r, j);
                        want += w * x[j] as f64;
                        wsum += w.abs();
                        mag += (w * x[j] as f64).abs();
                    }
                    bound += amax / 127.0 / 2.0 * wsum;
                }
                let tol = bound * (1.0 + 1e-4) + 1e-5 * mag + 1e-6;
                let got = y[i * n + r] as f64;
                assert!((got - want).abs() <= tol, "bits {bits} gs {gs} m {m} k {k} row {i}/{r}: {got} vs float {want} (bound {tol})");
            }
        }
    }
}

#[test]
fn rounded_rows_keep_each_block_within_half_a_step() {
    // 70 = two whole blocks and a short one of 6.
    let mut rng = Rng(7);
    let k = 70;
    let x: Vec<f32> = (0..3 * k).map(|j| rng.unit() * (1 + j % 13) as f32).collect();
    let xr = round_rows(&x, k);
    for (row, rrow) in x.chunks(k).zip(xr.chunks(k)) {
        for (xb, rb) in row.chunks(BLOCK).zip(rrow.chunks(BLOCK)) {
            let d = xb.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
            for (&a, &b) in xb.iter().zip(rb) {
                assert!((a - b).abs() <= d / 2.0 * 1.0001, "{a} rounded to {b} (step {d})");
                // b is q * d rounded to float32: b / d is q within a few ulps.
                let q = b / d;
                assert!((q - q.round()).abs() <= 1e-5 * q.abs().max(1.0), "{b} is not a multiple of {d}");
            }
        }
    }
}

#[test]
fn nan_in_a_block_makes_the_products_nan_and_zeros_stay_zero() {
    let mut rng = Rng(11);
    let mut c = Case::new(&mut rng, 4, 32, 2, 64, 3);
    c.x[5] = f32::NAN;
    c.x[64..].fill(0.0);
    for level in levels() {
        let y = c.run(level, &c.s, &c.b);
        assert!(y[..3].iter().all(|v| v.is_nan()), "{level:?}: {y:?}");
        assert!(y[3..].iter().all(|&v| v == 0.0), "{level:?}: {y:?}");
    }
    assert!(round_rows(&c.x, 64)[..32].iter().all(|v| v.is_nan()));
}

#[test]
fn declines_what_it_cannot_run() {
    let x = vec![0f32; 128];
    assert!(Prepared::new(3, 32, &x, 1, 128).is_none());
    assert!(Prepared::new(4, 64, &x[..96], 1, 96).is_none());
    assert!(Prepared::new(8, 64, &x, 2, 64).is_some());
    assert!(!applies(2, 64) && applies(4, 128) && applies(8, 32));
}
