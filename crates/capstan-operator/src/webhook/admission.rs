//! One AdmissionReview in, one out: reads the request, fetches what a rule needs from the API
//! server (the namespace's Clusters for deletions, the ClusterStackRelease of a Cluster's
//! class) and answers with the rule's verdict from [`super::validate`].
//!
//! A request that cannot be read is denied with why; it never panics the server.

use std::time::Duration;

use kube::api::{DynamicObject, ListParams};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::{Api, Client};
use serde_json::Value as Json;

use super::validate::{self, Rejection};
use super::validate_rollout;
use super::versions::StackVersions;
use crate::api::{ClusterAddon, ClusterStack, ClusterStackRelease, ClusterStackRollout};
use crate::clusters::{ClusterUse, release_name_of_class};

/// Lookups give up after this, well inside the API server's default webhook timeout (10 s), so
/// the user reads capstan's answer rather than a timeout.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The webhooks, one per path the install chart registers
/// (`deploy/capstan/templates/webhook.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    ClusterStack,
    ClusterStackRelease,
    ClusterAddon,
    Cluster,
    ClusterStackRollout,
}

impl Hook {
    pub const ALL: [Hook; 5] = [
        Hook::ClusterStack,
        Hook::ClusterStackRelease,
        Hook::ClusterAddon,
        Hook::Cluster,
        Hook::ClusterStackRollout,
    ];

    /// The URL path the API server posts this webhook's reviews to.
    pub fn path(self) -> &'static str {
        match self {
            Hook::ClusterStack => "/validate-clusterstack-x-k8s-io-v1alpha1-clusterstack",
            Hook::ClusterStackRelease => "/validate-clusterstack-x-k8s-io-v1alpha1-clusterstackrelease",
            Hook::ClusterAddon => "/validate-clusterstack-x-k8s-io-v1alpha1-clusteraddon",
            Hook::Cluster => "/validate-cluster-x-k8s-io-v1beta1-cluster",
            Hook::ClusterStackRollout => "/validate-capstan-dev-v1alpha1-clusterstackrollout",
        }
    }

    #[cfg(test)]
    pub fn of_path(path: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.path() == path)
    }

    /// The kind whose requests this webhook validates.
    pub fn kind(self) -> &'static str {
        match self {
            Hook::ClusterStack => "ClusterStack",
            Hook::ClusterStackRelease => "ClusterStackRelease",
            Hook::ClusterAddon => "ClusterAddon",
            Hook::Cluster => "Cluster",
            Hook::ClusterStackRollout => "ClusterStackRollout",
        }
    }
}

/// Answers the review in `body` (JSON) for `hook`.
pub async fn review(hook: Hook, body: &[u8], client: &Client) -> AdmissionReview<DynamicObject> {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return unreadable(body, format!("cannot read the AdmissionReview: {e}")),
    };
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(r) => r,
        Err(_) => return unreadable(body, "the AdmissionReview holds no request".into()),
    };
    let response = AdmissionResponse::from(&request);
    match decide(hook, &request, client).await {
        Ok(Verdict::Allow) => response,
        Ok(Verdict::AllowWithWarnings(warnings)) => {
            let mut response = response;
            response.warnings = Some(warnings);
            response
        }
        Err(denial) => {
            tracing::info!(
                kind = %request.kind.kind,
                namespace = request.namespace.as_deref().unwrap_or(""),
                name = %request.name,
                operation = ?request.operation,
                reason = %denial,
                "admission denied"
            );
            response.deny(denial)
        }
    }
    .into_review()
}

/// A denial for a body that is not a readable review, with the request's uid when it has
/// one, so the API server can still match the answer to its request.
fn unreadable(body: &[u8], why: String) -> AdmissionReview<DynamicObject> {
    let mut response = AdmissionResponse::invalid(why);
    if let Some(uid) = serde_json::from_slice::<Json>(body)
        .ok()
        .and_then(|j| j.pointer("/request/uid").and_then(Json::as_str).map(String::from))
    {
        response.uid = uid;
    }
    response.into_review()
}

enum Verdict {
    Allow,
    /// Allowed, with something the user should know (shown by kubectl as `Warning:`).
    AllowWithWarnings(Vec<String>),
}

