//! The validating webhooks' rules, as pure functions of the objects (and, for deletions, of
//! the Clusters the caller listed). Each returns `Ok(())` to allow or a [`Rejection`] whose
//! text is what the user sees after `admission webhook … denied the request:`.
//!
//! - ClusterStack: `provider`, `name`, `channel`, `kubernetesVersion` are immutable;
//!   `versions[]` must be stack versions; `addonValues` must be a YAML map; no deletion while a
//!   Cluster uses one of its classes.
//! - ClusterStackRelease: no deletion while a Cluster uses its class.
//! - ClusterAddon: `clusterRef` names a Cluster and never changes.
//! - Cluster: its user-value annotations (`clusterstack.x-k8s.io/addon-values` and
//!   `…/addon-values-from`), when set or changed, must be a YAML map and a reference; otherwise
//!   a Cluster whose class is not a stack release's is never rejected, and one that uses a
//!   ready release must run the release's Kubernetes version.
//!
//! When the Clusters could not be listed, a deletion is refused: allowing it could orphan
//! running clusters (CSO allows it with a warning).

use std::fmt;

use kube::api::DynamicObject;

use crate::api::{Channel, ClusterAddon, ClusterStack, ClusterStackRelease};
use crate::clusters::{ClusterUse, release_name_of_class};

/// Why a request is denied: one reason per broken rule, in the order the rules are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reasons: Vec<String>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reasons.join("; "))
    }
}

impl std::error::Error for Rejection {}

fn verdict(reasons: Vec<String>) -> Result<(), Rejection> {
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Rejection { reasons })
    }
}

/// The stack-version syntax the rules check against: [`super::versions::StackVersions`]
/// (capstan's one version parser) in the webhooks, a small table in this module's tests.
pub trait VersionSyntax {
    /// `Ok(())` when `version` is a stack version as written in `spec.versions` (`v1`,
    /// `v1-alpha.0`, `v0-sha.4e0d8f3`); otherwise why not, e.g. `no "v" prefix`.
    fn check_version(&self, version: &str) -> Result<(), String>;

    /// Whether `tail` — what follows `<provider>-<name>-<major>-<minor>-` in a ClusterClass or
    /// ClusterStackRelease name, with dots written as dashes (`v2`, `v1-alpha-0`) — is a version
    /// of a release on `channel`.
    fn is_class_version(&self, tail: &str, channel: Channel) -> bool;
}

fn immutable(field: &str, old: &str, new: &str, reasons: &mut Vec<String>) {
    if old != new {
        reasons.push(format!("{field}: field is immutable (was {old:?}, now {new:?})"));
    }
}

fn check_versions(stack: &ClusterStack, syntax: &dyn VersionSyntax, reasons: &mut Vec<String>) {
    for (i, version) in stack.spec.versions.iter().enumerate() {
        if let Err(why) = syntax.check_version(version) {
            reasons.push(format!(
                "spec.versions[{i}]: {version:?} is not a stack version: {why}"
            ));
        }
    }
}

fn check_addon_values(stack: &ClusterStack, reasons: &mut Vec<String>) {
    if let Some(text) = &stack.spec.addon_values
        && let Err(e) = capstan_stack::user_values::UserValues::parse("spec.addonValues", text)
    {
        reasons.push(e.to_string());
    }
}

/// The signature policy: a provider the operator verifies and the Secret of its keys.
fn check_verify(stack: &ClusterStack, reasons: &mut Vec<String>) {
    let Some(verify) = &stack.spec.verify else {
        return;
    };
    if verify.provider != "cosign" {
        reasons.push(format!(
            "spec.verify.provider: {:?} is not supported (only \"cosign\": keyed and keyless cosign signatures)",
            verify.provider
        ));
    }
    if verify.match_oidc_identity.is_empty()
        && verify
            .secret_ref
            .as_ref()
            .is_none_or(|r| r.name.trim().is_empty())
    {
        reasons.push(
            "spec.verify.secretRef.name: required without matchOIDCIdentity: the Secret in the stack's namespace whose *.pub entries are the trusted public keys"
                .to_string(),
        );
    }
    for (i, m) in verify.match_oidc_identity.iter().enumerate() {
        for (field, re) in [("issuer", &m.issuer), ("subject", &m.subject)] {
            if re.trim().is_empty() {
                reasons.push(format!("spec.verify.matchOIDCIdentity[{i}].{field}: required"));
            } else if let Err(e) = capstan_source::verify::Identity::new(re, re) {
                reasons.push(format!(
                    "spec.verify.matchOIDCIdentity[{i}].{field}: not a regex: {e}"
                ));
            }
        }
    }
    if verify
        .trusted_root_secret_ref
        .as_ref()
        .is_some_and(|r| r.name.trim().is_empty())
    {
        reasons.push("spec.verify.trustedRootSecretRef.name: empty".to_string());
    }
}

