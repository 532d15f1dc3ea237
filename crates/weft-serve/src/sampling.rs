//! Choosing each sequence's next token from its logits: repetition,
//! presence and frequency penalties, then greedy (temperature 0) or
//! temperature with top-k, top-p and min-p, from a seeded generator; and
//! the log probabilities `logprobs` reports.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// The sampling fields of a request, checked (`api.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingParams {
    /// 0 is greedy.
    pub temperature: f32,
    pub top_p: f32,
    /// 0 keeps every token.
    pub top_k: usize,
    pub min_p: f32,
    pub presence: f32,
    pub frequency: f32,
    /// 1 is none; above 1 makes tokens already in the prompt or output less likely.
    pub repetition: f32,
    pub seed: Option<u64>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams { temperature: 0.0, top_p: 1.0, top_k: 0, min_p: 0.0, presence: 0.0, frequency: 0.0, repetition: 1.0, seed: None }
    }
}

/// The chosen token and, when asked, its log probability and the most
/// likely alternatives (under the penalized logits, before temperature).
#[derive(Clone, Debug, PartialEq)]
pub struct Picked {
    pub token: u32,
    pub logprob: f32,
    pub top: Vec<(u32, f32)>,
}

/// One sequence's sampler: its parameters, generator and token counts.
pub struct TokenSampler {
    params: SamplingParams,
    state: u64,
    /// Generated tokens and how often (presence and frequency penalties).
    counts: HashMap<u32, u32>,
    /// Tokens of the prompt (the repetition penalty reads these too).
    prompt: Vec<u32>,
}

/// Seeds for requests without one: distinct per sequence in the process.
static NEXT_SEED: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);

impl TokenSampler {
    /// `choice` makes the `n` choices of one seeded request differ (and
    /// each repeat across runs).
    pub fn new(params: SamplingParams, prompt: &[u32], choice: usize) -> TokenSampler {
        let seed = match params.seed {
            Some(s) => s.wrapping_add(choice as u64),
            None => {
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
                t ^ NEXT_SEED.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            }
        };
        let prompt = if params.repetition != 1.0 { prompt.to_vec() } else { vec![] };
        TokenSampler { params, state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1, counts: HashMap::new(), prompt }
    }

    /// A uniform number in [0, 1) (xorshift64*).
    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn penalize(&self, logits: &mut [f32]) {
        let p = &self.params;
        if p.repetition != 1.0 {
            let mut seen: Vec<u32> = self.prompt.iter().chain(self.counts.keys()).copied().collect();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                if let Some(x) = logits.get_mut(t as usize) {
                    *x = if *x > 0.0 { *x / p.repetition } else { *x * p.repetition };
                }
            }
        }
        if p.presence != 0.0 || p.frequency != 0.0 {
            for (&t, &c) in &self.counts {
                if let Some(x) = logits.get_mut(t as usize) {
                    *x -= p.presence + p.frequency * c as f32;
                }
            }
        }
    }

    /// Picks the next token from `logits` (changed in place by the
    /// penalties); `top` alternatives are reported when `Some`.
    pub fn pick(&mut self, logits: &mut [f32], top: Option<usize>) -> Picked {
        self.penalize(logits);
        let token = if self.params.temperature <= 0.0 || self.params.top_k == 1 {
            argmax(logits)
        } else {
            self.sample(logits)
        };
        *self.counts.entry(token).or_insert(0) += 1;
        let (logprob, top) = match top {
            None => (0.0, vec![]),
            Some(k) => {
                let lse = log_sum_exp(logits);
                let top = top_indices(logits, k).into_iter().map(|i| (i, logits[i as usize] - lse)).collect();
                (logits[token as usize] - lse, top)
            }
        };
        Picked { token, logprob, top }
    }

    fn sample(&mut self, logits: &[f32]) -> u32 {
        let p = &self.params;
        let max = logits[argmax(logits) as usize];
        // Candidates: every token, or the top k.
        let mut cand: Vec<(u32, f64)> = if p.top_k > 0 && p.top_k < logits.len() {
            top_indices(logits, p.top_k).into_iter().map(|i| (i, 0.0)).collect()
        } else {
            (0..logits.len() as u32).map(|i| (i, 0.0)).collect()
        };
        let mut total = 0.0;
        for c in cand.iter_mut() {
            c.1 = (((logits[c.0 as usize] - max) / p.temperature) as f64).exp();
            total += c.1;
        }
        if p.min_p > 0.0 {
            // The largest weight is exp(0) = 1 (the argmax survives any top k).
            let floor = p.min_p as f64;
            cand.retain(|c| c.1 >= floor);
            total = cand.iter().map(|c| c.1).sum();
        }
        if p.top_p < 1.0 {
            // The nucleus: sort only as many of the largest as it needs.
            let want = p.top_p as f64 * total;
            let mut k = 64.min(cand.len());
            loop {
                if k < cand.len() {
                    cand.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
                }
                cand[..k].sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
                let mut mass = 0.0;
                let kept = cand[..k].iter().position(|c| {
                    mass += c.1;
                    mass >= want
                });
                if let Some(i) = kept {
                    cand.truncate(i + 1);
                    break;
                }
                if k == cand.len() {
                    break;
                }
                k = (k * 4).min(cand.len());
            }
            total = cand.iter().map(|c| c.1).sum();
        }
        let mut r = self.uniform() * total;
        for c in &cand {
            r -= c.1;
            if r < 0.0 {
                return c.0;
            }
        }
        cand.last().map_or_else(|| argmax(logits), |c| c.0)
    }
}