fn from_rule(rule: Result<(), Rejection>) -> Result<Verdict, String> {
    rule.map(|()| Verdict::Allow).map_err(|r| r.to_string())
}

async fn decide(
    hook: Hook,
    req: &AdmissionRequest<DynamicObject>,
    client: &Client,
) -> Result<Verdict, String> {
    if req.kind.kind != hook.kind() {
        return Err(format!(
            "this webhook validates {}, not {} (check the webhook configuration's path)",
            hook.kind(),
            req.kind.kind
        ));
    }
    if hook == Hook::Cluster
        && let Some(cluster) = &req.object
        && matches!(req.operation, Operation::Create | Operation::Update)
    {
        from_rule(validate::cluster_user_values(req.old_object.as_ref(), cluster))?;
    }
    if req.operation == Operation::Update && spec_unchanged(req) {
        return Ok(Verdict::Allow);
    }
    let namespace = req.namespace.clone().unwrap_or_default();
    match (hook, &req.operation) {
        (Hook::ClusterStack, Operation::Create) => {
            let new: ClusterStack = object(req)?;
            from_rule(validate::cluster_stack_create(&new, &StackVersions))
        }
        (Hook::ClusterStack, Operation::Update) => {
            let (old, new): (ClusterStack, ClusterStack) = (old_object(req)?, object(req)?);
            from_rule(validate::cluster_stack_update(&old, &new, &StackVersions))
        }
        (Hook::ClusterStack, Operation::Delete) => {
            let old: ClusterStack = old_object(req)?;
            let clusters = list_clusters(client, &namespace).await;
            from_rule(validate::cluster_stack_delete(
                &old,
                clusters.as_deref().map_err(Clone::clone),
                &StackVersions,
            ))
        }
        (Hook::ClusterStackRelease, Operation::Delete) => {
            let old: ClusterStackRelease = old_object(req)?;
            let clusters = list_clusters(client, &namespace).await;
            from_rule(validate::release_delete(
                &old,
                clusters.as_deref().map_err(Clone::clone),
            ))
        }
        (Hook::ClusterAddon, Operation::Create) => {
            let new: ClusterAddon = object(req)?;
            from_rule(validate::cluster_addon_create(&new))
        }
        (Hook::ClusterAddon, Operation::Update) => {
            let (old, new): (ClusterAddon, ClusterAddon) = (old_object(req)?, object(req)?);
            from_rule(validate::cluster_addon_update(&old, &new))
        }
        (Hook::Cluster, Operation::Create | Operation::Update) => {
            let cluster = req
                .object
                .as_ref()
                .ok_or_else(|| "the request holds no object to validate".to_string())?;
            check_cluster(client, cluster).await
        }
        (Hook::ClusterStackRollout, Operation::Create | Operation::Update) => {
            let new: ClusterStackRollout = object(req)?;
            check_rollout(client, &namespace, &new).await
        }
        // Operations the install chart does not register for this webhook have no rule.
        _ => Ok(Verdict::Allow),
    }
}

/// Whether an update leaves the spec as it was. The rules guard the spec only; a metadata
/// change (a finalizer, a label) of an object admitted before the webhooks were (e.g. by CSO,
/// whose version syntax is looser) must never be blocked, or its deletion could hang.
fn spec_unchanged(req: &AdmissionRequest<DynamicObject>) -> bool {
    match (&req.old_object, &req.object) {
        (Some(old), Some(new)) => old.data.get("spec") == new.data.get("spec"),
        _ => false,
    }
}

fn parse<K: kube::Resource + serde::de::DeserializeOwned>(
    obj: Option<&DynamicObject>,
    which: &str,
    kind: &str,
) -> Result<K, String> {
    let obj = obj.ok_or_else(|| format!("the request holds no {which} to validate"))?;
    obj.clone()
        .try_parse::<K>()
        .map_err(|e| format!("the {which} is not a valid {kind}: {e}"))
}

fn object<K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned>(
    req: &AdmissionRequest<DynamicObject>,
) -> Result<K, String> {
    parse(req.object.as_ref(), "object", &K::kind(&()))
}

fn old_object<K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned>(
    req: &AdmissionRequest<DynamicObject>,
) -> Result<K, String> {
    parse(req.old_object.as_ref(), "oldObject", &K::kind(&()))
}

