use serde_json::{Value, json};

use super::edit::go_duration_seconds;
use super::*;

fn object(api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec})
}

fn converted(api_version: &str, kind: &str, spec: Value) -> Value {
    convert(&object(api_version, kind, spec), "ns")
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("not converted"))
        .object
}

fn refused(api_version: &str, kind: &str, spec: Value) -> ConversionError {
    match convert(&object(api_version, kind, spec), "ns") {
        Err(e) => e,
        Ok(out) => panic!("converted: {out:?}"),
    }
}

const CC: &str = "cluster.x-k8s.io/v1beta1";
const KCPT: &str = "controlplane.cluster.x-k8s.io/v1beta1";
const KCT: &str = "bootstrap.cluster.x-k8s.io/v1beta1";
const DOCKER: &str = "infrastructure.cluster.x-k8s.io/v1beta1";

fn kcp_ref() -> Value {
    json!({"apiVersion": KCPT, "kind": "KubeadmControlPlaneTemplate", "name": "cp"})
}

#[test]
fn durations_as_cluster_api_makes_seconds() {
    for (text, seconds) in [
        ("0", 0),
        ("0s", 0),
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("1m30.9s", 90),
        ("500ms", 0),
        ("-2m", -120),
        ("1000000h", i64::from(i32::MAX)),
    ] {
        assert_eq!(go_duration_seconds(text), Ok(seconds), "{text}");
    }
    for bad in ["", "10", "ten minutes", "5d", "1h-2m"] {
        assert!(go_duration_seconds(bad).is_err(), "{bad}");
    }
}

#[test]
fn other_objects_are_left_alone() {
    for (api_version, kind) in [
        ("cluster.x-k8s.io/v1beta2", "ClusterClass"),
        (
            "infrastructure.cluster.x-k8s.io/v1beta1",
            "OpenStackMachineTemplate",
        ),
        ("v1", "ConfigMap"),
        (
            "controlplane.cluster.x-k8s.io/v1beta2",
            "KubeadmControlPlaneTemplate",
        ),
    ] {
        assert_eq!(convert(&object(api_version, kind, json!({})), "ns"), Ok(None));
    }
}

