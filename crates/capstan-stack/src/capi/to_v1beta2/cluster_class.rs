//! ClusterClass `v1beta1` → `v1beta2`, as Cluster API v1.11–v1.14 converts it:
//! - `infrastructure.ref`, `controlPlane.ref`, `controlPlane.machineInfrastructure.ref`, a
//!   worker class's `template.bootstrap.ref` / `template.infrastructure.ref` → `templateRef`
//!   (`{apiVersion, kind, name}`; the apiVersion of a kind converted too moves to `v1beta2`);
//!   a worker class's `template.metadata` → `metadata`;
//! - `infrastructureNamingStrategy` → `infrastructure.naming`, `namingStrategy` → `naming`;
//! - `node{Drain,VolumeDetach,Deletion}Timeout` → `deletion.node…TimeoutSeconds`;
//! - `machineHealthCheck` → `healthCheck`: `nodeStartupTimeout`, `unhealthyConditions`,
//!   `unhealthyMachineConditions` → `checks` (timeouts in seconds, node conditions as
//!   `unhealthyNodeConditions`); `maxUnhealthy` / `unhealthyRange` → `remediation.triggerIf`
//!   (`unhealthyLessThanOrEqualTo` / `unhealthyInRange`); `remediationTemplate` →
//!   `remediation.templateRef`;
//! - a MachineDeployment class's `strategy` → `rollout.strategy` (type, maxSurge,
//!   maxUnavailable), `deletion.order` (deletePolicy), `healthCheck.remediation.maxInFlight`;
//! - `patches[].external.generateExtension` / `validateExtension` →
//!   `generatePatchesExtension` / `validateTopologyExtension`; a patch selector naming a
//!   converted kind names it in `v1beta2`, and its JSON patches must not reach a field whose
//!   shape changed (they would patch what is no longer there: refused);
//! - `variables[].metadata` → `deprecatedV1Beta1Metadata`.

use serde_json::Value;

use super::edit::{Ctx, Object, deletion_timeouts, join, put, rename};
use super::kinds::{converted_api_version, is_converted};
use super::kubeadm;
use super::refusal::{ConversionError, Refusal};

pub fn spec(ctx: &mut Ctx, spec: &mut Object) -> Result<(), ConversionError> {
    if let Some(infrastructure) = ctx.object_field(spec, "infrastructure", "spec")? {
        ref_to_template_ref(ctx, infrastructure, "spec.infrastructure")?;
    }
    if let Some(naming) = ctx.take_object(spec, "infrastructureNamingStrategy", "spec")? {
        put(spec, &["infrastructure", "naming"], Value::Object(naming));
    }
    if let Some(control_plane) = ctx.object_field(spec, "controlPlane", "spec")? {
        control_plane_class(ctx, control_plane)?;
    }
    if let Some(workers) = ctx.object_field(spec, "workers", "spec")? {
        for (path, class) in ctx.list_of_objects(workers, "machineDeployments", "spec.workers")? {
            worker_class(ctx, class, &path, true)?;
        }
        for (path, class) in ctx.list_of_objects(workers, "machinePools", "spec.workers")? {
            worker_class(ctx, class, &path, false)?;
        }
    }
    for (_, variable) in ctx.list_of_objects(spec, "variables", "spec")? {
        rename(variable, "metadata", &["deprecatedV1Beta1Metadata"]);
    }
    for (path, patch) in ctx.list_of_objects(spec, "patches", "spec")? {
        self::patch(ctx, patch, &path)?;
    }
    Ok(())
}

fn control_plane_class(ctx: &mut Ctx, class: &mut Object) -> Result<(), ConversionError> {
    let path = "spec.controlPlane";
    ref_to_template_ref(ctx, class, path)?;
    if let Some(machine) = ctx.object_field(class, "machineInfrastructure", path)? {
        ref_to_template_ref(ctx, machine, &join(path, "machineInfrastructure"))?;
    }
    rename(class, "namingStrategy", &["naming"]);
    deletion_timeouts(ctx, class, path)?;
    health_check(ctx, class, path, None)
}

