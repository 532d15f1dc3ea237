//! `/v1/embeddings`: a BERT sentence encoder (all-MiniLM-L6-v2) from
//! `weft-models`, run on its own stream from the blocking thread pool, so
//! embedding requests never wait for a generation step.

use weft::{Device, Stream};
use weft_models::bert::SentenceEmbedder;

pub struct Embedder {
    pub name: String,
    model: SentenceEmbedder,
    stream: Stream,
}

impl Embedder {
    pub fn load(name: &str, dir: &std::path::Path, device: Device) -> Result<Embedder, String> {
        let model = SentenceEmbedder::load(dir).map_err(|e| format!("loading {}: {e}", dir.display()))?;
        let stream = Stream::new(device).map_err(|e| e.to_string())?;
        Ok(Embedder { name: name.to_string(), model, stream })
    }

    /// Unit-length embeddings of `inputs` and the number of tokens read.
    pub fn embed(&self, inputs: &[String]) -> weft::Result<(Vec<Vec<f32>>, usize)> {
        weft::with_stream(self.stream, || {
            let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
            let mut tokens = 0;
            for chunk in refs.chunks(32) {
                let (_, _, keep) = self.model.tokenize(chunk)?;
                tokens += keep.to_vec::<bool>()?.iter().filter(|&&k| k).count();
            }
            Ok((self.model.embed(&refs, 32)?, tokens))
        })
    }
}

/// Standard base64 (with padding), for `encoding_format: "base64"`: the
/// little-endian float32 bytes, as OpenAI's clients decode them.
pub fn base64_f32(v: &[f32]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_of_floats() {
        // 1.0f32 = 00 00 80 3f; 2.0 = 00 00 00 40.
        assert_eq!(super::base64_f32(&[1.0]), "AACAPw==");
        assert_eq!(super::base64_f32(&[1.0, 2.0]), "AACAPwAAAEA=");
    }
}
