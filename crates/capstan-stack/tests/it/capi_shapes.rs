//! Cluster API v1beta1 and v1beta2 Clusters: the typed fields read the same from either, the
//! v1beta2 → v1beta1 conversion gives what Cluster API's conversion gives, and the test
//! objects have the shape of the real CRDs (`../shared/capi-crds/{v1.6.0,v1.14.0-rc.1}`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capstan_stack::capi::convert::cluster_to_v1beta1;
use capstan_stack::capi::schema::unknown_fields;
use capstan_stack::capi::served::api_version_from_contract;
use capstan_stack::capi::{CapiVersion, ClusterFields, ContractRef};
use capstan_stack::values::parse_json_object;
use serde_json::Value;

fn testdata(name: &str) -> PathBuf {
    Path::new(capstan_testenv::REPO_ROOT).join("testdata").join(name)
}

fn read(name: &str) -> Value {
    let path = testdata(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_json_object(&text, &path).unwrap()
}

/// The apiVersions the provider CRDs of the fixture declare by their contract labels (as
/// clusterctl installs them; the CRD files of ../shared carry no labels).
fn resolve(reference: &ContractRef) -> Result<String, String> {
    let labels: BTreeMap<String, String> = match reference.kind.as_str() {
        "KubeadmControlPlane" => [
            ("cluster.x-k8s.io/v1beta1", "v1beta1"),
            ("cluster.x-k8s.io/v1beta2", "v1beta2"),
        ],
        "DockerCluster" => [
            ("cluster.x-k8s.io/v1beta1", "v1alpha4_v1beta1"),
            ("cluster.x-k8s.io/v1beta2", ""),
        ],
        other => return Err(format!("no CRD for {other}")),
    }
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    api_version_from_contract(&reference.api_group, &labels).ok_or_else(|| "no contract label".into())
}

#[test]
fn v1beta2_cluster_converts_as_cluster_api_does() {
    let converted = cluster_to_v1beta1(&read("capi/cluster-v1beta2.yaml"), &resolve).unwrap();
    let expected = read("capi/cluster-v1beta2.as-v1beta1.yaml");
    assert_eq!(
        serde_json::to_string_pretty(&converted).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap()
    );
    // A v1beta1 Cluster is what a v1beta1 reader gets already.
    let v1beta1 = read("cluster.yaml");
    assert_eq!(cluster_to_v1beta1(&v1beta1, &resolve).unwrap(), v1beta1);
}

#[test]
fn typed_fields_read_the_same_from_either_version() {
    for (v1beta2, v1beta1) in [
        (
            "capi/cluster-v1beta2.yaml",
            "capi/cluster-v1beta2.as-v1beta1.yaml",
        ),
        ("cluster-v1beta2.yaml", "cluster.yaml"),
    ] {
        let new = ClusterFields::from_object(&read(v1beta2)).unwrap();
        let old = ClusterFields::from_object(&read(v1beta1)).unwrap();
        assert_eq!(new.version, CapiVersion::V1Beta2);
        assert_eq!(old.version, CapiVersion::V1Beta1);
        // The same Cluster: the same fields, except the version and the references'
        // apiVersion, which only v1beta1 carries.
        let mut old_like = old.clone();
        old_like.version = CapiVersion::V1Beta2;
        for r in [&mut old_like.control_plane_ref, &mut old_like.infrastructure_ref]
            .into_iter()
            .flatten()
        {
            r.api_version = None;
        }
        assert_eq!(new, old_like, "{v1beta2} / {v1beta1}");
    }
    let fields = ClusterFields::from_object(&read("capi/cluster-v1beta2.yaml")).unwrap();
    assert_eq!(fields.class_namespace(), Some("stacks"));
    assert_eq!(fields.kubernetes_version.as_deref(), Some("v1.27.3"));
    assert!(!fields.control_plane_initialized && fields.infrastructure_provisioned);
    assert!(fields.condition("Available").is_some_and(|c| c.is_true()));
    assert_eq!(fields.v1beta1_conditions[0].type_, "Ready");
    assert_eq!(fields.control_plane_versions[0].version, "v1.27.3");
    let example = ClusterFields::from_object(&read("cluster-v1beta2.yaml")).unwrap();
    assert_eq!(example.class_namespace(), Some("tenant-a"));
    assert!(example.control_plane_initialized);
}

/// The `openAPIV3Schema` of `kind`'s `version` in the CRD file `file` of `release`.
fn schema(shared: &Path, release: &str, file: &str, version: &str) -> Value {
    let path = shared.join("capi-crds").join(release).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let crd = parse_json_object(&text, &path).unwrap();
    crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{release}/{file} has no {version}"))["schema"]["openAPIV3Schema"]
        .clone()
}

#[test]
fn test_clusters_have_the_shape_of_the_real_crds() {
    let Some(shared) = capstan_testenv::shared::dir("test_clusters_have_the_shape_of_the_real_crds") else {
        return;
    };
    let clusters = "cluster.x-k8s.io_clusters.yaml";
    let table = [
        ("cluster.yaml", "v1.6.0", "v1beta1"),
        ("cluster.yaml", "v1.14.0-rc.1", "v1beta1"),
        ("cluster-v1beta2.yaml", "v1.14.0-rc.1", "v1beta2"),
        ("capi/cluster-v1beta2.yaml", "v1.14.0-rc.1", "v1beta2"),
        ("capi/cluster-v1beta2.as-v1beta1.yaml", "v1.14.0-rc.1", "v1beta1"),
    ];
    for (file, release, version) in table {
        let unknown = unknown_fields(&read(file), &schema(&shared, release, clusters, version));
        assert!(
            unknown.is_empty(),
            "{file} against {release} {version}: {unknown:?}"
        );
    }
    // v1beta2 fields are not v1beta1 fields: the check can fail.
    let unknown = unknown_fields(
        &read("cluster-v1beta2.yaml"),
        &schema(&shared, "v1.14.0-rc.1", clusters, "v1beta1"),
    );
    assert!(
        unknown.contains(&"spec.topology.classRef".to_string()),
        "{unknown:?}"
    );
    // The conversion of every v1beta2 fixture has only v1beta1 fields.
    for file in ["cluster-v1beta2.yaml", "capi/cluster-v1beta2.yaml"] {
        let converted = cluster_to_v1beta1(&read(file), &resolve).unwrap();
        let unknown = unknown_fields(&converted, &schema(&shared, "v1.14.0-rc.1", clusters, "v1beta1"));
        assert!(unknown.is_empty(), "{file} converted: {unknown:?}");
    }
}
