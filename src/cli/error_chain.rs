//! A failed command's error as one line: its causes in order, each said once.

/// An error and its causes on one line, like `{err:#}`, without repeating a cause whose text
/// the message already holds (errors that print their source in their own `Display`).
pub fn error_text(err: &anyhow::Error) -> String {
    chain_text(err.chain().map(|e| e.to_string()))
}

fn chain_text(messages: impl Iterator<Item = String>) -> String {
    let mut out = String::new();
    for message in messages {
        let message = message.trim();
        if message.is_empty() || out.contains(message) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once() {
        let err = anyhow::anyhow!("failed to determine current context")
            .context("kubeconfig: (failed to determine current context)")
            .context("no cluster configured");
        assert_eq!(
            error_text(&err),
            "no cluster configured: kubeconfig: (failed to determine current context)"
        );
        let err = anyhow::anyhow!("root").context("middle").context("top");
        assert_eq!(error_text(&err), "top: middle: root");
    }

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let table: [(&[&str], &str); 4] = [
            (&["a", "b", "c"], "a: b: c"),
            (&["opening x: not found", "not found"], "opening x: not found"),
            (
                &["release r: bad name \"..\"", "bad name \"..\"", ""],
                "release r: bad name \"..\"",
            ),
            (&["outer", "inner: root", "root"], "outer: inner: root"),
        ];
        for (chain, want) in table {
            assert_eq!(chain_text(chain.iter().map(|s| s.to_string())), want);
        }
    }
}
