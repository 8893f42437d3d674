//! The validating webhook's rules for `ClusterStackRollout`, as a pure function of the rollout
//! and what the namespace holds (its ClusterStack, ClusterStackReleases and other rollouts).
//! It refuses what cannot work:
//! - `clusterStack` names no ClusterStack of the namespace;
//! - `version` is neither `latest` nor a version of the stack that exists: a
//!   ClusterStackRelease of the namespace, one of the stack's `status.usableVersions`, or one
//!   of its `spec.versions` (about to be installed);
//! - no waves, two waves of one name, a `maxInFlight` of 0 (or `0%`, or not a number or
//!   percentage), a `soak` or `health.timeout` that is not a duration, a label selector
//!   Kubernetes would refuse, a health check whose CEL condition does not compile or that has
//!   two objects of one key;
//! - two rollouts for the same Clusters: the simple rule is one rollout per ClusterStack in a
//!   namespace (a rollout's Clusters are those on the stack's classes; two rollouts of one stack
//!   would fight over them, whatever their selectors).

use capstan_stack::name::ReleaseTag;
use capstan_stack::version::Version;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::validate::Rejection;
use crate::addon::condition::check_syntax;
use crate::api::rollout::{ClusterStackRollout, LATEST, parse_duration};
use crate::api::{ClusterStack, ClusterStackRelease};
use crate::clusters::release_name_of_class;
use crate::rollout::plan::parse_percent;
use crate::rollout::selector;

/// What the namespace of a rollout holds, as the webhook read it.
#[derive(Clone, Copy, Debug)]
pub struct Namespace<'a> {
    /// The ClusterStack `spec.clusterStack` names, if it exists.
    pub stack: Option<&'a ClusterStack>,
    pub releases: &'a [ClusterStackRelease],
    /// The namespace's rollouts (the one validated may be among them: an update).
    pub rollouts: &'a [ClusterStackRollout],
}

/// Checks a created or updated rollout; every broken rule is a reason.
pub fn rollout(new: &ClusterStackRollout, namespace: Namespace) -> Result<(), Rejection> {
    let mut reasons = Vec::new();
    let spec = &new.spec;
    let ns = new.metadata.namespace.as_deref().unwrap_or_default();
    match namespace.stack {
        None => reasons.push(format!(
            "spec.clusterStack: ClusterStack {ns}/{} does not exist",
            spec.cluster_stack
        )),
        Some(stack) => {
            if let Err(why) = check_version(&spec.version, stack, namespace.releases) {
                reasons.push(format!("spec.version: {why}"));
            }
        }
    }
    if let Some(selector) = &spec.cluster_selector {
        check_selector("spec.clusterSelector", selector, &mut reasons);
    }
    if spec.waves.is_empty() {
        reasons.push("spec.waves: at least one wave is needed".to_string());
    }
    for (i, wave) in spec.waves.iter().enumerate() {
        let at = format!("spec.waves[{i}]");
        if wave.name.is_empty() {
            reasons.push(format!("{at}.name: must not be empty"));
        } else if spec.waves[..i].iter().any(|w| w.name == wave.name) {
            reasons.push(format!("{at}.name: {:?} names an earlier wave too", wave.name));
        }
        if let Some(limit) = &wave.max_in_flight
            && let Err(why) = check_max_in_flight(limit)
        {
            reasons.push(format!("{at}.maxInFlight: {why}"));
        }
        if let Some(soak) = &wave.soak
            && let Err(e) = parse_duration(&format!("{at}.soak"), soak)
        {
            reasons.push(e.to_string());
        }
        if let Some(selector) = &wave.cluster_selector {
            check_selector(&format!("{at}.clusterSelector"), selector, &mut reasons);
        }
    }
    if let Some(timeout) = &spec.health.timeout
        && let Err(e) = parse_duration("spec.health.timeout", timeout)
    {
        reasons.push(e.to_string());
    }
    for (i, check) in spec.health.checks.iter().enumerate() {
        let at = format!("spec.health.checks[{i}]");
        if let Err(e) = check_syntax(&check.conditions) {
            reasons.push(format!("{at}.conditions: {e}"));
        }
        for (j, object) in check.objects.iter().enumerate() {
            if check.objects[..j].iter().any(|o| o.key == object.key) {
                reasons.push(format!("{at}.objects[{j}].key: {:?} is used twice", object.key));
            }
        }
    }
    let name = new.metadata.name.as_deref().unwrap_or_default();
    for other in namespace.rollouts {
        let other_name = other.metadata.name.as_deref().unwrap_or_default();
        if other_name != name && other.spec.cluster_stack == spec.cluster_stack {
            reasons.push(format!(
                "spec.clusterStack: ClusterStackRollout {ns}/{other_name} already rolls out {} (one rollout per ClusterStack)",
                spec.cluster_stack
            ));
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Rejection { reasons })
    }
}