/// The per-repository rules of the charts' dependencies: URLs, Secret names and regexes that
/// can be read, each repository once.
fn check_dependency_policy(stack: &ClusterStack, reasons: &mut Vec<String>) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, rule) in stack.spec.dependency_policy.iter().enumerate() {
        let at = format!("spec.dependencyPolicy[{i}]");
        let url = rule.repository.trim();
        if !["https://", "http://", "oci://"]
            .iter()
            .any(|scheme| url.len() > scheme.len() && url.starts_with(scheme))
        {
            reasons.push(format!(
                "{at}.repository: {url:?} is not an https://, http:// or oci:// repository URL"
            ));
        } else if !seen.insert(url.trim_end_matches('/').to_ascii_lowercase()) {
            reasons.push(format!("{at}.repository: {url} has a rule already"));
        }
        for (field, reference) in [
            ("keyringSecretRef", &rule.keyring_secret_ref),
            ("secretRef", &rule.secret_ref),
            ("trustedRootSecretRef", &rule.trusted_root_secret_ref),
        ] {
            if reference.as_ref().is_some_and(|r| r.name.trim().is_empty()) {
                reasons.push(format!("{at}.{field}.name: empty"));
            }
        }
        for (j, m) in rule.match_oidc_identity.iter().enumerate() {
            for (field, re) in [("issuer", &m.issuer), ("subject", &m.subject)] {
                if re.trim().is_empty() {
                    reasons.push(format!("{at}.matchOIDCIdentity[{j}].{field}: required"));
                } else if let Err(e) = capstan_source::verify::Identity::new(re, re) {
                    reasons.push(format!("{at}.matchOIDCIdentity[{j}].{field}: not a regex: {e}"));
                }
            }
        }
    }
}

/// Creating a ClusterStack.
pub fn cluster_stack_create(new: &ClusterStack, syntax: &dyn VersionSyntax) -> Result<(), Rejection> {
    let mut reasons = Vec::new();
    check_versions(new, syntax, &mut reasons);
    check_addon_values(new, &mut reasons);
    check_verify(new, &mut reasons);
    check_dependency_policy(new, &mut reasons);
    verdict(reasons)
}

/// Updating a ClusterStack: what identifies the stack stays; versions must parse.
pub fn cluster_stack_update(
    old: &ClusterStack,
    new: &ClusterStack,
    syntax: &dyn VersionSyntax,
) -> Result<(), Rejection> {
    let (o, n) = (&old.spec, &new.spec);
    let mut reasons = Vec::new();
    immutable("spec.provider", &o.provider, &n.provider, &mut reasons);
    immutable("spec.name", &o.name, &n.name, &mut reasons);
    immutable(
        "spec.channel",
        o.channel.as_str(),
        n.channel.as_str(),
        &mut reasons,
    );
    immutable(
        "spec.kubernetesVersion",
        &o.kubernetes_version,
        &n.kubernetes_version,
        &mut reasons,
    );
    check_versions(new, syntax, &mut reasons);
    check_addon_values(new, &mut reasons);
    check_verify(new, &mut reasons);
    check_dependency_policy(new, &mut reasons);
    verdict(reasons)
}

/// A Cluster's user-value annotations, on creation (`old` is `None`) or when an update
/// changes them: values that are not a YAML map, or a reference that is not one, are refused.
/// Unchanged annotations are never refused, so no update of a Cluster admitted before (by
/// Cluster API's controllers, say) is blocked.
pub fn cluster_user_values(old: Option<&DynamicObject>, new: &DynamicObject) -> Result<(), Rejection> {
    use crate::addon::user_values::{annotations_changed, check_annotations};
    if old.is_some_and(|old| !annotations_changed(old, new)) {
        return Ok(());
    }
    verdict(check_annotations(new))
}

fn object_label(namespace: Option<&String>, name: Option<&String>) -> String {
    format!(
        "{}/{}",
        namespace.map_or("", String::as_str),
        name.map_or("", String::as_str)
    )
}

