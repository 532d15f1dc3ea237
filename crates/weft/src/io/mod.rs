//! Weight files: reading and writing arrays in `safetensors` files
//! ([`load_safetensors`], [`save_safetensors`]) and reading GGUF model files
//! ([`gguf`]). Readers sit above the core: they build arrays through the
//! public API and return errors for corrupt input, never panic.

pub mod gguf;
mod safetensors;

pub use self::safetensors::{load_safetensors, load_safetensors_bytes, save_safetensors, save_safetensors_bytes};
