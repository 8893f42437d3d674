//! An API server's audit log, to count on the wire the requests capstan sends: every
//! request the server answered for capstan's user, as `verb URI`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The user of [`crate::TestCluster`]'s kubeconfig.
const USER: &str = "capstan-admin";

/// A temporary audit policy (metadata of every request, once, when answered) and log.
pub struct AuditLog {
    dir: tempfile::TempDir,
}

impl AuditLog {
    pub fn new() -> std::io::Result<AuditLog> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("policy.yaml"),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\nrules:\n- level: Metadata\n",
        )?;
        Ok(AuditLog { dir })
    }

    /// The kube-apiserver flags that write this log (for `TestCluster::start_with_args`).
    pub fn apiserver_args(&self) -> Vec<String> {
        vec![
            format!(
                "--audit-policy-file={}",
                self.dir.path().join("policy.yaml").display()
            ),
            format!("--audit-log-path={}", self.path().display()),
        ]
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// The requests answered so far for capstan's user: their `verb URI`. (Watches show only
    /// when they end.)
    pub fn requests(&self) -> Vec<String> {
        self.requests_at()
            .into_iter()
            .map(|(_, request)| request)
            .collect()
    }

    /// [`AuditLog::requests`] with the time each was answered (the event's `stageTimestamp`,
    /// RFC 3339). Requests of capstan's user impersonating another (a client of
    /// `TestCluster::client_as` or `TestCluster::write_kubeconfig_as`, e.g. a benchmark's
    /// simulator) are not capstan's and left out.
    pub fn requests_at(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.path()).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["user"]["username"] == USER && event["impersonatedUser"].is_null())
            .map(|event| {
                let request = format!(
                    "{} {}",
                    event["verb"].as_str().unwrap_or_default(),
                    event["requestURI"].as_str().unwrap_or_default()
                );
                (
                    event["stageTimestamp"].as_str().unwrap_or_default().to_string(),
                    request,
                )
            })
            .collect()
    }

    /// The requests answered after the first `before`, discovery, version and health
    /// aside: their count by verb, and themselves.
    pub async fn sent_since(&self, before: usize) -> (BTreeMap<String, usize>, Vec<String>) {
        // The log is written as requests are answered; give the last line a moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let sent: Vec<String> = self
            .requests()
            .into_iter()
            .skip(before)
            .filter(|r| !is_overhead(r))
            .collect();
        let mut by_verb = BTreeMap::new();
        for request in &sent {
            let verb = request.split(' ').next().unwrap_or_default().to_string();
            *by_verb.entry(verb).or_insert(0) += 1;
        }
        (by_verb, sent)
    }
}

/// A count by verb (zero counts left out), to compare with [`AuditLog::sent_since`]'s.
pub fn verbs(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(verb, n)| (verb.to_string(), *n))
        .collect()
}

/// Whether `request` (`verb URI`) is a discovery, version or health request.
pub fn is_overhead(request: &str) -> bool {
    let path = request
        .split_once(' ')
        .map_or(request, |(_, uri)| uri)
        .split('?')
        .next()
        .unwrap_or_default();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        ["readyz" | "livez" | "healthz" | "version" | "api" | "apis"]
    ) || matches!(segments.as_slice(), ["api", _] | ["apis", _] | ["apis", _, _])
}

#[cfg(test)]
mod tests {
    use super::is_overhead;

    #[test]
    fn overhead_requests_are_told_apart() {
        for overhead in [
            "get /readyz",
            "get /version?timeout=32s",
            "get /api",
            "get /api/v1",
            "get /apis",
            "get /apis/apps/v1",
            "get /apis/apiextensions.k8s.io",
        ] {
            assert!(is_overhead(overhead), "{overhead}");
        }
        for work in [
            "list /api/v1/namespaces/kube-system/configmaps?labelSelector=x",
            "get /api/v1/namespaces/kube-system",
            "patch /apis/apps/v1/namespaces/kube-system/deployments/web",
        ] {
            assert!(!is_overhead(work), "{work}");
        }
    }
}