/// What went wrong talking to the API server, as its own message says it when it answered.
fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// The Clusters of `namespace`, or why they could not be listed (which refuses a deletion).
async fn list_clusters(client: &Client, namespace: &str) -> Result<Vec<DynamicObject>, String> {
    // Cluster API's Cluster, read as a dynamic object (capstan has no typed Cluster) in the
    // version spoken.
    let listing = async {
        let version = crate::capi_api::ensure_discovered(client).await;
        let resource = crate::capi_api::cluster_resource_of(version);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        api.list(&ListParams::default()).await
    };
    match tokio::time::timeout(LOOKUP_TIMEOUT, listing).await {
        Ok(Ok(list)) => Ok(list.items),
        Ok(Err(e)) => Err(error_text(&e)),
        Err(_) => Err(format!("no answer within {}s", LOOKUP_TIMEOUT.as_secs())),
    }
}

/// The Cluster rule with the release of the Cluster's class. A Cluster without a class, or
/// whose class has no ClusterStackRelease, is not a stack's and is allowed. When the release
/// cannot be read the Cluster is allowed with a warning: refusing would block Cluster API's own
/// controllers, which update Clusters all the time, over a check of the Kubernetes version.
async fn check_cluster(client: &Client, cluster: &DynamicObject) -> Result<Verdict, String> {
    let usage = ClusterUse::of(cluster);
    let Some(class) = usage.class else {
        return Ok(Verdict::Allow);
    };
    let name = release_name_of_class(&class);
    let api: Api<ClusterStackRelease> = Api::namespaced(client.clone(), &usage.class_namespace);
    let found = match tokio::time::timeout(LOOKUP_TIMEOUT, api.get_opt(&name)).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return Ok(unchecked(&usage.class_namespace, &name, &error_text(&e))),
        Err(_) => {
            let why = format!("no answer within {}s", LOOKUP_TIMEOUT.as_secs());
            return Ok(unchecked(&usage.class_namespace, &name, &why));
        }
    };
    from_rule(validate::cluster(cluster, found.as_ref()))
}

/// The rollout rules with what the namespace holds: its ClusterStack, releases and rollouts.
/// When they cannot be read the rollout is refused with why (nothing runs until it exists).
async fn check_rollout(
    client: &Client,
    namespace: &str,
    new: &ClusterStackRollout,
) -> Result<Verdict, String> {
    let cannot = |what: &str, why: String| format!("cannot check the rollout: reading {what} failed: {why}");
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), namespace);
    let stack = lookup(stacks.get_opt(&new.spec.cluster_stack))
        .await
        .map_err(|why| cannot("the ClusterStack", why))?;
    let releases: Api<ClusterStackRelease> = Api::namespaced(client.clone(), namespace);
    let releases = lookup(releases.list(&ListParams::default()))
        .await
        .map_err(|why| cannot("the ClusterStackReleases", why))?;
    // The namespace's stacks only for a `from` (the common rollout reads none).
    let all_stacks = if new.spec.from.is_some() {
        lookup(stacks.list(&ListParams::default()))
            .await
            .map_err(|why| cannot("the ClusterStacks", why))?
            .items
    } else {
        Vec::new()
    };
    let rollouts: Api<ClusterStackRollout> = Api::namespaced(client.clone(), namespace);
    let rollouts = lookup(rollouts.list(&ListParams::default()))
        .await
        .map_err(|why| cannot("the ClusterStackRollouts", why))?;
    let held = validate_rollout::Namespace {
        stack: stack.as_ref(),
        stacks: &all_stacks,
        releases: &releases.items,
        rollouts: &rollouts.items,
    };
    validate_rollout::rollout(new, held).map_err(|r| r.to_string())?;
    let warnings = validate_rollout::warnings(new, held);
    Ok(match warnings.is_empty() {
        true => Verdict::Allow,
        false => Verdict::AllowWithWarnings(warnings),
    })
}

/// A lookup within [`LOOKUP_TIMEOUT`], its error as text.
async fn lookup<T>(request: impl std::future::Future<Output = Result<T, kube::Error>>) -> Result<T, String> {
    match tokio::time::timeout(LOOKUP_TIMEOUT, request).await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(e)) => Err(error_text(&e)),
        Err(_) => Err(format!("no answer within {}s", LOOKUP_TIMEOUT.as_secs())),
    }
}

