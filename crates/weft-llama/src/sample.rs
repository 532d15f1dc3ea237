//! Choosing the next token from logits: greedy, or temperature with
//! nucleus (top-p) sampling.

use weft::{Array, Error, Result};

/// How the next token is picked.
#[derive(Clone, Debug)]
pub struct Sampler {
    /// 0 means greedy (argmax).
    pub temperature: f32,
    /// Sample from the smallest set of tokens whose probabilities add up
    /// to at least `top_p` (1 keeps every token).
    pub top_p: f32,
    state: u64,
}

impl Sampler {
    pub fn greedy() -> Sampler {
        Sampler { temperature: 0.0, top_p: 1.0, state: 1 }
    }

    pub fn new(temperature: f32, top_p: f32, seed: u64) -> Sampler {
        Sampler { temperature, top_p, state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1 }
    }

    /// A uniform number in [0, 1) (xorshift64*).
    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next token for `logits` `[vocab]` (float32).
    pub fn sample(&mut self, logits: &Array) -> Result<u32> {
        if self.temperature <= 0.0 && logits.size() > 0 {
            // Greedy: the first maximum (as `sample_slice`), computed where
            // the logits are; one index comes back to the host.
            return Ok(weft::ops::argmax(logits, None, false)?.to_vec::<u32>()?[0]);
        }
        let v = logits.to_vec::<f32>()?;
        self.sample_slice(&v)
    }

    pub fn sample_slice(&mut self, logits: &[f32]) -> Result<u32> {
        if logits.is_empty() {
            return Err(Error::InvalidArgument("no logits to sample from".into()));
        }
        let argmax = logits
            .iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (i, &x)| if x > best.1 { (i, x) } else { best })
            .0 as u32;
        if self.temperature <= 0.0 {
            return Ok(argmax);
        }
        let max = logits[argmax as usize];
        let mut probs: Vec<(u32, f64)> = logits
            .iter()
            .enumerate()
            .map(|(i, &x)| (i as u32, (((x - max) / self.temperature) as f64).exp()))
            .collect();
        let total: f64 = probs.iter().map(|p| p.1).sum();
        probs.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        let mut kept = 0;
        let mut mass = 0.0;
        for p in &probs {
            kept += 1;
            mass += p.1 / total;
            if mass >= self.top_p as f64 {
                break;
            }
        }
        let probs = &probs[..kept];
        let kept_total: f64 = probs.iter().map(|p| p.1).sum();
        let mut r = self.uniform() * kept_total;
        for p in probs {
            r -= p.1;
            if r < 0.0 {
                return Ok(p.0);
            }
        }
        Ok(probs[kept - 1].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_argmax() {
        assert_eq!(Sampler::greedy().sample_slice(&[0.1, 3.0, -1.0, 2.9]).unwrap(), 1);
    }

    #[test]
    fn top_p_keeps_the_nucleus() {
        // Probabilities ~ [0.64, 0.24, 0.09, 0.03]: top_p 0.8 keeps tokens 0 and 1.
        let logits = [3.0f32, 2.0, 1.0, 0.0];
        let mut s = Sampler::new(1.0, 0.8, 7);
        let mut counts = [0usize; 4];
        for _ in 0..4000 {
            counts[s.sample_slice(&logits).unwrap() as usize] += 1;
        }
        assert_eq!(counts[2] + counts[3], 0, "{counts:?}");
        // Within the nucleus the ratio is e^1 (about 2.7); allow wide bounds.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((2.2..3.3).contains(&ratio), "{counts:?}");
    }
}
