//! capstan's `clusterstack.x-k8s.io` CRDs against the cluster-stack-operator's published ones
//! (`../shared/cso-api`): the schemas agree field by field, and on a real API server every
//! object CSO's CRDs accept is accepted by capstan's unchanged and stored the same.

use std::collections::BTreeSet;
use std::path::Path;

use capstan_operator::api::{self, ClusterAddon, ClusterStack, ClusterStackRelease};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value as Json, json};

const MANAGER: &str = "capstan-test";
const NS: &str = "cluster";

fn cso_dir(test: &str) -> Option<std::path::PathBuf> {
    let dir = capstan_testenv::shared_path("cso-api");
    if dir.is_none() {
        capstan_testenv::skip_or_fail(
            test,
            "CSO API fixtures not found at ../shared/cso-api (set CAPSTAN_SHARED)",
        );
    }
    dir
}

fn read_yaml_docs(path: &Path) -> Vec<Json> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cso_crds(dir: &Path) -> Vec<Json> {
    let mut crds = Vec::new();
    for file in capstan_testenv::crd_files(&dir.join("crds")).expect("list CSO CRDs") {
        crds.extend(read_yaml_docs(&file));
    }
    crds
}

fn our_crds() -> Vec<Json> {
    api::crds()
        .iter()
        .map(|c| serde_json::to_value(c).expect("CRD serializes"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The schemas, field by field

/// Keywords that decide what a field accepts and how it is stored.
const CONSTRAINTS: &[&str] = &[
    "type",
    "format",
    "default",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "nullable",
    "x-kubernetes-map-type",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "additionalProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
];

/// Where capstan's schema deliberately differs from CSO's: (kind, path, keyword).
const INTENDED: &[(&str, &str, &str)] = &[
    // A ClusterStackRelease without spec is stored with `spec: {}`, so it reads as a typed object.
    ("ClusterStackRelease", "/spec", "default"),
];

fn required(schema: &Json) -> BTreeSet<String> {
    schema
        .get("required")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn compare_schema(kind: &str, path: &str, cso: &Json, ours: &Json, errors: &mut Vec<String>) {
    for key in CONSTRAINTS {
        if INTENDED.contains(&(kind, path, key)) {
            continue;
        }
        if cso.get(key) != ours.get(key) {
            errors.push(format!(
                "{kind} {path}: {key} is {:?} in CSO's schema, {:?} in capstan's",
                cso.get(key),
                ours.get(key)
            ));
        }
    }
    let cso_props = cso.get("properties").and_then(Json::as_object);
    let our_props = ours.get("properties").and_then(Json::as_object);
    let ours_required = required(ours);
    if path.is_empty() {
        // The top: apiVersion, kind and metadata are the server's; spec and status are optional.
        if !ours_required.is_empty() {
            errors.push(format!("{kind}: top-level required {ours_required:?}"));
        }
    } else if required(cso) != ours_required {
        errors.push(format!(
            "{kind} {path}: required {:?} in CSO's schema, {ours_required:?} in capstan's",
            required(cso)
        ));
    }
    if let Some(cso_props) = cso_props {
        for (name, cso_field) in cso_props {
            if path.is_empty() && ["apiVersion", "kind", "metadata"].contains(&name.as_str()) {
                continue;
            }
            match our_props.and_then(|p| p.get(name)) {
                Some(our_field) => {
                    compare_schema(kind, &format!("{path}/{name}"), cso_field, our_field, errors)
                }
                None => errors.push(format!("{kind} {path}/{name}: missing in capstan's schema")),
            }
        }
    }
    // capstan's own fields: optional and without defaults, so CSO's objects stay the same.
    for (name, field) in our_props.into_iter().flatten() {
        if cso_props.is_some_and(|p| p.contains_key(name)) {
            continue;
        }
        if field.get("default").is_some() {
            errors.push(format!("{kind} {path}/{name}: capstan's own field has a default"));
        }
    }
    match (cso.get("items"), ours.get("items")) {
        (Some(c), Some(o)) => compare_schema(kind, &format!("{path}[]"), c, o, errors),
        (None, None) => {}
        (c, o) => errors.push(format!("{kind} {path}: items {c:?} vs {o:?}")),
    }
}

#[test]
fn schemas_agree_with_cso_field_by_field() {
    let Some(dir) = cso_dir("schemas_agree_with_cso_field_by_field") else {
        return;
    };
    let cso = cso_crds(&dir);
    let ours = our_crds();
    assert_eq!(cso.len(), 3, "CSO publishes three CRDs");
    let mut errors = Vec::new();
    for c in &cso {
        let name = c["metadata"]["name"].as_str().expect("CRD name");
        let Some(o) = ours.iter().find(|o| o["metadata"]["name"] == name) else {
            errors.push(format!("capstan has no CRD {name}"));
            continue;
        };
        let kind = c["spec"]["names"]["kind"].as_str().expect("kind");
        for key in ["group", "scope"] {
            if c["spec"][key] != o["spec"][key] {
                errors.push(format!(
                    "{name}: spec.{key} {} vs {}",
                    c["spec"][key], o["spec"][key]
                ));
            }
        }
        for key in ["kind", "plural", "singular", "shortNames"] {
            if c["spec"]["names"][key] != o["spec"]["names"][key] {
                errors.push(format!(
                    "{name}: names.{key} {} vs {}",
                    c["spec"]["names"][key], o["spec"]["names"][key]
                ));
            }
        }
        let (cv, ov) = (&c["spec"]["versions"], &o["spec"]["versions"]);
        assert_eq!(cv.as_array().map(Vec::len), Some(1), "{name}: one CSO version");
        assert_eq!(
            ov.as_array().map(Vec::len),
            Some(1),
            "{name}: one capstan version"
        );
        for key in ["name", "served", "storage", "subresources"] {
            if cv[0][key] != ov[0][key] {
                errors.push(format!(
                    "{name}: versions[0].{key} {} vs {}",
                    cv[0][key], ov[0][key]
                ));
            }
        }
        compare_schema(
            kind,
            "",
            &cv[0]["schema"]["openAPIV3Schema"],
            &ov[0]["schema"]["openAPIV3Schema"],
            &mut errors,
        );
    }
    assert!(errors.is_empty(), "schema differences:\n{}", errors.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// On a real API server

fn resource(kind: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(api::GROUP, api::VERSION, kind), &plural)
}

fn dynamic_api(client: &Client, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), NS, &resource(kind))
}

async fn create_namespace(client: &Client) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NS}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// Installs capstan's CRDs (from `capstan crds`' output) and waits until they are Established.
async fn install_our_crds(client: &Client) {
    let dir = tempfile::tempdir().expect("temp dir");
    let yaml = api::crds_yaml().expect("CRD YAML");
    std::fs::write(dir.path().join("capstan-crds.yaml"), yaml).expect("write CRDs");
    let names = capstan_testenv::install_crds(client, dir.path())
        .await
        .expect("capstan's CRDs install and become Established");
    assert_eq!(names.len(), 4, "{names:?}");
}

/// Applies `obj` (its status through the status subresource) and reads it back.
async fn apply(client: &Client, obj: &Json) -> Result<Json, kube::Error> {
    let kind = obj["kind"].as_str().expect("kind");
    let name = obj["metadata"]["name"].as_str().expect("name");
    let api = dynamic_api(client, kind);
    let params = PatchParams::apply(MANAGER).force();
    let mut main = obj.clone();
    let status = main.as_object_mut().and_then(|o| o.remove("status"));
    let main: DynamicObject = serde_json::from_value(main).expect("dynamic object");
    api.patch(name, &params, &Patch::Apply(&main)).await?;
    if let Some(status) = status {
        let patch = json!({
            "apiVersion": obj["apiVersion"], "kind": kind,
            "metadata": {"name": name, "namespace": NS},
            "status": status,
        });
        api.patch_status(name, &params, &Patch::Apply(&patch)).await?;
    }
    let read = api.get(name).await?;
    Ok(content(&serde_json::to_value(read).expect("object serializes")))
}

/// What an object holds besides server-managed metadata.
fn content(obj: &Json) -> Json {
    let mut out = json!({
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]},
    });
    for part in ["spec", "status"] {
        if let Some(v) = obj.get(part) {
            out[part] = v.clone();
        }
    }
    out
}