fn unchecked(namespace: &str, name: &str, why: &str) -> Verdict {
    tracing::warn!(%namespace, release = %name, error = %why, "Cluster admitted unchecked");
    Verdict::AllowWithWarnings(vec![format!(
        "capstan could not read ClusterStackRelease {namespace}/{name} ({why}); the Cluster's Kubernetes version was not checked"
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A client for an address where nothing listens: any lookup fails at once.
    fn unreachable() -> Client {
        let url = "https://127.0.0.1:1".parse().expect("URL");
        Client::try_from(kube::Config::new(url)).expect("client")
    }

    fn stack(versions: &[&str]) -> Json {
        json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
            "metadata": {"name": "ferrol", "namespace": "stacks"},
            "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                     "channel": "stable", "versions": versions},
        })
    }

    fn request(kind: &str, operation: &str, object: Option<Json>, old: Option<Json>) -> Vec<u8> {
        let group = match kind {
            "Cluster" => "cluster.x-k8s.io",
            "ClusterStackRollout" => "capstan.dev",
            _ => "clusterstack.x-k8s.io",
        };
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "0e1b7c55-0000-4000-8000-00000000000a",
                "kind": {"group": group, "version": "v1", "kind": kind},
                "resource": {"group": group, "version": "v1", "resource": "x"},
                "name": "ferrol", "namespace": "stacks", "operation": operation,
                "userInfo": {}, "object": object, "oldObject": old,
            },
        });
        serde_json::to_vec(&review).expect("JSON")
    }

    /// (allowed, message, uid) of the answer.
    async fn answer(hook: Hook, body: &[u8]) -> (bool, String, String) {
        let review = review(hook, body, &unreachable()).await;
        let response = review.response.expect("a response");
        (response.allowed, response.result.message, response.uid)
    }

    #[tokio::test]
    async fn unreadable_reviews_are_denied_with_why() {
        let (allowed, message, uid) = answer(Hook::ClusterStack, b"{\"request\": 1}").await;
        assert!(!allowed);
        assert_eq!(
            message,
            "cannot read the AdmissionReview: invalid type: integer `1`, expected struct AdmissionRequest at line 1 column 13"
        );
        assert_eq!(uid, "");
        let (allowed, message, _) = answer(
            Hook::ClusterStack,
            br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#,
        )
        .await;
        assert!(!allowed);
        assert_eq!(message, "the AdmissionReview holds no request");
        // A readable uid is kept even when the rest is not.
        let bad_object = request("ClusterStack", "CREATE", Some(json!(5)), None);
        let (allowed, message, uid) = answer(Hook::ClusterStack, &bad_object).await;
        assert!(!allowed);
        assert!(
            message.starts_with("cannot read the AdmissionReview: "),
            "{message}"
        );
        assert_eq!(uid, "0e1b7c55-0000-4000-8000-00000000000a");
    }

    #[tokio::test]
    async fn objects_that_are_not_the_kind_are_denied() {
        let mut broken = stack(&[]);
        broken["spec"]["versions"] = json!("v1");
        let body = request("ClusterStack", "CREATE", Some(broken), None);
        let (allowed, message, _) = answer(Hook::ClusterStack, &body).await;
        assert!(!allowed);
        assert!(
            message.starts_with("the object is not a valid ClusterStack: "),
            "{message}"
        );
    }

    #[tokio::test]
    async fn updates_that_leave_the_spec_alone_are_allowed() {
        // Admitted before the webhook: a version capstan does not accept.
        let mut old = stack(&["1"]);
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["clusterstack.x-k8s.io/cleanup"]);
        let body = request("ClusterStack", "UPDATE", Some(new.clone()), Some(old.clone()));
        assert!(answer(Hook::ClusterStack, &body).await.0);

        new["spec"]["autoSubscribe"] = json!(false);
        let body = request("ClusterStack", "UPDATE", Some(new), Some(old.clone()));
        let (allowed, message, _) = answer(Hook::ClusterStack, &body).await;
        assert!(!allowed);
        assert!(
            message.starts_with("spec.versions[0]: \"1\" is not a stack version: "),
            "{message}"
        );

        old["spec"]["versions"] = json!([]);
        let body = request("ClusterStack", "UPDATE", Some(stack(&["v1"])), Some(old));
        assert!(answer(Hook::ClusterStack, &body).await.0);
    }

    #[tokio::test]
    async fn deletion_is_refused_when_the_api_server_cannot_be_reached() {
        let body = request("ClusterStack", "DELETE", None, Some(stack(&[])));
        let (allowed, message, uid) = answer(Hook::ClusterStack, &body).await;
        assert!(!allowed);
        assert!(
            message.starts_with(
                "cannot tell whether a Cluster uses ClusterStack stacks/ferrol: listing Clusters failed: "
            ),
            "{message}"
        );
        assert!(message.ends_with("; deletion refused"), "{message}");
        assert_eq!(uid, "0e1b7c55-0000-4000-8000-00000000000a");
    }

    #[tokio::test]
    async fn clusters_and_unregistered_operations_need_no_lookup() {
        let bare = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "bare", "namespace": "stacks"}, "spec": {},
        });
        let body = request("Cluster", "CREATE", Some(bare), None);
        assert!(answer(Hook::Cluster, &body).await.0);
        let body = request("ClusterAddon", "DELETE", None, None);
        assert!(answer(Hook::ClusterAddon, &body).await.0);
    }

    #[tokio::test]
    async fn a_cluster_whose_release_cannot_be_read_is_allowed_with_a_warning() {
        let using = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "a", "namespace": "stacks"},
            "spec": {"topology": {"class": "docker-ferrol-1-27-v1", "version": "v1.20.0"}},
        });
        let body = request("Cluster", "CREATE", Some(using), None);
        let response = review(Hook::Cluster, &body, &unreachable())
            .await
            .response
            .expect("a response");
        assert!(response.allowed);
        let warnings = response.warnings.expect("a warning");
        assert!(
            warnings[0]
                .starts_with("capstan could not read ClusterStackRelease stacks/docker-ferrol-1-27-v1 ("),
            "{warnings:?}"
        );
    }

    #[tokio::test]
    async fn a_rollout_is_refused_when_its_namespace_cannot_be_read() {
        let rollout = json!({
            "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
            "metadata": {"name": "ferrol", "namespace": "stacks"},
            "spec": {"clusterStack": "ferrol", "waves": [{"name": "all"}]},
        });
        let body = request("ClusterStackRollout", "CREATE", Some(rollout), None);
        let (allowed, message, _) = answer(Hook::ClusterStackRollout, &body).await;
        assert!(!allowed);
        assert!(
            message.starts_with("cannot check the rollout: reading the ClusterStack failed: "),
            "{message}"
        );
    }

    #[test]
    fn paths_are_the_install_charts() {
        let chart = include_str!("../../../../deploy/capstan/templates/webhook.yaml");
        // The chart builds each path as /validate-<group with dashes>-<version>-<kind>.
        for (hook, group, version, kind) in [
            (
                Hook::ClusterStack,
                "clusterstack.x-k8s.io",
                "v1alpha1",
                "clusterstack",
            ),
            (
                Hook::ClusterStackRelease,
                "clusterstack.x-k8s.io",
                "v1alpha1",
                "clusterstackrelease",
            ),
            (
                Hook::ClusterAddon,
                "clusterstack.x-k8s.io",
                "v1alpha1",
                "clusteraddon",
            ),
            (Hook::Cluster, "cluster.x-k8s.io", "v1beta1", "cluster"),
            (
                Hook::ClusterStackRollout,
                "capstan.dev",
                "v1alpha1",
                "clusterstackrollout",
            ),
        ] {
            assert!(
                chart.contains(&format!("(list {kind:?} {group:?} {version:?}")),
                "{kind}"
            );
            let path = format!("/validate-{}-{version}-{kind}", group.replace('.', "-"));
            assert_eq!(hook.path(), path);
            assert_eq!(Hook::of_path(&path), Some(hook));
        }
        assert!(
            chart.contains("path: /validate-{{ $group | replace \".\" \"-\" }}-{{ $version }}-{{ $kind }}")
        );
        assert_eq!(Hook::of_path("/validate-cluster"), None);
    }
}