pub fn argmax(v: &[f32]) -> u32 {
    v.iter().enumerate().fold((0, f32::NEG_INFINITY), |best, (i, &x)| if x > best.1 { (i, x) } else { best }).0 as u32
}

fn log_sum_exp(v: &[f32]) -> f32 {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    max + v.iter().map(|&x| ((x - max) as f64).exp()).sum::<f64>().ln() as f32
}

/// The indices of the `k` largest values, largest first.
fn top_indices(v: &[f32], k: usize) -> Vec<u32> {
    let k = k.min(v.len());
    let mut idx: Vec<u32> = (0..v.len() as u32).collect();
    if k == 0 {
        return vec![];
    }
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, |&a, &b| v[b as usize].total_cmp(&v[a as usize]));
        idx.truncate(k);
    }
    idx.sort_unstable_by(|&a, &b| v[b as usize].total_cmp(&v[a as usize]));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(f: impl FnOnce(&mut SamplingParams)) -> SamplingParams {
        let mut p = SamplingParams { temperature: 1.0, seed: Some(3), ..Default::default() };
        f(&mut p);
        p
    }

    fn counts(p: SamplingParams, logits: &[f32], draws: usize) -> Vec<usize> {
        let mut c = vec![0; logits.len()];
        for i in 0..draws {
            // A fresh sampler each draw: no penalties accumulate.
            let mut s = TokenSampler::new(p.clone(), &[], i);
            c[s.pick(&mut logits.to_vec(), None).token as usize] += 1;
        }
        c
    }

    #[test]
    fn greedy_and_logprobs() {
        let mut s = TokenSampler::new(SamplingParams::default(), &[], 0);
        let p = s.pick(&mut vec![0.0, 2.0, 1.0], Some(2));
        assert_eq!(p.token, 1);
        let lse = (1f32 + 2f32.exp() + 1f32.exp()).ln();
        assert!((p.logprob - (2.0 - lse)).abs() < 1e-5, "{p:?}");
        assert_eq!(p.top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn top_k_top_p_and_min_p_cut_the_tail() {
        let logits = [3.0f32, 2.0, 1.0, 0.0, -1.0];
        let c = counts(params(|p| p.top_k = 2), &logits, 2000);
        assert!(c[2] + c[3] + c[4] == 0 && c[0] > 0 && c[1] > 0, "top_k {c:?}");
        // Probabilities ~ [.64, .24, .09, .03, .01]: top_p 0.8 keeps two.
        let c = counts(params(|p| p.top_p = 0.8), &logits, 2000);
        assert!(c[2] + c[3] + c[4] == 0 && c[1] > 0, "top_p {c:?}");
        // min_p 0.2 keeps weights >= 0.2 * the largest: e^-1 = 0.37 stays, e^-2 goes.
        let c = counts(params(|p| p.min_p = 0.2), &logits, 2000);
        assert!(c[2] + c[3] + c[4] == 0 && c[1] > 0, "min_p {c:?}");
    }

    #[test]
    fn a_seed_repeats_and_penalties_steer() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32 * 0.3).collect();
        let run = |seed| {
            let mut s = TokenSampler::new(params(|p| p.seed = Some(seed)), &[], 0);
            (0..20).map(|_| s.pick(&mut logits.clone(), None).token).collect::<Vec<_>>()
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
        // Greedy with a frequency penalty does not repeat the argmax forever.
        let mut s = TokenSampler::new(SamplingParams { frequency: 2.0, ..Default::default() }, &[], 0);
        let toks: Vec<u32> = (0..3).map(|_| s.pick(&mut vec![1.0, 0.5, 0.0], None).token).collect();
        assert_eq!(toks, vec![0, 1, 2]);
        // The repetition penalty reads the prompt.
        let mut s = TokenSampler::new(SamplingParams { repetition: 4.0, ..Default::default() }, &[0], 0);
        assert_eq!(s.pick(&mut vec![1.0, 0.5], None).token, 1);
    }
}