fn in_use_by(what: &str, users: &[(String, String)]) -> String {
    let plural = if users.len() == 1 { "Cluster" } else { "Clusters" };
    let list: Vec<String> = users
        .iter()
        .map(|(cluster, class)| format!("{cluster} (class {class})"))
        .collect();
    format!(
        "{what} is in use by {plural} {}; delete those Clusters or move them to another class first",
        list.join(", ")
    )
}

fn listing_failed(what: &str, error: &str) -> String {
    format!("cannot tell whether a Cluster uses {what}: listing Clusters failed: {error}; deletion refused")
}

/// Deleting a ClusterStack, given the Clusters listed (or why listing failed): refused while a
/// Cluster uses a class of the stack (`<provider>-<name>-<major>-<minor>-<version>` in the
/// stack's namespace, with a version of the stack's channel).
pub fn cluster_stack_delete(
    stack: &ClusterStack,
    clusters: Result<&[DynamicObject], String>,
    syntax: &dyn VersionSyntax,
) -> Result<(), Rejection> {
    let what = format!(
        "ClusterStack {}",
        object_label(stack.metadata.namespace.as_ref(), stack.metadata.name.as_ref())
    );
    let clusters = clusters.map_err(|e| Rejection {
        reasons: vec![listing_failed(&what, &e)],
    })?;
    let spec = &stack.spec;
    let prefix = release_name_of_class(&format!(
        "{}-{}-{}-",
        spec.provider, spec.name, spec.kubernetes_version
    ));
    let namespace = stack.metadata.namespace.clone().unwrap_or_default();
    let users: Vec<(String, String)> = clusters
        .iter()
        .map(ClusterUse::of)
        .filter(|c| c.class_namespace == namespace)
        .filter_map(|c| {
            let class = c.class.clone()?;
            let tail = release_name_of_class(&class).strip_prefix(&prefix)?.to_string();
            syntax
                .is_class_version(&tail, spec.channel)
                .then(|| (c.label(), class))
        })
        .collect();
    if users.is_empty() {
        Ok(())
    } else {
        verdict(vec![in_use_by(&what, &users)])
    }
}

/// Deleting a ClusterStackRelease, given the Clusters listed (or why listing failed): refused
/// while a Cluster in its namespace uses the class of the same name.
pub fn release_delete(
    release: &ClusterStackRelease,
    clusters: Result<&[DynamicObject], String>,
) -> Result<(), Rejection> {
    let name = release.metadata.name.clone().unwrap_or_default();
    let namespace = release.metadata.namespace.clone().unwrap_or_default();
    let what = format!("ClusterStackRelease {namespace}/{name}");
    let clusters = clusters.map_err(|e| Rejection {
        reasons: vec![listing_failed(&what, &e)],
    })?;
    let own = release_name_of_class(&name);
    let users: Vec<(String, String)> = clusters
        .iter()
        .map(ClusterUse::of)
        .filter(|c| c.class_namespace == namespace)
        .filter_map(|c| {
            let class = c.class.clone()?;
            (release_name_of_class(&class) == own).then(|| (c.label(), class))
        })
        .collect();
    if users.is_empty() {
        Ok(())
    } else {
        verdict(vec![in_use_by(&what, &users)])
    }
}

fn check_cluster_ref(addon: &ClusterAddon, reasons: &mut Vec<String>) {
    let r = &addon.spec.cluster_ref;
    if r.name.as_deref().unwrap_or("").is_empty() {
        reasons.push("spec.clusterRef.name: required (the Cluster whose addons this is)".into());
    }
    if let Some(kind) = r.kind.as_deref().filter(|k| !k.is_empty() && *k != "Cluster") {
        reasons.push(format!("spec.clusterRef.kind: must be \"Cluster\", not {kind:?}"));
    }
}

/// Creating a ClusterAddon: `clusterRef` must name a Cluster.
pub fn cluster_addon_create(new: &ClusterAddon) -> Result<(), Rejection> {
    let mut reasons = Vec::new();
    check_cluster_ref(new, &mut reasons);
    verdict(reasons)
}

