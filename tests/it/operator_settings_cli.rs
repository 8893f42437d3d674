//! `capstan operator`'s start-up choice of the default source from the cluster-stack
//! operator's settings, as a deployment moved from it runs the binary: no cluster is needed,
//! the choice is made (and logged, or refused) before the operator connects.

use std::process::Command;

/// Runs `capstan operator` with only `env` of the settings it reads, against a kubeconfig that
/// does not exist (so it stops right after choosing); returns whether it succeeded and its
/// stderr.
fn operator(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let scratch = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capstan"));
    cmd.arg("operator")
        .arg("--kubeconfig")
        .arg(scratch.path().join("no-kubeconfig"))
        .arg("--cache-dir")
        .arg(scratch.path().join("cache"))
        .args(args);
    for var in [
        "GIT_PROVIDER",
        "GIT_ORG_NAME",
        "GIT_REPOSITORY_NAME",
        "OCI_REGISTRY",
        "OCI_REPOSITORY",
        "CAPSTAN_LOG",
        "KUBECONFIG",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("capstan runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

const OCI: [(&str, &str); 2] = [
    ("OCI_REGISTRY", "registry.scs.community"),
    ("OCI_REPOSITORY", "kaas/cluster-stacks"),
];
const GIT: [(&str, &str); 2] = [("GIT_ORG_NAME", "scs"), ("GIT_REPOSITORY_NAME", "cluster-stacks")];

#[test]
fn the_oci_settings_alone_choose_the_oci_source_and_say_so() {
    let (ok, stderr) = operator(&[], &OCI);
    assert!(!ok, "no cluster to connect to: {stderr}");
    assert!(
        stderr.contains(
            "default source of ClusterStacks without spec.source: OCI repository registry.scs.community/kaas/cluster-stacks (no --source; inferred from OCI_REGISTRY/OCI_REPOSITORY)"
        ),
        "{stderr}"
    );

    let (_, stderr) = operator(&[], &GIT);
    assert!(
        stderr.contains("GitHub repository scs/cluster-stacks (no --source; inferred from the git settings"),
        "{stderr}"
    );

    let (_, stderr) = operator(&[], &[]);
    assert!(stderr.contains("no default source"), "{stderr}");
}

#[test]
fn both_kinds_of_settings_without_source_are_refused_before_connecting() {
    let both: Vec<(&str, &str)> = OCI.iter().chain(GIT.iter()).copied().collect();
    let (ok, stderr) = operator(&[], &both);
    assert!(!ok);
    assert!(
        stderr.contains(
            "Error: the default source of ClusterStacks without spec.source: both git settings (GIT_ORG_NAME, GIT_REPOSITORY_NAME) and OCI settings (OCI_REGISTRY, OCI_REPOSITORY) are set and no --source says which is the default source: pass --source github or --source oci"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("no-kubeconfig"), "refused only after connecting: {stderr}");

    // --source settles it.
    let (_, stderr) = operator(&["--source", "oci"], &both);
    assert!(
        stderr.contains("OCI repository registry.scs.community/kaas/cluster-stacks (named by --source)"),
        "{stderr}"
    );
}
