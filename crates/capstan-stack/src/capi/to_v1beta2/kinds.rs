//! The kinds converted, and their apiVersions before and after.

/// The kinds converted, by API group.
pub const CONVERTED_KINDS: [(&str, &str); 6] = [
    ("cluster.x-k8s.io", "ClusterClass"),
    ("controlplane.cluster.x-k8s.io", "KubeadmControlPlaneTemplate"),
    ("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerClusterTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerMachinePoolTemplate"),
];

/// Whether `api_version` + `kind` is a `v1beta1` object of a kind converted here.
pub fn is_converted(api_version: &str, kind: &str) -> bool {
    api_version
        .strip_suffix("/v1beta1")
        .is_some_and(|group| CONVERTED_KINDS.contains(&(group, kind)))
}

/// `api_version` for `kind` after conversion: `v1beta2` for a converted kind, else as given.
pub fn converted_api_version(api_version: &str, kind: &str) -> String {
    match api_version.strip_suffix("/v1beta1") {
        Some(group) if CONVERTED_KINDS.contains(&(group, kind)) => format!("{group}/v1beta2"),
        _ => api_version.to_string(),
    }
}
