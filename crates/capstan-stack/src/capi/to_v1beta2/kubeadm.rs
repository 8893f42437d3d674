//! KubeadmControlPlaneTemplate and KubeadmConfigTemplate `v1beta1` → `v1beta2`, as Cluster
//! API's kubeadm providers (v1.11–v1.14) convert them:
//! - `extraArgs` of the API server, controller manager, scheduler and local etcd, and the
//!   node registrations' `kubeletExtraArgs`: mappings → lists of `{name, value}` (by name);
//! - `clusterConfiguration.apiServer.timeoutForControlPlane` →
//!   `{init,join}Configuration.timeouts.controlPlaneComponentHealthCheckSeconds`;
//!   `joinConfiguration.discovery.timeout` → `joinConfiguration.timeouts.tlsBootstrapSeconds`;
//!   `bootstrapTokens[].ttl` → `ttlSeconds`;
//! - dropped as Cluster API drops them (reported): `clusterConfiguration.{networking,
//!   kubernetesVersion, clusterName}` (taken from the Cluster), the kubeadm types'
//!   `apiVersion`/`kind`, `useExperimentalRetryJoin`;
//! - a control plane template's `machineTemplate.node…Timeout` →
//!   `machineTemplate.spec.deletion.node…TimeoutSeconds`, `machineTemplate.taints` →
//!   `machineTemplate.spec.taints`, `machineNamingStrategy` → `machineNaming`,
//!   `remediationStrategy` → `remediation` (periods in seconds), `rolloutAfter` /
//!   `rolloutBefore` / `rolloutStrategy` → `rollout.after` / `before` / `strategy`.

use serde_json::Value;

use super::edit::{Ctx, Object, deletion_timeouts_at, join, put, rename};
use super::refusal::ConversionError;

/// The fields of a `v1beta1` KubeadmConfigSpec whose shape changed (`*`: any list item).
pub const CHANGED_IN_CONFIG_SPEC: [&str; 19] = [
    "useExperimentalRetryJoin",
    "clusterConfiguration.apiVersion",
    "clusterConfiguration.kind",
    "clusterConfiguration.kubernetesVersion",
    "clusterConfiguration.clusterName",
    "clusterConfiguration.networking",
    "clusterConfiguration.apiServer.timeoutForControlPlane",
    "clusterConfiguration.apiServer.extraArgs",
    "clusterConfiguration.controllerManager.extraArgs",
    "clusterConfiguration.scheduler.extraArgs",
    "clusterConfiguration.etcd.local.extraArgs",
    "initConfiguration.apiVersion",
    "initConfiguration.kind",
    "initConfiguration.bootstrapTokens.*.ttl",
    "initConfiguration.nodeRegistration.kubeletExtraArgs",
    "joinConfiguration.apiVersion",
    "joinConfiguration.kind",
    "joinConfiguration.discovery.timeout",
    "joinConfiguration.nodeRegistration.kubeletExtraArgs",
];

/// The fields of a `v1beta1` KubeadmControlPlaneTemplate's `spec.template.spec` (beside its
/// kubeadmConfigSpec) whose shape changed.
pub const CHANGED_IN_CONTROL_PLANE_SPEC: [&str; 9] = [
    "machineTemplate.nodeDrainTimeout",
    "machineTemplate.nodeVolumeDetachTimeout",
    "machineTemplate.nodeDeletionTimeout",
    "machineTemplate.taints",
    "machineNamingStrategy",
    "remediationStrategy",
    "rolloutAfter",
    "rolloutBefore",
    "rolloutStrategy",
];

const FROM_CLUSTER: &str =
    "Cluster API v1beta2 takes it from the Cluster (spec.clusterNetwork, spec.topology.version, its name)";
const TYPE_META: &str = "kubeadm's type metadata, which Cluster API writes itself";
const RETRY_JOIN: &str = "removed in v1beta2; Cluster API's own conversion drops it";

pub fn control_plane_template(ctx: &mut Ctx, spec: &mut Object) -> Result<(), ConversionError> {
    let path = "spec.template.spec";
    let Some(template) = ctx.object_field(spec, "template", "spec")? else {
        return Ok(());
    };
    let Some(inner) = ctx.object_field(template, "spec", "spec.template")? else {
        return Ok(());
    };
    if let Some(config) = ctx.object_field(inner, "kubeadmConfigSpec", path)? {
        config_spec(ctx, config, &join(path, "kubeadmConfigSpec"))?;
    }
    if let Some(machine) = ctx.object_field(inner, "machineTemplate", path)? {
        let machine_path = join(path, "machineTemplate");
        deletion_timeouts_at(ctx, machine, &machine_path, &["spec", "deletion"])?;
        rename(machine, "taints", &["spec", "taints"]);
    }
    rename(inner, "machineNamingStrategy", &["machineNaming"]);
    if let Some(mut strategy) = ctx.take_object(inner, "remediationStrategy", path)? {
        let strategy_path = join(path, "remediationStrategy");
        let mut remediation = Object::new();
        if let Some(retries) = strategy.remove("maxRetry") {
            remediation.insert("maxRetry".into(), retries);
        }
        for (from, to) in [
            ("minHealthyPeriod", "minHealthyPeriodSeconds"),
            ("retryPeriod", "retryPeriodSeconds"),
        ] {
            if let Some(seconds) = ctx.take_seconds(&mut strategy, from, &strategy_path)? {
                remediation.insert(to.into(), seconds);
            }
        }
        ctx.nothing_left(&strategy, &strategy_path, "KubeadmControlPlaneTemplate")?;
        inner.insert("remediation".into(), Value::Object(remediation));
    }
    rename(inner, "rolloutAfter", &["rollout", "after"]);
    rename(inner, "rolloutBefore", &["rollout", "before"]);
    rename(inner, "rolloutStrategy", &["rollout", "strategy"]);
    Ok(())
}

