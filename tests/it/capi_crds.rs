//! Cluster API v1.14's CRDs on the v1.20 test API server, serving only v1beta2 (what Cluster
//! API v1.16 will be): installed by the harness without what that server does not know, and
//! a v1beta2 Cluster created and read there through capstan's typed model.

use capstan_stack::capi::{CapiVersion, ClusterFields};
use capstan_stack::values::parse_json_object;
use capstan_testenv::{Binaries, CrdOptions, TestCluster, install_crds, install_crds_with};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};

fn clusters(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", version, "Cluster"),
        "clusters",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta2_cluster_is_created_and_read_on_v1beta2_only_crds() {
    let test = "a_v1beta2_cluster_is_created_and_read_on_v1beta2_only_crds";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(shared) = capstan_testenv::shared::dir(test) else {
        return;
    };
    let crds = shared.join("capi-crds/v1.14.0-rc.1");
    // Its own server: the shared one has v1.6's Cluster CRD, which other tests use.
    let cluster = TestCluster::start(&bins, "capi-v1beta2")
        .await
        .expect("cluster starts");
    let client = cluster.client();

    // As they are, the v1.20 server refuses some of them.
    let refused = install_crds(&client, &crds)
        .await
        .expect_err("refused as they are");
    assert!(
        refused.to_string().contains("x-kubernetes-validations")
            || refused.to_string().contains("must be of type string"),
        "{refused}"
    );

    let names = install_crds_with(&client, &crds, &CrdOptions::v1beta2_only())
        .await
        .expect("installed without what v1.20 does not know");
    assert_eq!(names.len(), 25);

    let path = std::path::Path::new(capstan_testenv::REPO_ROOT).join("testdata/cluster-v1beta2.yaml");
    let mut object =
        parse_json_object(&std::fs::read_to_string(&path).expect("fixture"), &path).expect("object");
    object.as_object_mut().expect("mapping").remove("status");
    let object: DynamicObject = serde_json::from_value(object).expect("DynamicObject");
    let ns = "tenant-a";
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &clusters("v1beta2"));
    api.create(&PostParams::default(), &object)
        .await
        .expect("v1beta2 Cluster created");
    let read = api.get("harbor-east").await.expect("read back");
    let fields =
        ClusterFields::from_object(&serde_json::to_value(&read).expect("JSON")).expect("typed fields");
    assert_eq!(fields.version, CapiVersion::V1Beta2);
    assert_eq!(
        fields.class.as_ref().map(|c| c.name.as_str()),
        Some("docker-example-1-30-v1")
    );
    assert_eq!(fields.class_namespace(), Some(ns));
    assert_eq!(fields.kubernetes_version.as_deref(), Some("v1.30.4"));
    assert_eq!(
        fields
            .control_plane_ref
            .as_ref()
            .map(|r| (r.api_group.as_str(), r.kind.as_str(), r.name.as_str())),
        Some((
            "controlplane.cluster.x-k8s.io",
            "KubeadmControlPlane",
            "harbor-east-cp"
        ))
    );

    // v1beta1 is not served: no request can read the v1beta2 object through a conversion
    // that does not run here.
    let old: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &clusters("v1beta1"));
    let err = old.get("harbor-east").await.expect_err("v1beta1 is not served");
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 404), "{err}");
}