/// Each ClusterClass field change: a v1beta1 spec and the v1beta2 spec it becomes.
#[test]
fn cluster_class_field_by_field() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "infrastructure.ref → templateRef, a converted kind's version moved",
            json!({"infrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerClusterTemplate", "name": "c", "namespace": "ns"}}}),
            json!({"infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate", "name": "c"}}}),
        ),
        (
            "another provider's kind keeps its version",
            json!({"infrastructure": {"ref": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackClusterTemplate", "name": "o"}}}),
            json!({"infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackClusterTemplate", "name": "o"}}}),
        ),
        (
            "infrastructureNamingStrategy → infrastructure.naming",
            json!({"infrastructureNamingStrategy": {"template": "{{ .cluster.name }}-x"}}),
            json!({"infrastructure": {"naming": {"template": "{{ .cluster.name }}-x"}}}),
        ),
        (
            "controlPlane.ref, machineInfrastructure.ref, namingStrategy, timeouts",
            json!({"controlPlane": {"ref": kcp_ref(), "metadata": {"labels": {"a": "b"}},
                "machineInfrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerMachineTemplate", "name": "m"}},
                "namingStrategy": {"template": "t"}, "nodeDrainTimeout": "5m", "nodeVolumeDetachTimeout": "1h",
                "nodeDeletionTimeout": "10s"}}),
            json!({"controlPlane": {"templateRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate", "name": "cp"},
                "metadata": {"labels": {"a": "b"}},
                "machineInfrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachineTemplate", "name": "m"}},
                "naming": {"template": "t"},
                "deletion": {"nodeDrainTimeoutSeconds": 300, "nodeVolumeDetachTimeoutSeconds": 3600, "nodeDeletionTimeoutSeconds": 10}}}),
        ),
        (
            "machineHealthCheck → healthCheck",
            json!({"controlPlane": {"machineHealthCheck": {"maxUnhealthy": "33%", "nodeStartupTimeout": "10m",
                "unhealthyRange": "[1-3]",
                "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "300s"}],
                "unhealthyMachineConditions": [{"type": "Healthy", "status": "False", "timeout": "1m"}],
                "remediationTemplate": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "R", "name": "r", "namespace": "ns"}}}}),
            json!({"controlPlane": {"healthCheck": {
                "checks": {"nodeStartupTimeoutSeconds": 600,
                    "unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 300}],
                    "unhealthyMachineConditions": [{"type": "Healthy", "status": "False", "timeoutSeconds": 60}]},
                "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": "33%", "unhealthyInRange": "[1-3]"},
                    "templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "R", "name": "r"}}}}}),
        ),
        (
            "a MachineDeployment class: template → bootstrap/infrastructure/metadata; strategy split",
            json!({"workers": {"machineDeployments": [{"class": "w", "minReadySeconds": 5,
                "template": {"metadata": {"labels": {"l": "v"}},
                    "bootstrap": {"ref": {"apiVersion": KCT, "kind": "KubeadmConfigTemplate", "name": "b"}},
                    "infrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerMachineTemplate", "name": "i"}}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%", "deletePolicy": "Oldest"},
                    "remediation": {"maxInFlight": 2}},
                "machineHealthCheck": {"maxUnhealthy": 3},
                "namingStrategy": {"template": "n"}, "nodeDrainTimeout": "1m"}]}}),
            json!({"workers": {"machineDeployments": [{"class": "w", "minReadySeconds": 5,
                "metadata": {"labels": {"l": "v"}},
                "bootstrap": {"templateRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate", "name": "b"}},
                "infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachineTemplate", "name": "i"}},
                "rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}}},
                "deletion": {"order": "Oldest", "nodeDrainTimeoutSeconds": 60},
                "healthCheck": {"remediation": {"maxInFlight": 2, "triggerIf": {"unhealthyLessThanOrEqualTo": 3}}},
                "naming": {"template": "n"}}]}}),
        ),
        (
            "a MachinePool class",
            json!({"workers": {"machinePools": [{"class": "p",
                "template": {"bootstrap": {"ref": {"apiVersion": KCT, "kind": "KubeadmConfigTemplate", "name": "b"}},
                    "infrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerMachinePoolTemplate", "name": "i"}}},
                "nodeDeletionTimeout": "2m"}]}}),
            json!({"workers": {"machinePools": [{"class": "p",
                "bootstrap": {"templateRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate", "name": "b"}},
                "infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachinePoolTemplate", "name": "i"}},
                "deletion": {"nodeDeletionTimeoutSeconds": 120}}]}}),
        ),
        (
            "external patches renamed; a selector of a converted kind moves to v1beta2",
            json!({"patches": [
                {"name": "ext", "external": {"generateExtension": "g", "validateExtension": "v", "discoverVariablesExtension": "d"}},
                {"name": "inline", "definitions": [{"selector": {"apiVersion": KCPT, "kind": "KubeadmControlPlaneTemplate", "matchResources": {"controlPlane": true}},
                    "jsonPatches": [{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/imageRepository", "valueFrom": {"variable": "r"}}]}]}]}),
            json!({"patches": [
                {"name": "ext", "external": {"generatePatchesExtension": "g", "validateTopologyExtension": "v", "discoverVariablesExtension": "d"}},
                {"name": "inline", "definitions": [{"selector": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate", "matchResources": {"controlPlane": true}},
                    "jsonPatches": [{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/imageRepository", "valueFrom": {"variable": "r"}}]}]}]}),
        ),
        (
            "variables' metadata → deprecatedV1Beta1Metadata",
            json!({"variables": [{"name": "v", "required": true, "metadata": {"labels": {"a": "b"}},
                "schema": {"openAPIV3Schema": {"type": "string", "default": ""}}}]}),
            json!({"variables": [{"name": "v", "required": true, "deprecatedV1Beta1Metadata": {"labels": {"a": "b"}},
                "schema": {"openAPIV3Schema": {"type": "string", "default": ""}}}]}),
        ),
    ];
    for (what, from, to) in cases {
        let out = converted(CC, "ClusterClass", from);
        assert_eq!(out["apiVersion"], "cluster.x-k8s.io/v1beta2", "{what}");
        assert_eq!(out["spec"], to, "{what}");
    }
}

/// What cannot be said in v1beta2, each refused naming its field.
#[test]
fn cluster_class_refusals_name_the_field() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"infrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerClusterTemplate", "name": "c", "namespace": "other"}}}),
            "spec.infrastructure.ref.namespace",
        ),
        (
            json!({"controlPlane": {"ref": {"apiVersion": KCPT, "kind": "KubeadmControlPlaneTemplate", "name": "c", "uid": "1"}}}),
            "spec.controlPlane.ref.uid",
        ),
        (
            json!({"controlPlane": {"machineHealthCheck": {"nodeStartupTimeout": "ten"}}}),
            "spec.controlPlane.machineHealthCheck.nodeStartupTimeout",
        ),
        (
            json!({"controlPlane": {"machineHealthCheck": {"maxUnhealthy": 1, "surprise": true}}}),
            "spec.controlPlane.machineHealthCheck.surprise",
        ),
        (
            json!({"workers": {"machineDeployments": [{"class": "w", "template": {"bootstrap": {"ref": kcp_ref()}, "extra": 1}}]}}),
            "spec.workers.machineDeployments[0].template.extra",
        ),
        (
            json!({"workers": {"machineDeployments": [{"class": "w", "strategy": {"rollingUpdate": {"maxSkew": 1}}}]}}),
            "spec.workers.machineDeployments[0].strategy.rollingUpdate.maxSkew",
        ),
        (
            json!({"controlPlane": {"ref": kcp_ref(), "replicas": 3}}),
            "spec.controlPlane.replicas",
        ),
        (
            json!({"patches": [{"name": "oidc", "definitions": [{"selector": {"apiVersion": KCPT, "kind": "KubeadmControlPlaneTemplate"},
                "jsonPatches": [{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs/oidc-client-id", "valueFrom": {"variable": "c"}}]}]}]}),
            "spec.patches[0].definitions[0].jsonPatches[0].path",
        ),
    ];
    for (spec, field) in cases {
        let error = refused(CC, "ClusterClass", spec);
        assert_eq!(error.field, field, "{error}");
        assert_eq!(error.object, "ClusterClass x");
    }
}

#[test]
fn patches_reaching_a_changed_field() {
    for (kind, path, reaches) in [
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/imageRepository",
            false,
        ),
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/kubeadmConfigSpec/files/-",
            false,
        ),
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs/x",
            true,
        ),
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration",
            true,
        ),
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/rolloutStrategy/type",
            true,
        ),
        (
            "KubeadmControlPlaneTemplate",
            "/spec/template/spec/kubeadmConfigSpec/initConfiguration/bootstrapTokens/0/ttl",
            true,
        ),
        (
            "KubeadmConfigTemplate",
            "/spec/template/spec/joinConfiguration/nodeRegistration/kubeletExtraArgs",
            true,
        ),
        (
            "KubeadmConfigTemplate",
            "/spec/template/spec/joinConfiguration/nodeRegistration/taints",
            false,
        ),
        (
            "DockerClusterTemplate",
            "/spec/template/spec/failureDomains",
            true,
        ),
        ("DockerMachineTemplate", "/spec/template/spec/customImage", false),
    ] {
        assert_eq!(
            cluster_class::changed_field_reached(kind, path).is_some(),
            reaches,
            "{kind} {path}"
        );
    }
}

#[test]
fn kubeadm_control_plane_template_field_by_field() {
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "extraArgs and kubeletExtraArgs → sorted lists",
            json!({"kubeadmConfigSpec": {
                "clusterConfiguration": {"apiServer": {"certSANs": ["a"], "extraArgs": {"profiling": "false", "audit-log-maxage": "30"}},
                    "controllerManager": {"extraArgs": {"bind-address": "0.0.0.0"}},
                    "scheduler": {"extraArgs": {"secure-port": "10259"}},
                    "etcd": {"local": {"dataDir": "/d", "extraArgs": {"snapshot-count": "1"}}}},
                "initConfiguration": {"nodeRegistration": {"kubeletExtraArgs": {"eviction-hard": "x"}}},
                "joinConfiguration": {"nodeRegistration": {"criSocket": "s", "kubeletExtraArgs": {"b": "2", "a": "1"}}}}}),
            json!({"kubeadmConfigSpec": {
                "clusterConfiguration": {"apiServer": {"certSANs": ["a"], "extraArgs": [{"name": "audit-log-maxage", "value": "30"}, {"name": "profiling", "value": "false"}]},
                    "controllerManager": {"extraArgs": [{"name": "bind-address", "value": "0.0.0.0"}]},
                    "scheduler": {"extraArgs": [{"name": "secure-port", "value": "10259"}]},
                    "etcd": {"local": {"dataDir": "/d", "extraArgs": [{"name": "snapshot-count", "value": "1"}]}}},
                "initConfiguration": {"nodeRegistration": {"kubeletExtraArgs": [{"name": "eviction-hard", "value": "x"}]}},
                "joinConfiguration": {"nodeRegistration": {"criSocket": "s", "kubeletExtraArgs": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}}}}),
            vec![],
        ),
        (
            "timeouts move; networking, version, name, type metadata dropped (reported)",
            json!({"kubeadmConfigSpec": {
                "clusterConfiguration": {"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "ClusterConfiguration",
                    "kubernetesVersion": "v1.30.0", "clusterName": "c",
                    "networking": {"podSubnet": "192.168.0.0/16"}, "apiServer": {"timeoutForControlPlane": "20m"}},
                "initConfiguration": {"bootstrapTokens": [{"token": "t", "ttl": "24h"}]},
                "joinConfiguration": {"discovery": {"timeout": "5m", "bootstrapToken": {"apiServerEndpoint": "e"}}},
                "useExperimentalRetryJoin": true}}),
            json!({"kubeadmConfigSpec": {
                "initConfiguration": {"bootstrapTokens": [{"token": "t", "ttlSeconds": 86400}],
                    "timeouts": {"controlPlaneComponentHealthCheckSeconds": 1200}},
                "joinConfiguration": {"discovery": {"bootstrapToken": {"apiServerEndpoint": "e"}},
                    "timeouts": {"controlPlaneComponentHealthCheckSeconds": 1200, "tlsBootstrapSeconds": 300}}}}),
            vec![
                "spec.template.spec.kubeadmConfigSpec.useExperimentalRetryJoin",
                "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.apiVersion",
                "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.kind",
                "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.networking",
                "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.kubernetesVersion",
                "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.clusterName",
            ],
        ),
        (
            "machine template, naming, remediation, rollout",
            json!({"machineTemplate": {"metadata": {"labels": {"a": "b"}}, "nodeDrainTimeout": "1m",
                    "taints": [{"key": "k", "effect": "NoSchedule", "propagation": "Always"}]},
                "machineNamingStrategy": {"template": "t"},
                "remediationStrategy": {"maxRetry": 3, "minHealthyPeriod": "1h", "retryPeriod": "5m"},
                "rolloutAfter": "2026-01-01T00:00:00Z", "rolloutBefore": {"certificatesExpiryDays": 21},
                "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}),
            json!({"machineTemplate": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"deletion": {"nodeDrainTimeoutSeconds": 60},
                        "taints": [{"key": "k", "effect": "NoSchedule", "propagation": "Always"}]}},
                "machineNaming": {"template": "t"},
                "remediation": {"maxRetry": 3, "minHealthyPeriodSeconds": 3600, "retryPeriodSeconds": 300},
                "rollout": {"after": "2026-01-01T00:00:00Z", "before": {"certificatesExpiryDays": 21},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            vec![],
        ),
    ];
    for (what, from, to, dropped) in cases {
        let input = object(
            KCPT,
            "KubeadmControlPlaneTemplate",
            json!({"template": {"spec": from}}),
        );
        let out = convert(&input, "ns")
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .unwrap_or_else(|| panic!("{what}"));
        assert_eq!(out.object["apiVersion"], "controlplane.cluster.x-k8s.io/v1beta2");
        assert_eq!(out.object["spec"]["template"]["spec"], to, "{what}");
        let mut got: Vec<&str> = out.dropped.iter().map(|d| d.field.as_str()).collect();
        let mut want = dropped.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn kubeadm_config_template_and_refusals() {
    let out = converted(
        KCT,
        "KubeadmConfigTemplate",
        json!({"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": {"provider-id": "p"}}}, "files": [{"path": "/f", "content": "c"}]}}}),
    );
    assert_eq!(out["apiVersion"], "bootstrap.cluster.x-k8s.io/v1beta2");
    assert_eq!(
        out["spec"],
        json!({"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": [{"name": "provider-id", "value": "p"}]}}, "files": [{"path": "/f", "content": "c"}]}}})
    );
    for (spec, field) in [
        (
            json!({"template": {"spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": {"n": 1}}}}}}),
            "spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs.n",
        ),
        (
            json!({"template": {"spec": {"joinConfiguration": {"discovery": {"timeout": 5}}}}}),
            "spec.template.spec.joinConfiguration.discovery.timeout",
        ),
        (
            json!({"template": {"spec": {"preKubeadmCommand": ["typo"]}}}),
            "spec.template.spec.preKubeadmCommand",
        ),
    ] {
        let error = refused(KCT, "KubeadmConfigTemplate", spec);
        assert_eq!(error.field, field, "{error}");
    }
}

#[test]
fn docker_templates() {
    let out = converted(
        DOCKER,
        "DockerClusterTemplate",
        json!({"template": {"spec": {"failureDomains": {"b": {"controlPlane": true}, "a": {"attributes": {"x": "y"}}}, "loadBalancer": {"imageTag": "t"}}}}),
    );
    assert_eq!(out["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2");
    assert_eq!(
        out["spec"]["template"]["spec"],
        json!({"failureDomains": [{"name": "a", "attributes": {"x": "y"}}, {"name": "b", "controlPlane": true}], "loadBalancer": {"imageTag": "t"}})
    );
    let machine = json!({"template": {"spec": {"customImage": "kindest/node:v1.30.4", "extraMounts": [{"containerPath": "/a", "hostPath": "/a"}]}}});
    for kind in ["DockerMachineTemplate", "DockerMachinePoolTemplate"] {
        let spec = if kind == "DockerMachineTemplate" {
            machine.clone()
        } else {
            json!({"template": {"spec": {"template": {"customImage": "i"}}}})
        };
        let out = converted(DOCKER, kind, spec.clone());
        assert_eq!(
            out["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2",
            "{kind}"
        );
        assert_eq!(out["spec"], spec, "{kind}");
    }
    let error = refused(
        DOCKER,
        "DockerMachineTemplate",
        json!({"template": {"spec": {"customImages": "typo"}}}),
    );
    assert_eq!(error.field, "spec.template.spec.customImages");
    assert!(matches!(error.refusal, Refusal::Unknown { .. }));
}

#[test]
fn the_v1beta2_fields_are_there_for_every_converted_kind() {
    for (group, kind) in CONVERTED_KINDS {
        assert!(
            SCHEMAS.get(format!("{group}/v1beta2/{kind}")).is_some(),
            "{group} {kind}"
        );
    }
}

#[test]
fn what_is_applied_for_the_version_spoken() {
    let v1beta1 = object(
        CC,
        "ClusterClass",
        json!({"infrastructure": {"ref": {"apiVersion": DOCKER, "kind": "DockerClusterTemplate", "name": "c"}}}),
    );
    let v1beta2 = object("cluster.x-k8s.io/v1beta2", "ClusterClass", json!({}));
    let other = object("v1", "ConfigMap", json!({}));
    let speak1 = CapiVersion::V1Beta1;
    let speak2 = CapiVersion::V1Beta2;
    assert_eq!(for_cluster_api(&v1beta1, speak1, "ns"), Ok(None));
    assert_eq!(for_cluster_api(&other, speak1, "ns"), Ok(None));
    assert_eq!(for_cluster_api(&other, speak2, "ns"), Ok(None));
    assert_eq!(for_cluster_api(&v1beta2, speak2, "ns"), Ok(None));
    let converted = for_cluster_api(&v1beta1, speak2, "ns").unwrap().unwrap();
    assert_eq!(converted.object["apiVersion"], "cluster.x-k8s.io/v1beta2");
    let refused = for_cluster_api(&v1beta2, speak1, "ns").unwrap_err();
    assert!(matches!(refused, ClassVersionError::NotServed { ref kind, .. } if kind == "ClusterClass"));
    assert!(
        refused
            .to_string()
            .contains("ClusterClass x is cluster.x-k8s.io/v1beta2"),
        "{refused}"
    );
}

/// Empty structs v1beta2 does not allow are left out, as Cluster API's typed conversion
/// leaves them out; an empty mapping v1beta2 allows, and a variable's default, stay.
#[test]
fn empty_structs_are_left_out() {
    let out = converted(
        KCPT,
        "KubeadmControlPlaneTemplate",
        json!({"template": {"metadata": {}, "spec": {"kubeadmConfigSpec": {
            "clusterConfiguration": {"apiServer": {"timeoutForControlPlane": "5m"}, "dns": {}},
            "joinConfiguration": {"discovery": {"timeout": "1m"}}}}}}),
    );
    assert_eq!(
        out["spec"],
        json!({"template": {"spec": {"kubeadmConfigSpec": {
            "initConfiguration": {"timeouts": {"controlPlaneComponentHealthCheckSeconds": 300}},
            "joinConfiguration": {"timeouts": {"controlPlaneComponentHealthCheckSeconds": 300, "tlsBootstrapSeconds": 60}}}}}})
    );
    let docker = converted(DOCKER, "DockerClusterTemplate", json!({"template": {"spec": {}}}));
    assert_eq!(docker["spec"], json!({"template": {"spec": {}}}));
    let class = converted(
        CC,
        "ClusterClass",
        json!({"variables": [{"name": "v", "required": false, "schema": {"openAPIV3Schema": {"type": "object", "default": {"a": {}}}}}]}),
    );
    assert_eq!(
        class["spec"]["variables"][0]["schema"]["openAPIV3Schema"]["default"],
        json!({"a": {}})
    );
}