/// `latest`, or a version (dot or dash form) of a release of `stack` that exists or is
/// wanted.
fn check_version(
    version: &str,
    stack: &ClusterStack,
    releases: &[ClusterStackRelease],
) -> Result<(), String> {
    if version == LATEST {
        return Ok(());
    }
    let parsed = Version::parse(version)
        .or_else(|_| Version::parse_dashed(version))
        .map_err(|e| format!("{version:?} is neither latest nor a stack version: {}", e.problem))?;
    let stack_name = capstan_stack::name::StackName::new(
        &stack.spec.provider,
        &stack.spec.name,
        capstan_stack::name::KubernetesVersion::parse(&stack.spec.kubernetes_version)
            .map_err(|e| format!("the ClusterStack's kubernetesVersion: {e}"))?,
    )
    .map_err(|e| format!("the ClusterStack: {e}"))?;
    let tag = ReleaseTag::new(stack_name, parsed.clone()).tag();
    let released = releases
        .iter()
        .any(|r| r.metadata.name.as_deref().map(release_name_of_class).as_deref() == Some(tag.as_str()));
    let same = |v: &str| Version::parse(v.trim()).is_ok_and(|v| v == parsed);
    let usable = stack
        .status
        .as_ref()
        .and_then(|s| s.usable_versions.as_deref())
        .is_some_and(|list| list.split(',').any(same));
    let wanted = stack.spec.versions.iter().any(|v| same(v));
    if released || usable || wanted {
        Ok(())
    } else {
        Err(format!(
            "{version:?}: no release {tag} in the namespace, nor among the ClusterStack's usable or wanted versions"
        ))
    }
}

fn check_max_in_flight(limit: &IntOrString) -> Result<(), String> {
    match limit {
        IntOrString::Int(n) if *n >= 1 => Ok(()),
        IntOrString::Int(n) => Err(format!("{n}: at least 1")),
        IntOrString::String(text) => match parse_percent(text) {
            Some(p) if (1..=100).contains(&p) => Ok(()),
            Some(_) => Err(format!("{text:?}: a percentage from 1% to 100%")),
            None => Err(format!("{text:?}: a number or a percentage like \"25%\"")),
        },
    }
}

