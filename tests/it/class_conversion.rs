//! A stack's ClusterClass chart on a management cluster that serves only Cluster API's
//! v1beta2 (Cluster API v1.14's CRDs as v1.16 will serve them, issue 47), on the real API
//! server: what `capstan render --cluster-api v1beta2` prints — what the operator applies —
//! is accepted by the server and read back with nothing pruned, for the example stack, the
//! docker-ferrol releases of `../shared` and the OpenStack sources; a field the conversion
//! does not know is refused naming it (the server would have pruned it without a word).

use std::process::Command;

use capstan_stack::capi::to_v1beta2::{self, Refusal};
use capstan_testenv::{Binaries, CrdOptions, TestCluster, install_crds_with};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::Value;

const NS: &str = "stacks";

/// `capstan render ARGS -o json` run in the repository: its objects (of a whole release,
/// only the ClusterClass part's); `Err(stderr)` when it fails.
fn rendered(args: &[&str]) -> Result<Vec<Value>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["render", "-n", NS, "-o", "json"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("capstan runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let list = json.as_array().expect("a list").clone();
    // A whole release: a list of parts.
    if list.first().is_some_and(|p| p.get("part").is_some()) {
        let class = list
            .iter()
            .find(|p| p["part"] == "cluster-class")
            .expect("a ClusterClass part");
        return Ok(class["objects"].as_array().expect("objects").clone());
    }
    Ok(list)
}

fn resource_of(object: &Value) -> ApiResource {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().expect("kind");
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural(kind))
}

fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// The paths where `stored` lacks or changed what `sent` has (defaults the server adds are
/// no difference).
fn lost(sent: &Value, stored: &Value, path: &str, found: &mut Vec<String>) {
    match (sent, stored) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(other) => lost(value, other, &format!("{path}.{key}"), found),
                    None => found.push(format!("{path}.{key}")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                lost(x, y, &format!("{path}[{i}]"), found);
            }
        }
        (a, b) if a == b => {}
        _ => found.push(format!("{path} (sent {sent}, stored {stored})")),
    }
}

