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
//! - a `from` stack of another provider or name than `clusterStack`, or not of a lower
//!   Kubernetes minor; `from` that is neither `auto` nor a list (the CRD's schema cannot say
//!   so);
//! - a maintenance window (the rollout's or a wave's) whose schedule is not a five-field cron
//!   expression or never fires, whose duration is not one or is 0, or whose time zone is not
//!   an IANA zone; a pre-flight check whose CEL condition does not compile;
//! - two rollouts for the same Clusters: the simple rule is one rollout per ClusterStack in a
//!   namespace (a rollout's Clusters are those on the stack's classes; two rollouts of one stack
//!   would fight over them, whatever their selectors).
//!
//! It warns ([`warnings`], kubectl prints them) where a rollout is admitted but may not do what
//! its author thinks: `from: auto` finds no ClusterStack to move from, a `from` name has no
//! ClusterStack (yet) — the rollout moves only the Clusters of the stacks that exist, and a
//! stack created later is taken then.

use capstan_stack::name::ReleaseTag;
use capstan_stack::version::Version;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::validate::Rejection;
use crate::addon::condition::check_syntax;
use crate::api::rollout::{ClusterStackRollout, FromStacks, HealthCheck, LATEST, parse_duration};
use crate::api::{ClusterStack, ClusterStackRelease};
use crate::clusters::release_name_of_class;
use crate::rollout::plan::parse_percent;
use crate::rollout::{selector, windows};

/// What the namespace of a rollout holds, as the webhook read it.
#[derive(Clone, Copy, Debug)]
pub struct Namespace<'a> {
    /// The ClusterStack `spec.clusterStack` names, if it exists.
    pub stack: Option<&'a ClusterStack>,
    /// The namespace's ClusterStacks (for `spec.from`; may be empty when it is not set).
    pub stacks: &'a [ClusterStack],
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
            if let Some(FromStacks::Stacks(names)) = &spec.from {
                check_from(names, stack, namespace.stacks, &mut reasons);
            }
        }
    }
    if let Err(errors) = windows::parse_all(&spec.windows, "spec.windows") {
        reasons.extend(errors.iter().map(ToString::to_string));
    }
    check_conditions("spec.preflight.checks", &spec.preflight.checks, &mut reasons);
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
        if let Err(errors) = windows::parse_all(&wave.windows, &format!("{at}.windows")) {
            reasons.extend(errors.iter().map(ToString::to_string));
        }
    }
    if let Some(timeout) = &spec.health.timeout
        && let Err(e) = parse_duration("spec.health.timeout", timeout)
    {
        reasons.push(e.to_string());
    }
    check_conditions("spec.health.checks", &spec.health.checks, &mut reasons);
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

/// What the user should know about an admitted rollout: a `from` that finds no ClusterStack
/// to move from (`auto`), or names one the namespace does not have (yet) — the plan's own
/// notes ([`crate::rollout::sources`]), so the webhook and `rollout plan` say the same.
pub fn warnings(new: &ClusterStackRollout, namespace: Namespace) -> Vec<String> {
    let (Some(from), Some(stack)) = (&new.spec.from, namespace.stack) else {
        return Vec::new();
    };
    let Some(target) = crate::controller::stack_name_of(stack) else {
        return Vec::new();
    };
    let hops: Vec<crate::rollout::Hop> = namespace
        .stacks
        .iter()
        .filter_map(|s| {
            Some(crate::rollout::Hop {
                name: s.metadata.name.clone()?,
                stack: crate::controller::stack_name_of(s)?,
                newest_ready: None,
            })
        })
        .collect();
    crate::rollout::sources(from, &target, &hops)
        .notes
        .into_iter()
        .map(|note| format!("{note}: the rollout moves only the Clusters of the stacks that exist"))
        .collect()
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

/// CEL checks (`health.checks`, `preflight.checks`): each compiles, no key twice.
fn check_conditions(at: &str, checks: &[HealthCheck], reasons: &mut Vec<String>) {
    for (i, check) in checks.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if let Err(e) = check_syntax(&check.conditions) {
            reasons.push(format!("{at}.conditions: {e}"));
        }
        for (j, object) in check.objects.iter().enumerate() {
            if check.objects[..j].iter().any(|o| o.key == object.key) {
                reasons.push(format!("{at}.objects[{j}].key: {:?} is used twice", object.key));
            }
        }
    }
}

