//! A failed command's error as one line: its causes in order, each said once.

/// An error and its causes on one line, like `{err:#}`, without repeating a cause whose text
/// the message already holds (errors that print their source in their own `Display`).
pub fn error_text(err: &anyhow::Error) -> String {
    chain_text(err.chain().map(cause_text))
}

/// One cause's words. The API server's refusals are said as `MESSAGE (CODE REASON)` (kube's
/// own text adds the whole `Status { … }` in Rust's debug form; the `Status` below it says
/// the same again).
fn cause_text(err: &(dyn std::error::Error + 'static)) -> String {
    if let Some(kube::Error::Api(status)) = err.downcast_ref::<kube::Error>() {
        return api_refusal(status);
    }
    if err.downcast_ref::<Box<kube::core::Status>>().is_some()
        || err.downcast_ref::<kube::core::Status>().is_some()
    {
        return String::new();
    }
    err.to_string()
}

fn api_refusal(status: &kube::core::Status) -> String {
    let why = [status.code.to_string(), status.reason.clone()]
        .into_iter()
        .filter(|s| !s.is_empty() && s != "0")
        .collect::<Vec<_>>()
        .join(" ");
    match (status.message.is_empty(), why.is_empty()) {
        (true, true) => "the API server refused the request".into(),
        (true, false) => format!("the API server refused the request ({why})"),
        (false, true) => status.message.clone(),
        (false, false) => format!("{} ({why})", status.message),
    }
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
    fn api_refusals_are_said_without_kubes_debug_dump() {
        let status = kube::core::Status {
            code: 400,
            reason: "BadRequest".into(),
            message: "unable to parse requirement: found '=', expected: identifier".into(),
            ..Default::default()
        };
        let err = anyhow::Error::from(kube::Error::Api(Box::new(status))).context("listing ClusterStacks");
        assert_eq!(
            error_text(&err),
            "listing ClusterStacks: unable to parse requirement: found '=', expected: identifier (400 BadRequest)"
        );
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