fn worker_class(
    ctx: &mut Ctx,
    class: &mut Object,
    path: &str,
    deployment: bool,
) -> Result<(), ConversionError> {
    if let Some(mut template) = ctx.take_object(class, "template", path)? {
        let template_path = join(path, "template");
        for key in ["bootstrap", "infrastructure"] {
            if let Some(mut holder) = ctx.take_object(&mut template, key, &template_path)? {
                let holder_path = join(&template_path, key);
                ref_to_template_ref(ctx, &mut holder, &holder_path)?;
                ctx.nothing_left_but(&holder, &holder_path, &["templateRef"])?;
                class.insert(key.into(), Value::Object(holder));
            }
        }
        if let Some(metadata) = template.remove("metadata") {
            class.insert("metadata".into(), metadata);
        }
        ctx.nothing_left(&template, &template_path, "ClusterClass")?;
    }
    rename(class, "namingStrategy", &["naming"]);
    deletion_timeouts(ctx, class, path)?;
    if !deployment {
        return Ok(());
    }
    let mut max_in_flight = None;
    if let Some(mut strategy) = ctx.take_object(class, "strategy", path)? {
        let strategy_path = join(path, "strategy");
        if let Some(kind) = strategy.remove("type") {
            put(class, &["rollout", "strategy", "type"], kind);
        }
        if let Some(mut rolling) = ctx.take_object(&mut strategy, "rollingUpdate", &strategy_path)? {
            let rolling_path = join(&strategy_path, "rollingUpdate");
            for key in ["maxSurge", "maxUnavailable"] {
                if let Some(value) = rolling.remove(key) {
                    put(class, &["rollout", "strategy", "rollingUpdate", key], value);
                }
            }
            if let Some(order) = rolling.remove("deletePolicy") {
                put(class, &["deletion", "order"], order);
            }
            ctx.nothing_left(&rolling, &rolling_path, "ClusterClass")?;
        }
        if let Some(mut remediation) = ctx.take_object(&mut strategy, "remediation", &strategy_path)? {
            max_in_flight = remediation.remove("maxInFlight");
            ctx.nothing_left(&remediation, &join(&strategy_path, "remediation"), "ClusterClass")?;
        }
        ctx.nothing_left(&strategy, &strategy_path, "ClusterClass")?;
    }
    health_check(ctx, class, path, max_in_flight)
}

/// `holder.ref` → `holder.templateRef`.
fn ref_to_template_ref(ctx: &Ctx, holder: &mut Object, path: &str) -> Result<(), ConversionError> {
    if let Some(reference) = ctx.take_object(holder, "ref", path)? {
        let converted = ctx.template_ref(reference, &join(path, "ref"))?;
        holder.insert("templateRef".into(), Value::Object(converted));
    }
    Ok(())
}

/// `machineHealthCheck` → `healthCheck` (with a MachineDeployment class's
/// `strategy.remediation.maxInFlight`).
fn health_check(
    ctx: &Ctx,
    class: &mut Object,
    path: &str,
    max_in_flight: Option<Value>,
) -> Result<(), ConversionError> {
    let mut health = Object::new();
    if let Some(mut check) = ctx.take_object(class, "machineHealthCheck", path)? {
        let check_path = join(path, "machineHealthCheck");
        if let Some(seconds) = ctx.take_seconds(&mut check, "nodeStartupTimeout", &check_path)? {
            put(&mut health, &["checks", "nodeStartupTimeoutSeconds"], seconds);
        }
        for (from, to) in [
            ("unhealthyConditions", "unhealthyNodeConditions"),
            ("unhealthyMachineConditions", "unhealthyMachineConditions"),
        ] {
            let mut converted = Vec::new();
            for (condition_path, condition) in ctx.list_of_objects(&mut check, from, &check_path)? {
                let mut out = Object::new();
                for key in ["type", "status"] {
                    if let Some(value) = condition.remove(key) {
                        out.insert(key.into(), value);
                    }
                }
                if let Some(seconds) = ctx.take_seconds(condition, "timeout", &condition_path)? {
                    out.insert("timeoutSeconds".into(), seconds);
                }
                ctx.nothing_left(condition, &condition_path, "ClusterClass")?;
                converted.push(Value::Object(out));
            }
            check.remove(from);
            if !converted.is_empty() {
                put(&mut health, &["checks", to], Value::Array(converted));
            }
        }
        if let Some(value) = check.remove("maxUnhealthy") {
            put(
                &mut health,
                &["remediation", "triggerIf", "unhealthyLessThanOrEqualTo"],
                value,
            );
        }
        if let Some(value) = check.remove("unhealthyRange") {
            put(
                &mut health,
                &["remediation", "triggerIf", "unhealthyInRange"],
                value,
            );
        }
        if let Some(reference) = ctx.take_object(&mut check, "remediationTemplate", &check_path)? {
            let converted = ctx.template_ref(reference, &join(&check_path, "remediationTemplate"))?;
            put(
                &mut health,
                &["remediation", "templateRef"],
                Value::Object(converted),
            );
        }
        ctx.nothing_left(&check, &check_path, "ClusterClass")?;
    }
    if let Some(value) = max_in_flight {
        put(&mut health, &["remediation", "maxInFlight"], value);
    }
    if !health.is_empty() {
        class.insert("healthCheck".into(), Value::Object(health));
    }
    Ok(())
}

