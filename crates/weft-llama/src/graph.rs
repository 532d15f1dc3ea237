//! Decoding one sequence with each step as one CUDA graph launch.
//!
//! A decode step of a small model is hundreds of small kernels; launched
//! one by one, the host's work per kernel decides the tokens per second.
//! [`GraphDecoder`] traces [`Llama::static_step`] once (everything that
//! changes per step, the token, its position and the cache, is an input
//! array) and records the trace as a CUDA graph
//! (`weft::transforms::Compiled::capture`): a step is then a copy of the
//! inputs, one graph launch and a copy of the outputs.

use crate::{KvCache, Llama};
use weft::transforms::{Captured, Compiled};
use weft::{ops, Array, Error, Result};

/// A decode loop of one sequence whose steps each run as one CUDA graph.
pub struct GraphDecoder {
    step: Captured,
    keys: Array,
    values: Array,
    len: usize,
    capacity: usize,
    vocab: usize,
}

fn step_inputs(token: u32, position: usize, keys: &Array, values: &Array) -> Result<Vec<Array>> {
    let position = i32::try_from(position).map_err(|_| Error::InvalidArgument(format!("position {position} is out of range")))?;
    Ok(vec![Array::from_vec(vec![token], &[1])?, Array::from_vec(vec![position], &[1])?, keys.clone(), values.clone()])
}

impl GraphDecoder {
    /// Records `model`'s decode step, for a cache of `capacity` positions,
    /// as a CUDA graph on the current stream's GPU, to go on after the
    /// positions of `cache` (a prompt's, filled by [`Llama::forward`]).
    /// Fails on a CPU stream, or when `capacity` does not exceed the cache.
    pub fn new(model: &Llama, cache: &KvCache, capacity: usize) -> Result<GraphDecoder> {
        if capacity <= cache.len() {
            return Err(Error::InvalidArgument(format!("a graph cache of {capacity} positions leaves no room after {} cached ones", cache.len())));
        }
        let (keys, values) = model.static_cache(cache, capacity)?;
        let example = step_inputs(0, cache.len(), &keys, &values)?;
        let m = model.clone();
        let (compiled, _) = Compiled::trace(move |x: &[Array]| m.static_step(x), &example)?;
        let step = compiled.capture(&example)?;
        Ok(GraphDecoder { step, keys, values, len: cache.len(), capacity, vocab: model.config.vocab_size })
    }

    /// Starts over after the positions of `cache` (another sequence's
    /// prompt), keeping the recorded graph: no new capture.
    pub fn restart(&mut self, model: &Llama, cache: &KvCache) -> Result<()> {
        if self.capacity <= cache.len() {
            return Err(Error::InvalidArgument(format!("a graph cache of {} positions leaves no room after {} cached ones", self.capacity, cache.len())));
        }
        let (keys, values) = model.static_cache(cache, self.capacity)?;
        (self.keys, self.values, self.len) = (keys, values, cache.len());
        Ok(())
    }

    /// Positions cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions the graph's cache holds in all.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Runs `token` at the next position and returns the logits `[vocab]`
    /// (float32) predicting the token after it.
    pub fn step(&mut self, token: u32) -> Result<Array> {
        if token as usize >= self.vocab {
            return Err(Error::InvalidArgument(format!("token id {token} is outside the vocabulary ({})", self.vocab)));
        }
        if self.len >= self.capacity {
            return Err(Error::InvalidArgument(format!("the graph's cache is full ({} positions)", self.capacity)));
        }
        let mut out = self.step.call(&step_inputs(token, self.len, &self.keys, &self.values)?)?;
        let (values, keys, logits) = (out.pop(), out.pop(), out.pop());
        let (Some(logits), Some(keys), Some(values)) = (logits, keys, values) else {
            return Err(Error::Internal("the decode graph did not return three outputs".into()));
        };
        self.keys = keys;
        self.values = values;
        self.len += 1;
        ops::reshape(&logits, &[-1])
    }
}