pub fn config_template(ctx: &mut Ctx, spec: &mut Object) -> Result<(), ConversionError> {
    let Some(template) = ctx.object_field(spec, "template", "spec")? else {
        return Ok(());
    };
    match ctx.object_field(template, "spec", "spec.template")? {
        Some(config) => config_spec(ctx, config, "spec.template.spec"),
        None => Ok(()),
    }
}

/// A KubeadmConfigSpec at `path`.
fn config_spec(ctx: &mut Ctx, spec: &mut Object, path: &str) -> Result<(), ConversionError> {
    ctx.drop_field(spec, "useExperimentalRetryJoin", path, RETRY_JOIN);
    let mut control_plane_health_check = None;
    if let Some(cluster) = ctx.object_field(spec, "clusterConfiguration", path)? {
        let cluster_path = join(path, "clusterConfiguration");
        let mut cluster = std::mem::take(cluster);
        for key in ["apiVersion", "kind"] {
            ctx.drop_field(&mut cluster, key, &cluster_path, TYPE_META);
        }
        for key in ["networking", "kubernetesVersion", "clusterName"] {
            ctx.drop_field(&mut cluster, key, &cluster_path, FROM_CLUSTER);
        }
        if let Some(api_server) = ctx.object_field(&mut cluster, "apiServer", &cluster_path)? {
            let api_server_path = join(&cluster_path, "apiServer");
            control_plane_health_check =
                ctx.take_seconds(api_server, "timeoutForControlPlane", &api_server_path)?;
            ctx.args_to_list(api_server, "extraArgs", &api_server_path)?;
        }
        for component in ["controllerManager", "scheduler"] {
            if let Some(holder) = ctx.object_field(&mut cluster, component, &cluster_path)? {
                ctx.args_to_list(holder, "extraArgs", &join(&cluster_path, component))?;
            }
        }
        if let Some(etcd) = ctx.object_field(&mut cluster, "etcd", &cluster_path)? {
            let etcd_path = join(&cluster_path, "etcd");
            if let Some(local) = ctx.object_field(etcd, "local", &etcd_path)? {
                ctx.args_to_list(local, "extraArgs", &join(&etcd_path, "local"))?;
            }
        }
        spec.insert("clusterConfiguration".into(), Value::Object(cluster));
    }
    if let Some(seconds) = control_plane_health_check {
        for configuration in ["initConfiguration", "joinConfiguration"] {
            put(
                spec,
                &[
                    configuration,
                    "timeouts",
                    "controlPlaneComponentHealthCheckSeconds",
                ],
                seconds.clone(),
            );
        }
    }
    for configuration in ["initConfiguration", "joinConfiguration"] {
        let configuration_path = join(path, configuration);
        let Some(held) = ctx.object_field(spec, configuration, path)? else {
            continue;
        };
        let mut held = std::mem::take(held);
        for key in ["apiVersion", "kind"] {
            ctx.drop_field(&mut held, key, &configuration_path, TYPE_META);
        }
        if let Some(registration) = ctx.object_field(&mut held, "nodeRegistration", &configuration_path)? {
            ctx.args_to_list(
                registration,
                "kubeletExtraArgs",
                &join(&configuration_path, "nodeRegistration"),
            )?;
        }
        for (token_path, token) in ctx.list_of_objects(&mut held, "bootstrapTokens", &configuration_path)? {
            if let Some(seconds) = ctx.take_seconds(token, "ttl", &token_path)? {
                token.insert("ttlSeconds".into(), seconds);
            }
        }
        if let Some(discovery) = ctx.object_field(&mut held, "discovery", &configuration_path)? {
            let discovery_path = join(&configuration_path, "discovery");
            if let Some(seconds) = ctx.take_seconds(discovery, "timeout", &discovery_path)? {
                put(&mut held, &["timeouts", "tlsBootstrapSeconds"], seconds);
            }
        }
        spec.insert(configuration.into(), Value::Object(held));
    }
    Ok(())
}