/// The object as capstan's Rust types read and write it.
fn typed_round_trip(obj: &Json) -> Json {
    let kind = obj["kind"].as_str().expect("kind");
    let back = match kind {
        "ClusterStack" => serde_json::to_value(
            serde_json::from_value::<ClusterStack>(obj.clone()).expect("typed ClusterStack"),
        ),
        "ClusterStackRelease" => serde_json::to_value(
            serde_json::from_value::<ClusterStackRelease>(obj.clone()).expect("typed ClusterStackRelease"),
        ),
        "ClusterAddon" => serde_json::to_value(
            serde_json::from_value::<ClusterAddon>(obj.clone()).expect("typed ClusterAddon"),
        ),
        other => panic!("unexpected kind {other}"),
    };
    content(&back.expect("typed object serializes"))
}

fn object(kind: &str, name: &str, spec: Json, status: Option<Json>) -> Json {
    let mut obj = json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    });
    if let Some(status) = status {
        obj["status"] = status;
    }
    obj
}

fn full_reference(kind: &str, name: &str) -> Json {
    json!({
        "apiVersion": "infrastructure.clusterstack.x-k8s.io/v1alpha1",
        "fieldPath": "spec.template",
        "kind": kind,
        "name": name,
        "namespace": NS,
        "resourceVersion": "12345",
        "uid": "4b5e2b0e-5f0e-4a63-9c1e-6a0f5c1b2d3e",
    })
}

