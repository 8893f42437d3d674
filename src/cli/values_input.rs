//! The `-f` values files `render` and `render_release` both read (one module, so neither of
//! them uses the other).

use std::path::Path;

use anyhow::Context;

/// A `-f` file's text; `-` reads stdin, as the cluster-stack operator passes values.
pub fn read_values_file(file: &Path) -> anyhow::Result<String> {
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .context("reading values from stdin")?;
        Ok(text)
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading values file {}", file.display()))
    }
}