fn check_selector(at: &str, selector: &LabelSelector, reasons: &mut Vec<String>) {
    for problem in selector::check(selector) {
        reasons.push(format!("{at}.{problem}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::rollout::{CheckObject, HealthCheck};
    use serde_json::json;

    fn stack() -> ClusterStack {
        serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
            "metadata": {"name": "ferrol", "namespace": "tenant-a"},
            "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                     "versions": ["v4"]},
            "status": {"usableVersions": "v2, v3"}
        }))
        .expect("ClusterStack")
    }

    fn release(name: &str) -> ClusterStackRelease {
        serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
            "metadata": {"name": name, "namespace": "tenant-a"}, "spec": {}
        }))
        .expect("ClusterStackRelease")
    }

    fn rollout_named(name: &str, spec: serde_json::Value) -> ClusterStackRollout {
        serde_json::from_value(json!({
            "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
            "metadata": {"name": name, "namespace": "tenant-a"}, "spec": spec
        }))
        .expect("ClusterStackRollout")
    }

    fn base() -> serde_json::Value {
        json!({"clusterStack": "ferrol", "waves": [{"name": "canary", "maxInFlight": 1}, {"name": "rest", "maxInFlight": "20%"}]})
    }

    fn with(edit: impl FnOnce(&mut serde_json::Value)) -> ClusterStackRollout {
        let mut spec = base();
        edit(&mut spec);
        rollout_named("ferrol", spec)
    }

    fn check(
        new: &ClusterStackRollout,
        stack: Option<&ClusterStack>,
        others: &[ClusterStackRollout],
    ) -> Result<(), String> {
        let releases = [
            release("docker-ferrol-1-27-v1"),
            release("docker-ferrol-1-27-v0-sha-abc"),
        ];
        rollout(
            new,
            Namespace {
                stack,
                releases: &releases,
                rollouts: others,
            },
        )
        .map_err(|r| r.to_string())
    }

    /// One row per rule: the rollout, and the start of the reason (or `None`: allowed).
    #[test]
    fn rollout_rules() {
        let s = stack();
        let health_check = |expression: &str| {
            serde_json::to_value(HealthCheck {
                name: None,
                objects: vec![CheckObject {
                    key: "cilium".into(),
                    api_version: "apps/v1".into(),
                    kind: "DaemonSet".into(),
                    name: "cilium".into(),
                    namespace: Some("kube-system".into()),
                }],
                conditions: expression.into(),
            })
            .expect("JSON")
        };
        let good_check = health_check("cilium.status.numberReady == cilium.status.desiredNumberScheduled");
        let bad_check = health_check("cilium.status.numberReady ==");
        type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
        let rows: Vec<(&str, Edit, Option<&str>)> = vec![
            ("a sound rollout is allowed", Box::new(|_| {}), None),
            (
                "a released version",
                Box::new(|s| s["version"] = json!("v1")),
                None,
            ),
            (
                "a hash version in dot form",
                Box::new(|s| s["version"] = json!("v0-sha.abc")),
                None,
            ),
            ("a usable version", Box::new(|s| s["version"] = json!("v3")), None),
            ("a wanted version", Box::new(|s| s["version"] = json!("v4")), None),
            (
                "a version that does not exist",
                Box::new(|s| s["version"] = json!("v9")),
                Some("spec.version: \"v9\": no release docker-ferrol-1-27-v9"),
            ),
            (
                "a version that is not one",
                Box::new(|s| s["version"] = json!("newest")),
                Some("spec.version: \"newest\" is neither latest nor a stack version"),
            ),
            (
                "empty waves",
                Box::new(|s| s["waves"] = json!([])),
                Some("spec.waves: at least one wave is needed"),
            ),
            (
                "duplicate wave names",
                Box::new(|s| s["waves"][1]["name"] = json!("canary")),
                Some("spec.waves[1].name: \"canary\" names an earlier wave too"),
            ),
            (
                "maxInFlight 0",
                Box::new(|s| s["waves"][0]["maxInFlight"] = json!(0)),
                Some("spec.waves[0].maxInFlight: 0: at least 1"),
            ),
            (
                "maxInFlight 0%",
                Box::new(|s| s["waves"][0]["maxInFlight"] = json!("0%")),
                Some("spec.waves[0].maxInFlight: \"0%\": a percentage from 1% to 100%"),
            ),
            (
                "maxInFlight not a number",
                Box::new(|s| s["waves"][0]["maxInFlight"] = json!("many")),
                Some("spec.waves[0].maxInFlight: \"many\": a number or a percentage"),
            ),
            (
                "a bad soak",
                Box::new(|s| s["waves"][0]["soak"] = json!("10 minutes")),
                Some("spec.waves[0].soak \"10 minutes\" is not a duration"),
            ),
            (
                "a bad health timeout",
                Box::new(|s| s["health"] = json!({"timeout": "-5m"})),
                Some("spec.health.timeout \"-5m\" is not a duration"),
            ),
            (
                "a bad selector",
                Box::new(|s| {
                    s["clusterSelector"] = json!({"matchExpressions": [{"key": "ring", "operator": "Near"}]})
                }),
                Some("spec.clusterSelector.matchExpressions[0]: unknown operator"),
            ),
            (
                "a CEL condition that compiles",
                Box::new(move |s| s["health"] = json!({"checks": [good_check]})),
                None,
            ),
            (
                "bad CEL",
                Box::new(move |s| s["health"] = json!({"checks": [bad_check]})),
                Some(
                    "spec.health.checks[0].conditions: condition `cilium.status.numberReady ==` does not compile",
                ),
            ),
        ];
        for (rule, edit, expected) in rows {
            let got = check(&with(edit), Some(&s), &[]);
            match expected {
                None => assert_eq!(got, Ok(()), "{rule}"),
                Some(start) => {
                    let why = got.expect_err(rule);
                    assert!(why.starts_with(start), "{rule}: {why}");
                }
            }
        }
    }

    #[test]
    fn an_unknown_stack_is_refused() {
        let why = check(&with(|_| {}), None, &[]).expect_err("no stack");
        assert_eq!(
            why,
            "spec.clusterStack: ClusterStack tenant-a/ferrol does not exist"
        );
    }

    #[test]
    fn two_rollouts_of_one_stack_are_refused_but_an_update_of_the_same_is_not() {
        let s = stack();
        let existing = rollout_named("first", base());
        let second = rollout_named("second", base());
        let why = check(&second, Some(&s), std::slice::from_ref(&existing)).expect_err("second rollout");
        assert_eq!(
            why,
            "spec.clusterStack: ClusterStackRollout tenant-a/first already rolls out ferrol (one rollout per ClusterStack)"
        );
        assert_eq!(
            check(&existing, Some(&s), std::slice::from_ref(&existing)),
            Ok(())
        );
        let mut other_stack = base();
        other_stack["clusterStack"] = json!("scs");
        let other = rollout_named("other", other_stack);
        assert!(
            check(&other, None, std::slice::from_ref(&existing))
                .is_err_and(|w| !w.contains("already rolls out"))
        );
    }
}