/// A condition with every field CSO's schema defines.
fn cso_condition(type_: &str, status: &str) -> Json {
    json!({
        "type": type_,
        "status": status,
        "lastTransitionTime": "2024-05-06T07:08:09Z",
        "reason": "SomethingHappened",
        "message": "a message: with detail",
        "severity": "Warning",
    })
}

fn applied(kind: &str, name: &str, status: &str, error: Option<&str>) -> Json {
    let mut entry = json!({
        "group": "cluster.x-k8s.io", "version": "v1beta1", "kind": kind,
        "namespace": NS, "name": name, "status": status,
    });
    if let Some(error) = error {
        entry["error"] = json!(error);
    }
    entry
}

/// Objects that set every field CSO's schemas define, spec and status.
fn every_cso_field() -> Vec<Json> {
    vec![
        object(
            "ClusterStack",
            "every-field",
            json!({
                "provider": "openstack",
                "name": "scs",
                "kubernetesVersion": "1.28",
                "channel": "custom",
                "versions": ["v1-custom.0", "v2-custom.1"],
                "autoSubscribe": false,
                "noProvider": false,
                "providerRef": full_reference("OpenStackClusterStackReleaseTemplate", "scs-template"),
            }),
            Some(json!({
                "latestRelease": "openstack-scs-1-28-v2",
                "usableVersions": "v1, v2",
                "summary": [
                    {"name": "openstack-scs-1-28-v1", "ready": true, "phase": "done"},
                    {"name": "openstack-scs-1-28-v2", "ready": false, "phase": "applying objects",
                     "message": "failed to apply: conflict"},
                ],
                "conditions": [cso_condition("Ready", "False"), cso_condition("ReleasesSynced", "True")],
            })),
        ),
        object(
            "ClusterStackRelease",
            "openstack-scs-1-28-v2",
            json!({"providerRef": full_reference("OpenStackClusterStackRelease", "openstack-scs-1-28-v2")}),
            Some(json!({
                "kubernetesVersion": "v1.28.5",
                "ready": true,
                "resources": [
                    applied("ClusterClass", "openstack-scs-1-28-v2", "synced", None),
                    applied("KubeadmControlPlaneTemplate", "cp", "not-synced", Some("admission webhook denied it")),
                ],
                "conditions": [cso_condition("Ready", "True"), cso_condition("ClusterStackReleaseDownloaded", "Unknown")],
            })),
        ),
        object(
            "ClusterAddon",
            "cluster-addon-workload",
            json!({
                "clusterRef": {
                    "apiVersion": "cluster.x-k8s.io/v1beta1", "fieldPath": "spec", "kind": "Cluster",
                    "name": "workload", "namespace": NS, "resourceVersion": "77",
                    "uid": "0c6e6d3a-8d44-4c59-bb5b-3a2f7f0f4a11",
                },
                "clusterStack": "openstack-scs-1-28-v2",
                "version": "v2",
                "hook": "BeforeClusterUpgrade",
            }),
            Some(json!({
                "ready": false,
                "resources": [applied("Deployment", "metrics-server", "synced", None)],
                "stages": [
                    {"name": "cni", "action": "apply", "phase": "done"},
                    {"name": "old-csi", "action": "delete", "phase": "waitingForPostCondition"},
                ],
                "conditions": [cso_condition("Ready", "False"), cso_condition("HelmChartApplied", "True")],
            })),
        ),
    ]
}