/// Each `from` stack exists, has the target's provider and name, and a lower minor.
fn check_from(names: &[String], target: &ClusterStack, stacks: &[ClusterStack], reasons: &mut Vec<String>) {
    let minor = |stack: &ClusterStack| {
        capstan_stack::name::KubernetesVersion::parse(&stack.spec.kubernetes_version).ok()
    };
    let target_minor = minor(target);
    let target_name = target.metadata.name.as_deref().unwrap_or_default();
    if names.is_empty() {
        reasons
            .push("spec.from: an empty list; omit it, or name the stacks to move from, or auto".to_string());
    }
    for (i, name) in names.iter().enumerate() {
        let at = format!("spec.from[{i}]");
        if names[..i].contains(name) {
            reasons.push(format!("{at}: {name:?} is listed twice"));
            continue;
        }
        // One that does not exist (yet) is a warning (see `warnings`).
        let Some(stack) = stacks.iter().find(|s| s.metadata.name.as_deref() == Some(name)) else {
            continue;
        };
        if stack.spec.provider != target.spec.provider || stack.spec.name != target.spec.name {
            reasons.push(format!(
                "{at}: ClusterStack {name} is {}/{}, the target {target_name} is {}/{}: a rollout moves Clusters between minors of one stack",
                stack.spec.provider, stack.spec.name, target.spec.provider, target.spec.name
            ));
            continue;
        }
        match (minor(stack), target_minor) {
            (Some(from), Some(to)) if from >= to => reasons.push(format!(
                "{at}: ClusterStack {name} is Kubernetes {}.{}, not below the target's {}.{}",
                from.major, from.minor, to.major, to.minor
            )),
            (None, _) => reasons.push(format!(
                "{at}: ClusterStack {name} has no valid kubernetesVersion ({:?})",
                stack.spec.kubernetes_version
            )),
            _ => {}
        }
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

    fn stack_of(name: &str, provider: &str, stack: &str, minor: &str) -> ClusterStack {
        serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
            "metadata": {"name": name, "namespace": "tenant-a"},
            "spec": {"provider": provider, "name": stack, "kubernetesVersion": minor, "versions": []}
        }))
        .expect("ClusterStack")
    }

    /// The namespace's other stacks: two lower minors, one higher, another name and provider.
    fn stacks() -> Vec<ClusterStack> {
        vec![
            stack(),
            stack_of("ferrol-1-25", "docker", "ferrol", "1.25"),
            stack_of("ferrol-1-26", "docker", "ferrol", "1.26"),
            stack_of("ferrol-1-28", "docker", "ferrol", "1.28"),
            stack_of("scs-1-26", "docker", "scs", "1.26"),
            stack_of("os-ferrol-1-26", "openstack", "ferrol", "1.26"),
        ]
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
                stacks: &stacks(),
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
            ("from auto", Box::new(|s| s["from"] = json!("auto")), None),
            (
                "from lower minors of the stack",
                Box::new(|s| s["from"] = json!(["ferrol-1-25", "ferrol-1-26"])),
                None,
            ),
            // Admitted with a warning (it may come later).
            (
                "from a stack that does not exist",
                Box::new(|s| s["from"] = json!(["ferrol-1-24"])),
                None,
            ),
            (
                "from a stack of another name",
                Box::new(|s| s["from"] = json!(["scs-1-26"])),
                Some("spec.from[0]: ClusterStack scs-1-26 is docker/scs, the target ferrol is docker/ferrol"),
            ),
            (
                "from a stack of another provider",
                Box::new(|s| s["from"] = json!(["os-ferrol-1-26"])),
                Some("spec.from[0]: ClusterStack os-ferrol-1-26 is openstack/ferrol"),
            ),
            (
                "from a higher minor",
                Box::new(|s| s["from"] = json!(["ferrol-1-26", "ferrol-1-28"])),
                Some(
                    "spec.from[1]: ClusterStack ferrol-1-28 is Kubernetes 1.28, not below the target's 1.27",
                ),
            ),
            (
                "from the target itself",
                Box::new(|s| s["from"] = json!(["ferrol"])),
                Some("spec.from[0]: ClusterStack ferrol is Kubernetes 1.27, not below the target's 1.27"),
            ),
            (
                "from an empty list",
                Box::new(|s| s["from"] = json!([])),
                Some("spec.from: an empty list"),
            ),
            (
                "a sound window",
                Box::new(|s| {
                    s["windows"] =
                        json!([{"schedule": "0 22 * * 1-5", "duration": "4h", "timeZone": "Europe/Berlin"}])
                }),
                None,
            ),
            (
                "a bad cron",
                Box::new(|s| s["windows"] = json!([{"schedule": "0 25 * * *", "duration": "4h"}])),
                Some("spec.windows[0].schedule: hour field \"25\": 25 is outside 0-23"),
            ),
            (
                "a bad zone",
                Box::new(|s| {
                    s["windows"] =
                        json!([{"schedule": "0 22 * * *", "duration": "4h", "timeZone": "Mars/Olympus"}])
                }),
                Some("spec.windows[0].timeZone: \"Mars/Olympus\" is not an IANA time zone"),
            ),
            (
                "a window that never opens",
                Box::new(|s| s["windows"] = json!([{"schedule": "0 0 31 2 *", "duration": "4h"}])),
                Some("spec.windows[0].schedule: \"0 0 31 2 *\" never fires"),
            ),
            (
                "a window of no duration",
                Box::new(|s| s["windows"] = json!([{"schedule": "0 0 * * *", "duration": "0s"}])),
                Some("spec.windows[0].duration: a window of 0 never opens"),
            ),
            (
                "a wave's bad window",
                Box::new(|s| {
                    s["waves"][1]["windows"] =
                        json!([{"schedule": "0 0 * * *", "duration": "1h", "timeZone": "Berlin"}])
                }),
                Some("spec.waves[1].windows[0].timeZone: \"Berlin\" is not an IANA time zone"),
            ),
            (
                "bad pre-flight CEL",
                Box::new(|s| {
                    s["preflight"] = json!({"onBlocked": "Skip", "checks": [{"conditions": "1 +"}]})
                }),
                Some("spec.preflight.checks[0].conditions: condition `1 +` does not compile"),
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

    /// One row: `from`, the namespace's ClusterStacks, and the warnings.
    #[test]
    fn a_from_that_finds_no_stack_is_admitted_with_a_warning() {
        let target = stack();
        let only_target = vec![stack()];
        let all = stacks();
        let rows: Vec<(serde_json::Value, &[ClusterStack], Vec<&str>)> = vec![
            (json!("auto"), &all, vec![]),
            (
                json!("auto"),
                &only_target,
                vec![
                    "spec.from: auto finds no ClusterStack of provider docker, name ferrol below Kubernetes 1.27 in the namespace: the rollout moves only the Clusters of the stacks that exist",
                ],
            ),
            (json!(["ferrol-1-26"]), &all, vec![]),
            (
                json!(["ferrol-1-24", "ferrol-1-26"]),
                &all,
                vec![
                    "spec.from: no ClusterStack ferrol-1-24 in the namespace: the rollout moves only the Clusters of the stacks that exist",
                ],
            ),
        ];
        for (from, held, want) in rows {
            let mut spec = base();
            spec["from"] = from.clone();
            let new = rollout_named("ferrol", spec);
            let namespace = Namespace {
                stack: Some(&target),
                stacks: held,
                releases: &[],
                rollouts: &[],
            };
            assert_eq!(warnings(&new, namespace), want, "from {from}");
        }
        // Without `from`: nothing to say.
        let namespace = Namespace {
            stack: Some(&target),
            stacks: &[],
            releases: &[],
            rollouts: &[],
        };
        assert!(warnings(&rollout_named("ferrol", base()), namespace).is_empty());
    }
}