fn patch(ctx: &Ctx, patch: &mut Object, path: &str) -> Result<(), ConversionError> {
    if let Some(external) = ctx.object_field(patch, "external", path)? {
        rename(external, "generateExtension", &["generatePatchesExtension"]);
        rename(external, "validateExtension", &["validateTopologyExtension"]);
    }
    for (definition_path, definition) in ctx.list_of_objects(patch, "definitions", path)? {
        let Some(selector) = ctx.object_field(definition, "selector", &definition_path)? else {
            continue;
        };
        let api_version = selector
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = selector
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !is_converted(&api_version, &kind) {
            continue;
        }
        selector.insert(
            "apiVersion".into(),
            Value::String(converted_api_version(&api_version, &kind)),
        );
        for (json_patch_path, json_patch) in
            ctx.list_of_objects(definition, "jsonPatches", &definition_path)?
        {
            let target = json_patch.get("path").and_then(Value::as_str).unwrap_or("");
            if let Some(changed) = changed_field_reached(&kind, target) {
                return Err(ctx.error(
                    &join(&json_patch_path, "path"),
                    Refusal::NoEquivalent(format!(
                        "the patch reaches {target}, but {kind}'s {changed} changed its shape in v1beta2: write the patch for {}",
                        converted_api_version(&api_version, &kind)
                    )),
                ));
            }
        }
    }
    Ok(())
}

/// The field of a converted kind whose shape changed in `v1beta2` that a JSON patch at
/// `pointer` reaches (at it, below it, or replacing a mapping above it).
pub fn changed_field_reached(kind: &str, pointer: &str) -> Option<String> {
    let segments: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    let changed: Vec<Vec<&str>> = match kind {
        "KubeadmControlPlaneTemplate" => {
            let mut all: Vec<Vec<&str>> = kubeadm::CHANGED_IN_CONFIG_SPEC
                .iter()
                .map(|field| {
                    let mut path = vec!["spec", "template", "spec", "kubeadmConfigSpec"];
                    path.extend(field.split('.'));
                    path
                })
                .collect();
            all.extend(kubeadm::CHANGED_IN_CONTROL_PLANE_SPEC.iter().map(|field| {
                let mut path = vec!["spec", "template", "spec"];
                path.extend(field.split('.'));
                path
            }));
            all
        }
        "KubeadmConfigTemplate" => kubeadm::CHANGED_IN_CONFIG_SPEC
            .iter()
            .map(|field| {
                let mut path = vec!["spec", "template", "spec"];
                path.extend(field.split('.'));
                path
            })
            .collect(),
        "DockerClusterTemplate" => vec![vec!["spec", "template", "spec", "failureDomains"]],
        _ => Vec::new(),
    };
    changed.into_iter().find_map(|field| {
        let reaches = field
            .iter()
            .zip(&segments)
            .all(|(want, got)| *want == "*" || want == got);
        reaches.then(|| field.join("."))
    })
}
