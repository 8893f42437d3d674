//! The run's shared API server. nextest runs every test in a process of its own, so a server
//! is shared only from outside the tests: `scripts/test.sh` starts one with the `testenv-up`
//! binary and names its admin kubeconfig in [`SHARED_KUBECONFIG_VAR`]. A test that opts in
//! ([`super::TestCluster::shared_or_start`]) then gets a fresh namespace there, and a
//! kubeconfig whose context names it, instead of an etcd and a kube-apiserver of its own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use kube::config::Kubeconfig;

use super::{Error, Result, io_err};

/// The environment variable naming the shared server's admin kubeconfig.
pub const SHARED_KUBECONFIG_VAR: &str = "CAPSTAN_TEST_SHARED_KUBECONFIG";

/// The shared server's admin kubeconfig, when the run has one.
pub fn shared_kubeconfig() -> Option<PathBuf> {
    std::env::var_os(SHARED_KUBECONFIG_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Longest namespace prefix taken from a test's name: a namespace is a DNS label (63 bytes),
/// and the longest suffix [`unique_suffix`] makes is 31 bytes after the `-`.
const PREFIX_LEN: usize = 31;

/// A namespace name for `test` that no other test of the run has: the test's name as a DNS
/// label (lower case, `-` for anything else, at most [`PREFIX_LEN`] bytes), then `unique`.
pub(crate) fn namespace_name(test: &str, unique: &str) -> String {
    let mut label = String::new();
    for c in test.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && (label.is_empty() || label.ends_with('-'))) {
            label.push(c);
        }
        if label.len() == PREFIX_LEN {
            break;
        }
    }
    let label = label.trim_end_matches('-');
    if label.is_empty() {
        format!("t-{unique}")
    } else {
        format!("{label}-{unique}")
    }
}

/// What makes a namespace name unique in the run: the process (nextest: one per test), a
/// sequence number (`cargo test`: many tests per process) and the clock (pids are reused).
pub(crate) fn unique_suffix() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() % 1_000_000)
        .unwrap_or_default();
    format!(
        "{:x}-{:x}-{micros:x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes `out`: the kubeconfig `admin` with every context's namespace set to `namespace`
/// (so a kubeconfig user such as the operator's leader election defaults to it); returns the
/// server's URL.
pub(crate) fn namespaced_kubeconfig(admin: &Path, namespace: &str, out: &Path) -> Result<String> {
    let bad = |message: &str| {
        Error::Startup(format!(
            "{} ({SHARED_KUBECONFIG_VAR}): {message}",
            admin.display()
        ))
    };
    let mut kubeconfig = Kubeconfig::read_from(admin).map_err(|e| bad(&e.to_string()))?;
    for named in &mut kubeconfig.contexts {
        if let Some(context) = &mut named.context {
            context.namespace = Some(namespace.to_string());
        }
    }
    let server = kubeconfig
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref()?.server.clone())
        .ok_or_else(|| bad("no cluster with a server"))?;
    let text = serde_json::to_string_pretty(&kubeconfig).map_err(|e| bad(&e.to_string()))?;
    std::fs::write(out, text).map_err(io_err(format!("writing {}", out.display())))?;
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_are_dns_labels_that_name_the_test() {
        let cases = [
            ("operator_e2e", "1a-0-ff", "operator-e2e-1a-0-ff"),
            ("Mixed::Case__x", "1", "mixed-case-x-1"),
            ("", "1", "t-1"),
            ("___", "1", "t-1"),
            ("-lead", "1", "lead-1"),
            (
                "a_very_long_test_name_that_goes_on_and_on_and_on_forever",
                "12345-999-fffff",
                "a-very-long-test-name-that-goes-12345-999-fffff",
            ),
            (
                "a_b_c_d_e_f_g_h_i_j_k_l_m_n_o_p_",
                "1",
                "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-1",
            ),
        ];
        for (test, unique, want) in cases {
            let got = namespace_name(test, unique);
            assert_eq!(got, want, "{test:?}");
            assert!(got.len() <= 63, "{got}");
        }
        // The longest suffix a run makes still fits a label.
        let longest = namespace_name(
            &"x".repeat(100),
            &format!("{:x}-{:x}-{:x}", u32::MAX, u64::MAX, 999_999),
        );
        assert!(longest.len() <= 63, "{longest} is {} bytes", longest.len());
    }

    #[test]
    fn the_namespaced_kubeconfig_keeps_the_admin_and_names_the_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin");
        std::fs::write(
            &admin,
            super::super::cluster::kubeconfig_json("management", "https://127.0.0.1:1234", "CA", "tok"),
        )
        .unwrap();
        let out = dir.path().join("ns");
        let server = namespaced_kubeconfig(&admin, "t-1", &out).unwrap();
        assert_eq!(server, "https://127.0.0.1:1234");
        let written = Kubeconfig::read_from(&out).unwrap();
        let context = written.contexts[0].context.as_ref().unwrap();
        assert_eq!(context.namespace.as_deref(), Some("t-1"));
        assert_eq!(written.current_context.as_deref(), Some("management"));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("tok"), "the admin token is kept: {text}");

        std::fs::write(&admin, "not: [a kubeconfig").unwrap();
        let err = namespaced_kubeconfig(&admin, "t-1", &out)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(SHARED_KUBECONFIG_VAR) && err.contains("admin"),
            "{err}"
        );
    }
}