/// Creates `objects` (renamed by `prefix`, so that releases do not collide) and reads each
/// back: the paths the server lost, by object.
async fn create_and_compare(client: &kube::Client, prefix: &str, objects: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for object in objects {
        let mut object = object.clone();
        let name = format!("{prefix}-{}", object["metadata"]["name"].as_str().expect("name"));
        object["metadata"]["name"] = Value::String(name.clone());
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &resource_of(&object));
        let typed: DynamicObject = serde_json::from_value(object.clone()).expect("DynamicObject");
        if let Err(e) = api.create(&PostParams::default(), &typed).await {
            problems.push(format!("{} {name}: refused: {e}", object["kind"]));
            continue;
        }
        let stored = serde_json::to_value(api.get(&name).await.expect("read back")).expect("JSON");
        let mut found = Vec::new();
        lost(&object["spec"], &stored["spec"], "spec", &mut found);
        lost(
            &object["metadata"]["labels"],
            &stored["metadata"]["labels"],
            "metadata.labels",
            &mut found,
        );
        assert_eq!(stored["apiVersion"], object["apiVersion"]);
        problems.extend(
            found
                .into_iter()
                .map(|p| format!("{} {name}: lost {p}", object["kind"])),
        );
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_class_charts_convert_and_are_stored_whole_on_v1beta2_only_crds() {
    let test = "cluster_class_charts_convert_and_are_stored_whole_on_v1beta2_only_crds";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(shared) = capstan_testenv::shared::dir(test) else {
        return;
    };
    // Its own server: the shared one has v1.6's CRDs.
    let cluster = TestCluster::start(&bins, "class-v1beta2")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    install_crds_with(
        &client,
        &shared.join("capi-crds/v1.14.0-rc.1"),
        &CrdOptions::v1beta2_only(),
    )
    .await
    .expect("CRDs installed");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("ns"),
        )
        .await
        .expect("namespace");

    let mut sources: Vec<(String, Vec<String>)> = vec![(
        "example".into(),
        ["stacks/example", "--cluster", "testdata/cluster.yaml"]
            .map(String::from)
            .to_vec(),
    )];
    let releases = shared.join("cluster-stack-releases");
    let mut names: Vec<_> = std::fs::read_dir(&releases)
        .expect("releases")
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for release in names {
        let chart = std::fs::read_dir(&release)
            .expect("release")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("cluster-class"))
            .expect("a cluster-class chart");
        let name = release.file_name().unwrap().to_string_lossy().into_owned();
        sources.push((name, vec!["cc".into(), chart.display().to_string()]));
    }
    assert_eq!(sources.len(), 5, "the example and four docker-ferrol releases");

    let mut problems = Vec::new();
    let mut converted = 0;
    for (i, (name, args)) in sources.iter().enumerate() {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        // As rendered, v1beta1: refused by a server that serves only v1beta2.
        let as_rendered = rendered(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        let class = as_rendered
            .iter()
            .find(|o| o["kind"] == "ClusterClass")
            .expect("a ClusterClass");
        assert_eq!(class["apiVersion"], "cluster.x-k8s.io/v1beta1", "{name}");
        let refused = create_and_compare(&client, &format!("raw{i}"), std::slice::from_ref(class)).await;
        assert!(
            refused.len() == 1 && refused[0].contains("refused"),
            "{name}: v1beta1 is not served: {refused:?}"
        );

        args.extend(["--cluster-api", "v1beta2"]);
        let objects = rendered(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(objects.len(), as_rendered.len(), "{name}");
        for object in &objects {
            let api_version = object["apiVersion"].as_str().unwrap_or("");
            assert!(
                api_version.ends_with("/v1beta2"),
                "{name}: {} {api_version}",
                object["kind"]
            );
            converted += 1;
        }
        // The templates a ClusterClass names are the converted ones.
        let class = objects
            .iter()
            .find(|o| o["kind"] == "ClusterClass")
            .expect("a ClusterClass");
        assert_eq!(
            class["spec"]["controlPlane"]["templateRef"]["apiVersion"],
            "controlplane.cluster.x-k8s.io/v1beta2",
            "{name}"
        );
        problems.extend(create_and_compare(&client, &format!("s{i}"), &objects).await);
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(converted >= 25, "{converted} objects converted");

    // The OpenStack sources: their templates are the OpenStack provider's (not installed
    // here, not converted); their ClusterClass and kubeadm templates are. Their OIDC patches
    // write apiServer.extraArgs as a mapping, which v1beta2 no longer has: refused, naming
    // the patch.
    for source in ["scs", "scs2"] {
        let dir = shared
            .join("cluster-stacks-src/providers/openstack")
            .join(source)
            .join("cluster-class");
        if !dir.is_dir() {
            eprintln!(
                "skipping the OpenStack source {source}: {} not found",
                dir.display()
            );
            continue;
        }
        let dir = dir.display().to_string();
        let error = rendered(&["cc", &dir, "--cluster-api", "v1beta2"]).expect_err("refused");
        assert!(
            error.contains("jsonPatches[0].path")
                && error.contains("apiServer/extraArgs/oidc-client-id")
                && error.contains("changed its shape in v1beta2"),
            "{source}: {error}"
        );
        // Without those patches, every object it owns converts and is stored whole.
        let objects = rendered(&["cc", &dir]).expect("renders");
        let mut owned = Vec::new();
        for object in &objects {
            let mut object = object.clone();
            if object["kind"] == "ClusterClass"
                && let Some(patches) = object["spec"]["patches"].as_array_mut()
            {
                patches.retain(|p| !p.to_string().contains("extraArgs/oidc"));
            }
            match to_v1beta2::convert(&object, NS).unwrap_or_else(|e| panic!("{source}: {e}")) {
                Some(converted) => owned.push(converted.object),
                None => assert!(
                    !to_v1beta2::CONVERTED_KINDS
                        .iter()
                        .any(|(_, kind)| object["kind"] == *kind),
                    "{source}: {} left as rendered",
                    object["kind"]
                ),
            }
        }
        assert!(owned.len() >= 3, "{source}: {} converted", owned.len());
        let problems = create_and_compare(&client, source, &owned).await;
        assert!(problems.is_empty(), "{source}: {problems:#?}");
    }

    // A field the conversion does not know: refused, naming it. Sent as it is, the server
    // would have stored the object without it.
    let objects = rendered(&["stacks/example", "--cluster", "testdata/cluster.yaml"]).expect("renders");
    let mut class = objects
        .iter()
        .find(|o| o["kind"] == "ClusterClass")
        .expect("a ClusterClass")
        .clone();
    class["spec"]["workers"]["machineDeployments"][0]["replicaz"] = Value::from(3);
    let error = to_v1beta2::convert(&class, NS).expect_err("refused");
    assert_eq!(error.field, "spec.workers.machineDeployments[0].replicaz");
    assert!(matches!(error.refusal, Refusal::Unknown { .. }), "{error}");
    class["spec"]["workers"]["machineDeployments"][0]
        .as_object_mut()
        .expect("mapping")
        .remove("replicaz");
    let mut converted = to_v1beta2::convert(&class, NS)
        .expect("converts")
        .expect("converted")
        .object;
    converted["spec"]["workers"]["machineDeployments"][0]["replicaz"] = Value::from(3);
    let pruned = create_and_compare(&client, "pruned", &[converted]).await;
    assert_eq!(pruned.len(), 1, "{pruned:?}");
    assert!(
        pruned[0].contains("lost spec.workers.machineDeployments[0].replicaz"),
        "{pruned:?}"
    );
}