/// Updating a ClusterAddon: `clusterRef` still names a Cluster, the same one (kind, namespace
/// and name; its apiVersion may move on with Cluster API).
pub fn cluster_addon_update(old: &ClusterAddon, new: &ClusterAddon) -> Result<(), Rejection> {
    let mut reasons = Vec::new();
    check_cluster_ref(new, &mut reasons);
    let (o, n) = (&old.spec.cluster_ref, &new.spec.cluster_ref);
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    immutable(
        "spec.clusterRef.kind",
        &text(&o.kind),
        &text(&n.kind),
        &mut reasons,
    );
    immutable(
        "spec.clusterRef.namespace",
        &text(&o.namespace),
        &text(&n.namespace),
        &mut reasons,
    );
    immutable(
        "spec.clusterRef.name",
        &text(&o.name),
        &text(&n.name),
        &mut reasons,
    );
    verdict(reasons)
}

/// Creating or updating a Cluster. `release` is the ClusterStackRelease named after the
/// Cluster's class (see [`release_name_of_class`]), if the caller found one: without it the
/// class is not a stack's and the Cluster is allowed, whatever it holds. With it, the Cluster
/// must run the release's Kubernetes version once the release knows it.
pub fn cluster(cluster: &DynamicObject, release: Option<&ClusterStackRelease>) -> Result<(), Rejection> {
    let Some(release) = release else {
        return Ok(());
    };
    let want = release
        .status
        .as_ref()
        .and_then(|s| s.kubernetes_version.as_deref())
        .filter(|v| !v.is_empty());
    let Some(want) = want else {
        return Ok(());
    };
    let have = cluster
        .data
        .pointer("/spec/topology/version")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let bare = |v: &str| v.strip_prefix('v').unwrap_or(v).to_string();
    if bare(have) == bare(want) {
        return Ok(());
    }
    let class = ClusterUse::of(cluster).class.unwrap_or_default();
    verdict(vec![format!(
        "spec.topology.version: {have:?} does not match class {class}, which is for Kubernetes {want}"
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{
        ClusterAddonSpec, ClusterStackReleaseSpec, ClusterStackReleaseStatus, ClusterStackSpec,
    };
    use k8s_openapi::api::core::v1::ObjectReference;
    use serde_json::json;

    /// A table of known versions — a stand-in for the real parser, which lives in `stack`.
    struct Known;

    impl VersionSyntax for Known {
        fn check_version(&self, version: &str) -> Result<(), String> {
            match version {
                "v1" | "v2" | "v1-alpha.0" | "v0-sha.4e0d8f3" => Ok(()),
                "1" => Err("no \"v\" prefix".into()),
                _ => Err("not in the test table".into()),
            }
        }

        fn is_class_version(&self, tail: &str, channel: Channel) -> bool {
            match channel {
                Channel::Stable => ["v1", "v2", "v3"].contains(&tail),
                Channel::Custom => ["v0-sha-4e0d8f3"].contains(&tail),
            }
        }
    }

    fn stack(versions: &[&str]) -> ClusterStack {
        let mut s = ClusterStack::new(
            "ferrol",
            ClusterStackSpec {
                provider: "docker".into(),
                name: "ferrol".into(),
                kubernetes_version: "1.27".into(),
                channel: Channel::Stable,
                versions: versions.iter().map(|v| v.to_string()).collect(),
                auto_subscribe: true,
                no_provider: true,
                provider_ref: None,
                source: None,
                interval: None,
                addon_values: None,
                verify: None,
                dependency_policy: Vec::new(),
            },
        );
        s.metadata.namespace = Some("cluster".into());
        s
    }

    fn release(name: &str, kubernetes_version: Option<&str>) -> ClusterStackRelease {
        let mut r = ClusterStackRelease::new(name, ClusterStackReleaseSpec::default());
        r.metadata.namespace = Some("cluster".into());
        r.status = Some(ClusterStackReleaseStatus {
            kubernetes_version: kubernetes_version.map(String::from),
            ..ClusterStackReleaseStatus::default()
        });
        r
    }

    fn cluster_object(name: &str, topology: Option<serde_json::Value>) -> DynamicObject {
        let mut obj = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "cluster"},
            "spec": {},
        });
        if let Some(t) = topology {
            obj["spec"]["topology"] = t;
        }
        serde_json::from_value(obj).expect("cluster object")
    }

    fn using(name: &str, class: &str) -> DynamicObject {
        cluster_object(name, Some(json!({"class": class, "version": "v1.27.3"})))
    }

    fn addon(kind: Option<&str>, namespace: Option<&str>, name: Option<&str>) -> ClusterAddon {
        ClusterAddon::new(
            "cluster-addon-a",
            ClusterAddonSpec {
                cluster_ref: ObjectReference {
                    api_version: Some("cluster.x-k8s.io/v1beta1".into()),
                    kind: kind.map(String::from),
                    namespace: namespace.map(String::from),
                    name: name.map(String::from),
                    ..ObjectReference::default()
                },
                ..ClusterAddonSpec::default()
            },
        )
    }

    fn message(result: Result<(), Rejection>) -> String {
        result.expect_err("must be rejected").to_string()
    }

    #[test]
    fn stack_identity_is_immutable() {
        let old = stack(&[]);
        let mut new = stack(&[]);
        new.spec.provider = "openstack".into();
        new.spec.name = "scs".into();
        new.spec.channel = Channel::Custom;
        new.spec.kubernetes_version = "1.28".into();
        assert_eq!(
            message(cluster_stack_update(&old, &new, &Known)),
            "spec.provider: field is immutable (was \"docker\", now \"openstack\"); \
             spec.name: field is immutable (was \"ferrol\", now \"scs\"); \
             spec.channel: field is immutable (was \"stable\", now \"custom\"); \
             spec.kubernetesVersion: field is immutable (was \"1.27\", now \"1.28\")"
        );
    }

    #[test]
    fn each_identity_field_alone_is_refused() {
        let old = stack(&[]);
        type Change = fn(&mut ClusterStack);
        let cases: [(Change, &str); 4] = [
            (
                |s| s.spec.provider = "openstack".into(),
                "spec.provider: field is immutable (was \"docker\", now \"openstack\")",
            ),
            (
                |s| s.spec.name = "scs".into(),
                "spec.name: field is immutable (was \"ferrol\", now \"scs\")",
            ),
            (
                |s| s.spec.channel = Channel::Custom,
                "spec.channel: field is immutable (was \"stable\", now \"custom\")",
            ),
            (
                |s| s.spec.kubernetes_version = "1.28".into(),
                "spec.kubernetesVersion: field is immutable (was \"1.27\", now \"1.28\")",
            ),
        ];
        for (change, want) in cases {
            let mut new = stack(&[]);
            change(&mut new);
            assert_eq!(message(cluster_stack_update(&old, &new, &Known)), want);
        }
    }

    #[test]
    fn other_stack_changes_are_allowed() {
        let old = stack(&["v1"]);
        let mut new = stack(&["v1", "v2", "v1-alpha.0", "v0-sha.4e0d8f3"]);
        new.spec.auto_subscribe = false;
        new.spec.interval = Some("1h".into());
        assert_eq!(cluster_stack_update(&old, &new, &Known), Ok(()));
        assert_eq!(cluster_stack_create(&new, &Known), Ok(()));
    }

    #[test]
    fn versions_must_parse_on_create_and_update() {
        let bad = stack(&["v1", "1", "v2.0"]);
        let want = "spec.versions[1]: \"1\" is not a stack version: no \"v\" prefix; \
                    spec.versions[2]: \"v2.0\" is not a stack version: not in the test table";
        assert_eq!(message(cluster_stack_create(&bad, &Known)), want);
        assert_eq!(message(cluster_stack_update(&stack(&[]), &bad, &Known)), want);
    }

    #[test]
    fn addon_values_must_be_a_yaml_map() {
        let with = |text: &str| {
            let mut s = stack(&[]);
            s.spec.addon_values = Some(text.into());
            s
        };
        for fine in ["", "a: 1\nb:\n  c: null\n", "# nothing\n"] {
            assert_eq!(cluster_stack_create(&with(fine), &Known), Ok(()), "{fine:?}");
        }
        for (bad, problem) in [
            ("a: [\n", "line"),
            ("- a\n", "cannot unmarshal array"),
            ("text", "cannot unmarshal string"),
        ] {
            let why = message(cluster_stack_create(&with(bad), &Known));
            assert!(
                why.starts_with("spec.addonValues: not a YAML map of Helm values: ") && why.contains(problem),
                "{bad:?}: {why}"
            );
            let why = message(cluster_stack_update(&stack(&[]), &with(bad), &Known));
            assert!(why.starts_with("spec.addonValues: "), "{why}");
        }
    }

    #[test]
    fn a_verify_policy_needs_cosign_and_a_secret() {
        use crate::api::{SecretReference, VerifySpec};
        let with = |provider: &str, secret: Option<&str>| {
            let mut s = stack(&[]);
            s.spec.verify = Some(VerifySpec {
                provider: provider.into(),
                secret_ref: secret.map(|name| SecretReference { name: name.into() }),
                ..VerifySpec::default()
            });
            s
        };
        assert_eq!(
            cluster_stack_create(&with("cosign", Some("keys")), &Known),
            Ok(())
        );
        let table = [
            (
                "notation",
                Some("keys"),
                "spec.verify.provider: \"notation\" is not supported",
            ),
            ("", Some("keys"), "spec.verify.provider: \"\" is not supported"),
            ("cosign", None, "spec.verify.secretRef.name: required"),
            ("cosign", Some(" "), "spec.verify.secretRef.name: required"),
        ];
        for (provider, secret, want) in table {
            let bad = with(provider, secret);
            for why in [
                message(cluster_stack_create(&bad, &Known)),
                message(cluster_stack_update(&stack(&[]), &bad, &Known)),
            ] {
                assert!(why.starts_with(want), "{provider:?} {secret:?}: {why}");
            }
        }
    }

    #[test]
    fn dependency_rules_need_repository_urls_secret_names_and_regexes() {
        use crate::api::{DependencyRule, OidcIdentityMatch, SecretReference};
        let rule = |repository: &str| DependencyRule {
            repository: repository.into(),
            keyring_secret_ref: Some(SecretReference {
                name: "keyring".into(),
            }),
            ..DependencyRule::default()
        };
        let with = |rules: Vec<DependencyRule>| {
            let mut s = stack(&[]);
            s.spec.dependency_policy = rules;
            s
        };
        let good = with(vec![
            rule("https://charts.example/signed"),
            rule("oci://registry.example/charts"),
            DependencyRule {
                match_oidc_identity: vec![OidcIdentityMatch {
                    issuer: "https://issuer".into(),
                    subject: ".*@example\\.org".into(),
                }],
                ..rule("oci://registry.example/keyless")
            },
            // Nothing required: exempt from the operator's defaults.
            DependencyRule {
                repository: "https://charts.internal".into(),
                ..DependencyRule::default()
            },
        ]);
        assert_eq!(cluster_stack_create(&good, &Known), Ok(()));
        let table: Vec<(DependencyRule, &str)> = vec![
            (
                rule("ftp://x"),
                "spec.dependencyPolicy[1].repository: \"ftp://x\" is not an https://",
            ),
            (
                rule("https://"),
                "spec.dependencyPolicy[1].repository: \"https://\" is not",
            ),
            (
                rule("https://charts.example/signed/"),
                "spec.dependencyPolicy[1].repository: https://charts.example/signed/ has a rule already",
            ),
            (
                DependencyRule {
                    secret_ref: Some(SecretReference { name: " ".into() }),
                    ..rule("oci://r.example/c")
                },
                "spec.dependencyPolicy[1].secretRef.name: empty",
            ),
            (
                DependencyRule {
                    match_oidc_identity: vec![OidcIdentityMatch {
                        issuer: "(".into(),
                        subject: "x".into(),
                    }],
                    ..rule("oci://r.example/c")
                },
                "spec.dependencyPolicy[1].matchOIDCIdentity[0].issuer: not a regex",
            ),
        ];
        for (bad, want) in table {
            let bad = with(vec![rule("https://charts.example/signed"), bad]);
            for why in [
                message(cluster_stack_create(&bad, &Known)),
                message(cluster_stack_update(&stack(&[]), &bad, &Known)),
            ] {
                assert!(why.starts_with(want), "{why}");
            }
        }
    }

    #[test]
    fn a_keyless_policy_needs_identities_that_are_regexes() {
        use crate::api::{OidcIdentityMatch, SecretReference, VerifySpec};
        let with = |issuer: &str, subject: &str, root: Option<&str>| {
            let mut s = stack(&[]);
            s.spec.verify = Some(VerifySpec {
                provider: "cosign".into(),
                match_oidc_identity: vec![OidcIdentityMatch {
                    issuer: issuer.into(),
                    subject: subject.into(),
                }],
                trusted_root_secret_ref: root.map(|name| SecretReference { name: name.into() }),
                ..VerifySpec::default()
            });
            s
        };
        assert_eq!(
            cluster_stack_create(&with("https://issuer", ".*@example.org", None), &Known),
            Ok(())
        );
        let table = [
            (
                with("(", "x", None),
                "spec.verify.matchOIDCIdentity[0].issuer: not a regex",
            ),
            (
                with("x", "", None),
                "spec.verify.matchOIDCIdentity[0].subject: required",
            ),
            (
                with("x", "y", Some(" ")),
                "spec.verify.trustedRootSecretRef.name: empty",
            ),
        ];
        for (bad, want) in table {
            let why = message(cluster_stack_create(&bad, &Known));
            assert!(why.starts_with(want), "{why}");
        }
    }

    #[test]
    fn cluster_user_values_are_checked_when_set_or_changed() {
        let annotated = |text: &str| {
            let mut c = cluster_object("a", None);
            c.metadata.annotations =
                Some([("clusterstack.x-k8s.io/addon-values".to_string(), text.to_string())].into());
            c
        };
        let (fine, bad) = (annotated("a: 1"), annotated("- a"));
        assert_eq!(cluster_user_values(None, &fine), Ok(()));
        let why = message(cluster_user_values(None, &bad));
        assert!(
            why.starts_with("metadata.annotations[clusterstack.x-k8s.io/addon-values]: not a YAML map"),
            "{why}"
        );
        assert!(
            cluster_user_values(Some(&fine), &bad).is_err(),
            "a change to bad values"
        );
        // Unchanged (admitted before the webhook): never refused.
        assert_eq!(cluster_user_values(Some(&bad), &bad.clone()), Ok(()));
    }

    #[test]
    fn stack_in_use_cannot_be_deleted() {
        let clusters = [
            using("a", "docker-ferrol-1-27-v2"),
            using("b", "docker-ferrol-1-28-v2"),
            using("c", "docker-ferrol-1-27-v3"),
            cluster_object("no-topology", None),
        ];
        assert_eq!(
            message(cluster_stack_delete(&stack(&[]), Ok(&clusters), &Known)),
            "ClusterStack cluster/ferrol is in use by Clusters cluster/a (class docker-ferrol-1-27-v2), \
             cluster/c (class docker-ferrol-1-27-v3); delete those Clusters or move them to another class first"
        );
    }

    #[test]
    fn stack_not_in_use_can_be_deleted() {
        let clusters = [
            using("other-k8s", "docker-ferrol-1-28-v2"),
            using("other-stack", "docker-ferrol2-1-27-v2"),
            using("not-a-version", "docker-ferrol-1-27-v2-extra"),
            cluster_object("no-topology", None),
        ];
        assert_eq!(cluster_stack_delete(&stack(&[]), Ok(&clusters), &Known), Ok(()));
        let mut elsewhere = using("elsewhere", "docker-ferrol-1-27-v2");
        elsewhere.metadata.namespace = Some("other".into());
        assert_eq!(
            cluster_stack_delete(&stack(&[]), Ok(&[elsewhere]), &Known),
            Ok(())
        );
    }

    #[test]
    fn custom_channel_stack_matches_dotted_class_names() {
        let mut s = stack(&[]);
        s.spec.channel = Channel::Custom;
        let clusters = [using("dev", "docker-ferrol-1-27-v0-sha.4e0d8f3")];
        assert_eq!(
            message(cluster_stack_delete(&s, Ok(&clusters), &Known)),
            "ClusterStack cluster/ferrol is in use by Cluster cluster/dev (class docker-ferrol-1-27-v0-sha.4e0d8f3); \
             delete those Clusters or move them to another class first"
        );
    }

    #[test]
    fn stack_deletion_is_refused_when_clusters_cannot_be_listed() {
        assert_eq!(
            message(cluster_stack_delete(
                &stack(&[]),
                Err("connection refused".into()),
                &Known
            )),
            "cannot tell whether a Cluster uses ClusterStack cluster/ferrol: listing Clusters failed: \
             connection refused; deletion refused"
        );
    }

    #[test]
    fn release_in_use_cannot_be_deleted() {
        let clusters = [
            using("a", "docker-ferrol-1-27-v2"),
            using("b", "docker-ferrol-1-27-v3"),
        ];
        assert_eq!(
            message(release_delete(
                &release("docker-ferrol-1-27-v2", None),
                Ok(&clusters)
            )),
            "ClusterStackRelease cluster/docker-ferrol-1-27-v2 is in use by Cluster cluster/a \
             (class docker-ferrol-1-27-v2); delete those Clusters or move them to another class first"
        );
        let dotted = [using("dev", "docker-ferrol-1-27-v0-sha.hipstsw")];
        assert_eq!(
            message(release_delete(
                &release("docker-ferrol-1-27-v0-sha-hipstsw", None),
                Ok(&dotted)
            )),
            "ClusterStackRelease cluster/docker-ferrol-1-27-v0-sha-hipstsw is in use by Cluster cluster/dev \
             (class docker-ferrol-1-27-v0-sha.hipstsw); delete those Clusters or move them to another class first"
        );
    }

    #[test]
    fn release_not_in_use_can_be_deleted_and_listing_failure_refuses() {
        let clusters = [using("b", "docker-ferrol-1-27-v3"), cluster_object("bare", None)];
        let r = release("docker-ferrol-1-27-v2", None);
        assert_eq!(release_delete(&r, Ok(&clusters)), Ok(()));
        assert_eq!(
            message(release_delete(&r, Err("the server is unavailable".into()))),
            "cannot tell whether a Cluster uses ClusterStackRelease cluster/docker-ferrol-1-27-v2: \
             listing Clusters failed: the server is unavailable; deletion refused"
        );
    }

    #[test]
    fn addon_cluster_ref_is_required() {
        assert_eq!(
            message(cluster_addon_create(&addon(
                Some("Cluster"),
                Some("cluster"),
                None
            ))),
            "spec.clusterRef.name: required (the Cluster whose addons this is)"
        );
        assert_eq!(
            message(cluster_addon_create(&addon(
                Some("Machine"),
                Some("cluster"),
                Some("a")
            ))),
            "spec.clusterRef.kind: must be \"Cluster\", not \"Machine\""
        );
        assert_eq!(
            cluster_addon_create(&addon(Some("Cluster"), Some("cluster"), Some("a"))),
            Ok(())
        );
        assert_eq!(cluster_addon_create(&addon(None, None, Some("a"))), Ok(()));
    }

    #[test]
    fn addon_cluster_ref_is_immutable() {
        let old = addon(Some("Cluster"), Some("cluster"), Some("a"));
        assert_eq!(
            message(cluster_addon_update(
                &old,
                &addon(Some("Cluster"), Some("cluster"), Some("b"))
            )),
            "spec.clusterRef.name: field is immutable (was \"a\", now \"b\")"
        );
        assert_eq!(
            message(cluster_addon_update(
                &old,
                &addon(Some("Cluster"), Some("other"), Some("a"))
            )),
            "spec.clusterRef.namespace: field is immutable (was \"cluster\", now \"other\")"
        );
        assert_eq!(
            message(cluster_addon_update(
                &old,
                &addon(Some("Cluster"), Some("cluster"), None)
            )),
            "spec.clusterRef.name: required (the Cluster whose addons this is); \
             spec.clusterRef.name: field is immutable (was \"a\", now \"\")"
        );
        let mut newer_api = addon(Some("Cluster"), Some("cluster"), Some("a"));
        newer_api.spec.cluster_ref.api_version = Some("cluster.x-k8s.io/v1beta2".into());
        newer_api.spec.hook = Some("BeforeClusterUpgrade".into());
        assert_eq!(cluster_addon_update(&old, &newer_api), Ok(()));
    }

    #[test]
    fn clusters_without_a_stack_class_are_never_rejected() {
        for c in [
            cluster_object("bare", None),
            cluster_object("empty-topology", Some(json!({}))),
            using("foreign-class", "my-own-class"),
        ] {
            assert_eq!(cluster(&c, None), Ok(()));
        }
    }

    #[test]
    fn cluster_must_run_its_release_kubernetes_version() {
        let r = release("docker-ferrol-1-27-v2", Some("v1.27.3"));
        let wrong = cluster_object(
            "a",
            Some(json!({"class": "docker-ferrol-1-27-v2", "version": "v1.27.2"})),
        );
        assert_eq!(
            message(cluster(&wrong, Some(&r))),
            "spec.topology.version: \"v1.27.2\" does not match class docker-ferrol-1-27-v2, \
             which is for Kubernetes v1.27.3"
        );
        assert_eq!(cluster(&using("b", "docker-ferrol-1-27-v2"), Some(&r)), Ok(()));
        let unversioned = release("docker-ferrol-1-27-v2", Some("1.27.3"));
        assert_eq!(
            cluster(&using("c", "docker-ferrol-1-27-v2"), Some(&unversioned)),
            Ok(())
        );
        let not_ready = release("docker-ferrol-1-27-v2", None);
        assert_eq!(cluster(&wrong, Some(&not_ready)), Ok(()));
    }
}