/// Objects that leave out everything optional: defaults must come out the same.
fn minimal_objects() -> Vec<Json> {
    vec![
        object(
            "ClusterStack",
            "minimal",
            json!({"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27"}),
            Some(json!({"summary": [{"name": "r", "ready": false, "phase": "downloading release assets"}]})),
        ),
        object(
            "ClusterStackRelease",
            "docker-ferrol-1-27-v1",
            json!({}),
            Some(json!({})),
        ),
        object(
            "ClusterAddon",
            "cluster-addon-minimal",
            json!({"clusterRef": {"name": "minimal"}}),
            Some(json!({"stages": [{}], "resources": [{}], "conditions": [
                {"type": "Ready", "status": "Unknown", "lastTransitionTime": "2024-01-01T00:00:00Z"}
            ]})),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cso_objects_are_accepted_unchanged_and_stored_like_cso() {
    let test = "cso_objects_are_accepted_unchanged_and_stored_like_cso";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(dir) = cso_dir(test) else {
        return;
    };
    let (cso, ours) = tokio::join!(
        TestCluster::start(&bins, "cso"),
        TestCluster::start(&bins, "capstan")
    );
    let (cso, ours) = (
        cso.expect("CSO cluster starts"),
        ours.expect("capstan cluster starts"),
    );
    let (cso, ours) = (cso.client(), ours.client());
    capstan_testenv::install_crds(&cso, &dir.join("crds"))
        .await
        .expect("CSO's CRDs install");
    install_our_crds(&ours).await;
    create_namespace(&cso).await;
    create_namespace(&ours).await;

    let sample = read_yaml_docs(&dir.join("sample-clusterstack.yaml"));
    let mut unchanged = sample.clone();
    unchanged.extend(every_cso_field());
    for obj in unchanged.iter().chain(minimal_objects().iter()) {
        let what = format!("{} {}", obj["kind"], obj["metadata"]["name"]);
        let by_cso = apply(&cso, obj)
            .await
            .unwrap_or_else(|e| panic!("CSO's CRDs refuse {what}: {e}"));
        let by_us = apply(&ours, obj)
            .await
            .unwrap_or_else(|e| panic!("capstan's CRDs refuse {what} (CSO's accept it): {e}"));
        assert_eq!(by_us, by_cso, "{what}: stored differently than with CSO's CRDs");
        assert_eq!(
            typed_round_trip(&by_us),
            by_us,
            "{what}: capstan's Rust types lose or add fields"
        );
    }
    for obj in &unchanged {
        let what = format!("{} {}", obj["kind"], obj["metadata"]["name"]);
        let read = apply(&ours, obj).await.expect("applied again");
        assert_eq!(read, content(obj), "{what}: not read back unchanged");
    }

    // The one intended difference: a release without spec gets `spec: {}`, so it reads as a
    // typed object (CSO's CRD stores no spec).
    let mut bare = object("ClusterStackRelease", "docker-ferrol-1-27-v3", json!({}), None);
    bare.as_object_mut().map(|o| o.remove("spec"));
    let by_cso = apply(&cso, &bare)
        .await
        .expect("CSO's CRD takes a release without spec");
    let by_us = apply(&ours, &bare)
        .await
        .expect("capstan's CRD takes a release without spec");
    assert_eq!(by_cso.get("spec"), None);
    assert_eq!(by_us["spec"], json!({}));
    serde_json::from_value::<ClusterStackRelease>(by_us).expect("reads as a typed release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capstan_fields_round_trip_and_invalid_values_are_rejected() {
    let test = "capstan_fields_round_trip_and_invalid_values_are_rejected";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "capstan-fields")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    install_our_crds(&client).await;
    create_namespace(&client).await;

    let base = json!({"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                      "channel": "stable", "autoSubscribe": true, "noProvider": true});
    let with = |extra: Json| {
        let mut spec = base.clone();
        for (k, v) in extra.as_object().expect("object").clone() {
            spec[k] = v;
        }
        spec
    };
    let own = [
        object(
            "ClusterStack",
            "from-github",
            with(json!({
                "interval": "1h30m",
                "source": {"github": {"owner": "SovereignCloudStack", "repo": "cluster-stacks",
                                      "apiURL": "https://github.example/api/v3",
                                      "secretRef": {"name": "github-token"}}},
            })),
            Some(json!({"conditions": [{
                "type": "Ready", "status": "True", "lastTransitionTime": "2024-05-06T07:08:09Z",
                "reason": "Succeeded", "observedGeneration": 4,
            }]})),
        ),
        object(
            "ClusterStack",
            "from-git",
            with(
                json!({"source": {"git": {"url": "https://git.example/stacks.git", "ref": "v2",
                                           "path": "providers/docker/ferrol/1-27",
                                           "secretRef": {"name": "git-credentials"}}}}),
            ),
            None,
        ),
        object(
            "ClusterStack",
            "from-dir",
            with(json!({"interval": "30s", "source": {"local": {"path": "/var/lib/stacks"}}})),
            None,
        ),
        object(
            "ClusterStack",
            "with-addon-values",
            with(json!({"addonValues": "metrics-server:\n  replicas: 2\n"})),
            None,
        ),
    ];
    for obj in &own {
        let what = format!("ClusterStack {}", obj["metadata"]["name"]);
        let read = apply(&client, obj)
            .await
            .unwrap_or_else(|e| panic!("{what} refused: {e}"));
        assert_eq!(read, content(obj), "{what}: not read back unchanged");
        assert_eq!(
            typed_round_trip(&read),
            read,
            "{what}: Rust types lose or add fields"
        );
    }

    let invalid = [
        ("kubernetesVersion", with(json!({"kubernetesVersion": "1.27.3"}))),
        ("kubernetesVersion", with(json!({"kubernetesVersion": "v1.27"}))),
        ("kubernetesVersion", with(json!({"kubernetesVersion": "127"}))),
        ("channel", with(json!({"channel": "beta"}))),
        ("provider", with(json!({"provider": ""}))),
        ("interval", with(json!({"interval": "5 minutes"}))),
        (
            "source",
            with(json!({"source": {"local": {"path": "/a"}, "git": {"url": "https://x/y.git"}}})),
        ),
        ("source", with(json!({"source": {}}))),
    ];
    for (i, (field, spec)) in invalid.iter().enumerate() {
        let obj = object("ClusterStack", &format!("invalid-{i}"), spec.clone(), None);
        match apply(&client, &obj).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{spec}: {status:?}");
                assert!(
                    status.message.contains(&format!("spec.{field}")),
                    "{spec}: message should name spec.{field}: {}",
                    status.message
                );
            }
            other => panic!("{spec} must be rejected by the schema, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Short names and categories

/// `(resource, short name)` of every resource the API server serves (its discovery) outside
/// capstan's own groups, and `(resource, categories)` of capstan's.
async fn served_names(client: &Client) -> (Vec<(String, String)>, Vec<(String, Vec<String>)>) {
    let mut lists = vec![
        client
            .list_core_api_resources("v1")
            .await
            .expect("core discovery"),
    ];
    for group in client.list_api_groups().await.expect("API groups").groups {
        for version in &group.versions {
            lists.push(
                client
                    .list_api_group_resources(&version.group_version)
                    .await
                    .unwrap_or_else(|e| panic!("discovery of {}: {e}", version.group_version)),
            );
        }
    }
    let ours = [api::GROUP, api::rollout::ROLLOUT_GROUP];
    let (mut others, mut categories) = (Vec::new(), Vec::new());
    for list in lists {
        let group = list
            .group_version
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        for resource in list.resources.iter().filter(|r| !r.name.contains('/')) {
            let name = format!("{}.{group}", resource.name);
            if ours.contains(&group.as_str()) {
                categories.push((name, resource.categories.clone().unwrap_or_default()));
            } else {
                for short in resource.short_names.iter().flatten() {
                    others.push((name.clone(), short.clone()));
                }
            }
        }
    }
    (others, categories)
}

/// `(CRD, short name)` of every Cluster API CRD in `../shared/capi-crds` (each version there).
fn capi_short_names(dir: &Path) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for version in std::fs::read_dir(dir).expect("capi-crds").flatten() {
        for file in capstan_testenv::crd_files(&version.path()).expect("CRD files") {
            for crd in read_yaml_docs(&file) {
                for short in crd["spec"]["names"]["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    names.push((
                        crd["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                        short.as_str().unwrap_or_default().to_string(),
                    ));
                }
            }
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_names_are_nobody_elses_and_every_crd_is_in_the_capstan_category() {
    let test = "short_names_are_nobody_elses_and_every_crd_is_in_the_capstan_category";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(capi) = capstan_testenv::shared_path("capi-crds") else {
        capstan_testenv::skip_or_fail(test, "Cluster API CRDs not found at ../shared/capi-crds");
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "short-names")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    install_our_crds(&client).await;
    let (served, categories) = served_names(&client).await;
    // The discovery is complete enough to have caught the old `csr`.
    assert!(
        served.contains(&(
            "certificatesigningrequests.certificates.k8s.io".to_string(),
            "csr".to_string()
        )),
        "{served:?}"
    );
    let capi = capi_short_names(&capi);
    assert!(capi.iter().any(|(_, short)| short == "cl"), "{capi:?}");
    for crd in api::crds() {
        for short in crd.spec.names.short_names.iter().flatten() {
            let taken: Vec<&String> = served
                .iter()
                .chain(&capi)
                .filter(|(_, s)| s == short)
                .map(|(name, _)| name)
                .collect();
            assert!(
                taken.is_empty(),
                "{}'s short name {short:?} is also {taken:?}'s",
                crd.spec.names.kind
            );
        }
    }
    // `kubectl get capstan` lists every capstan kind.
    assert_eq!(categories.len(), 4, "{categories:?}");
    for (resource, categories) in &categories {
        assert_eq!(categories, &["capstan"], "{resource}");
    }
}
