//! Why a reconcile failed, as typed values that keep their source: the step whose condition
//! records the failure, the cause (an API error with its status code, the source, store,
//! render or apply error), whether retrying can help, and the label the error counter uses.
//!
//! Terminal vs retryable (Flux's `TerminalError` is the model): a failure that the same inputs
//! will reproduce — a chart that does not render, a manifest that does not parse, a spec that
//! names nothing usable — is not retried on the backoff ladder; the object waits for a change
//! (every watch event reconciles it) or for [`TERMINAL_RETRY`]. Everything else (the network,
//! an API server, a registry) is retried with capped exponential backoff.

use std::time::Duration;

use crate::addon::condition::ConditionError;
use crate::addon::workload::Gate;
use crate::kube_error::retryable_kube;
use crate::sources::SourceError;
use crate::store::StoreError;

/// How long an object whose last error was terminal waits when nothing changes.
pub const TERMINAL_RETRY: Duration = Duration::from_secs(600);

/// Why a reconcile failed; the text is what conditions and events show.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A step failed; its condition `step` says so with `reason` and the cause's text.
    #[error("{step}: {cause}")]
    Step {
        step: &'static str,
        reason: &'static str,
        #[source]
        cause: Box<Cause>,
    },
    /// A request to the management cluster outside a step (status, events' objects, owned
    /// objects) failed.
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// A status that does not encode as JSON (a bug; never retried in a loop).
    #[error("encoding the status of {what}: {source}")]
    Encode {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// A deletion that must wait (e.g. a class still in use): the finalizer stays and the
    /// object is looked at again after `retry`. Returned as an error because kube's finalizer
    /// helper removes the finalizer after any successful cleanup.
    #[error("{reason}")]
    Waiting { reason: String, retry: Duration },
    /// kube's finalizer helper failed to add or remove the finalizer.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

/// What made a step fail.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// A request failed; the error alone says enough.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// No ClusterStack gives the release a source (one may yet be created).
    #[error("no ClusterStack in namespace {namespace} follows {stack}{detail}")]
    NoClusterStack {
        namespace: String,
        stack: String,
        detail: &'static str,
    },
    #[error(transparent)]
    Source(Box<SourceError>),
    #[error(transparent)]
    SourceConfig(#[from] SourceConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A release whose charts do not compile (their dependencies included), its files named
    /// as the release's (`TAG/FILE`), not in the temporary copy they were read from.
    #[error("{0}")]
    Compile(#[source] Box<capstan_source::local::InRelease<capstan_stack::render::RenderError>>),
    /// A chart dependency that failed its signature policy (`reason`: `WrongKey`,
    /// `NoProvenance`, …); the compile's error, naming the chart, dependency and repository.
    #[error("{error}")]
    DependencyRefused {
        reason: &'static str,
        #[source]
        error: capstan_stack::render::RenderError,
    },
    /// The chart resolver could not be made (the source crate reports it as text).
    #[error("{0}")]
    Resolver(String),
    /// A chart that does not render with these inputs.
    #[error(transparent)]
    Render(#[from] capstan_stack::render::RenderError),
    /// A live object that does not read as values.
    #[error(transparent)]
    Values(#[from] capstan_stack::DocumentError),
    /// A Cluster (or what it references) capstan cannot read as values templates see it.
    #[error(transparent)]
    ClusterObjects(#[from] capstan_stack::values::ObjectsError),
    /// A ClusterClass chart's object that cannot be applied in the Cluster API version spoken.
    #[error(transparent)]
    ClassVersion(#[from] capstan_stack::capi::to_v1beta2::ClassVersionError),
    /// No Cluster API version capstan speaks is served (or discovery failed).
    #[error("Cluster API cannot be used: {0}")]
    ClusterApiNotServed(String),
    #[error(transparent)]
    Manifest(#[from] capstan_apply::ParseError),
    #[error(transparent)]
    Apply(#[from] capstan_apply::Error),
    /// Objects of an apply or prune failed; names each with the server's words.
    #[error("{0}")]
    Objects(String),
    /// A stage's wait condition could not be evaluated.
    #[error("stage {stage}: {phase}: {source}")]
    Condition {
        stage: String,
        phase: &'static str,
        #[source]
        source: Box<ConditionError>,
    },
    /// The provider's part of a release.
    #[error(transparent)]
    Provider(#[from] super::provider::ProviderError),
    /// The workload cluster cannot be used.
    #[error(transparent)]
    Gate(#[from] Gate),
    /// The workload cluster the addons were applied to does not answer.
    #[error("the workload cluster of Cluster {cluster} is unreachable: {gate}")]
    Unreachable { cluster: String, gate: Gate },
    /// The spec (or the release it names) can never work as it is.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The user's values (ClusterStack `addonValues`, a Cluster's annotations or the object
    /// they name) are not a YAML map; the text names the source.
    #[error("{0}")]
    UserValues(String),
    /// Blocking work (a digest, a compile, a render) panicked or was cancelled.
    #[error("{what}: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

/// A spec or release that the same inputs will never make work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("stage {index} of {hook} is not in the release")]
    NoSuchStage { hook: String, index: usize },
}

/// Why a ClusterStack's source (with its credentials) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceConfigError {
    #[error(
        "ClusterStack {namespace}/{name} has no spec.source and the operator has no default source: set spec.source.github, .oci, .git or .local, or start the operator with --source oci (OCI_REGISTRY, OCI_REPOSITORY) or with GIT_ORG_NAME and GIT_REPOSITORY_NAME (--git-org-name, --git-repository-name)"
    )]
    NoSource { namespace: String, name: String },
    #[error("reading Secret {namespace}/{name}: {source}")]
    ReadSecret {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Secret {namespace}/{name} has no data.token")]
    NoToken { namespace: String, name: String },
    #[error("Secret {namespace}/{name} has neither data.username (with data.password) nor data.token")]
    NoCredentials { namespace: String, name: String },
    #[error("spec.source.oci.repository: {0}")]
    OciRepository(#[source] capstan_source::oci::OciError),
    #[error("spec.verify.provider: {provider:?} is not supported (only \"cosign\")")]
    VerifyProvider { provider: String },
    #[error("spec.verify.secretRef.name is required: the Secret with the trusted *.pub keys")]
    NoVerifySecret,
    #[error("Secret {namespace}/{name} has no *.pub entry (the trusted public keys of spec.verify)")]
    NoVerifyKeys { namespace: String, name: String },
    #[error(transparent)]
    VerifyKey(#[from] capstan_source::verify::KeyError),
    #[error("spec.verify.matchOIDCIdentity[{index}]: {message}")]
    VerifyIdentity { index: usize, message: String },
    #[error("Secret {namespace}/{name} has no data.trusted_root.json (spec.verify.trustedRootSecretRef)")]
    NoTrustedRoot { namespace: String, name: String },
    #[error(transparent)]
    TrustedRoot(#[from] capstan_source::verify::TrustedRootError),
    #[error(transparent)]
    DependencyPolicy(#[from] DependencyPolicyError),
}

/// A rule of `spec.dependencyPolicy` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("spec.dependencyPolicy[{index}]: {problem}")]
pub struct DependencyPolicyError {
    pub index: usize,
    pub problem: Problem,
}

/// What is wrong with one rule.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error(
        "Secret {namespace}/{name} has no *.gpg or *.asc entry (the OpenPGP keyring of keyringSecretRef)"
    )]
    NoKeyring { namespace: String, name: String },
    #[error(transparent)]
    Keyring(#[from] capstan_source::verify::provenance::KeyringError),
    #[error("Secret {namespace}/{name} has no *.pub entry (the cosign public keys of secretRef)")]
    NoKeys { namespace: String, name: String },
    #[error(transparent)]
    Key(#[from] capstan_source::verify::KeyError),
    #[error("matchOIDCIdentity[{index}]: {message}")]
    Identity { index: usize, message: String },
    #[error("Secret {namespace}/{name} has no data.trusted_root.json (trustedRootSecretRef)")]
    NoTrustedRoot { namespace: String, name: String },
    #[error(transparent)]
    TrustedRoot(#[from] capstan_source::verify::TrustedRootError),
    /// A Secret the reader did not hand over (a bug: every named Secret is read first).
    #[error("Secret {namespace}/{name} was not read")]
    Unread { namespace: String, name: String },
}

impl From<SourceError> for Cause {
    fn from(error: SourceError) -> Cause {
        Cause::Source(Box::new(error))
    }
}

impl SourceConfigError {
    /// A missing source or an unusable repository needs a change of the spec; a Secret may
    /// yet appear or be filled.
    fn is_terminal(&self) -> bool {
        matches!(
            self,
            SourceConfigError::NoSource { .. }
                | SourceConfigError::OciRepository(_)
                | SourceConfigError::VerifyProvider { .. }
                | SourceConfigError::NoVerifySecret
                | SourceConfigError::VerifyIdentity { .. }
        )
    }
}

impl Cause {
    /// Whether the same inputs will fail the same way (see the module docs).
    pub fn is_terminal(&self) -> bool {
        match self {
            Cause::Render(_)
            | Cause::Values(_)
            | Cause::Manifest(_)
            | Cause::Invalid(_)
            | Cause::UserValues(_) => true,
            Cause::Apply(capstan_apply::Error::Refused(_) | capstan_apply::Error::PruneWithoutInventory) => {
                true
            }
            Cause::SourceConfig(e) => e.is_terminal(),
            Cause::Provider(e) => e.is_terminal(),
            Cause::Api(source) | Cause::Apply(capstan_apply::Error::Delete { source, .. }) => {
                !retryable_kube(source)
            }
            Cause::Condition { source, .. } => matches!(
                **source,
                ConditionError::Syntax { .. }
                    | ConditionError::UnknownName { .. }
                    | ConditionError::NotBool { .. }
                    | ConditionError::NoNamespace { .. }
            ),
            _ => false,
        }
    }

    /// The label of this cause in the error counter.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Cause::Api(_) => "kube",
            Cause::Source(_) => "source",
            Cause::SourceConfig(_) => "source_config",
            Cause::Store(_) => "store",
            Cause::Compile(_) | Cause::Resolver(_) => "compile",
            Cause::DependencyRefused { .. } => "verify",
            Cause::Render(_) | Cause::Values(_) | Cause::ClusterObjects(_) => "render",
            Cause::ClusterApiNotServed(_) => "cluster_api_not_served",
            Cause::Manifest(_) | Cause::ClassVersion(_) => "manifest",
            Cause::Apply(_) | Cause::Objects(_) => "apply",
            Cause::Condition { .. } => "condition",
            Cause::Gate(_) | Cause::Unreachable { .. } => "workload",
            Cause::Provider(_) => "provider",
            Cause::Invalid(_) => "invalid",
            Cause::UserValues(_) => "user_values",
            Cause::NoClusterStack { .. } => "no_cluster_stack",
            Cause::Task { .. } => "task",
        }
    }
}

impl Error {
    /// A failed step.
    pub fn step(step: &'static str, reason: &'static str, cause: impl Into<Cause>) -> Error {
        Error::Step {
            step,
            reason,
            cause: Box::new(cause.into()),
        }
    }

    /// A failed request outside a step.
    pub fn kube(what: impl Into<String>, source: kube::Error) -> Error {
        Error::Kube {
            what: what.into(),
            source,
        }
    }

    /// Whether retrying with the same inputs cannot help (see the module docs).
    pub fn is_terminal(&self) -> bool {
        match self {
            Error::Step { cause, .. } => cause.is_terminal(),
            Error::Kube { source, .. } => !retryable_kube(source),
            Error::Encode { .. } => true,
            Error::Waiting { .. } | Error::Finalizer(_) => false,
        }
    }

    /// The label of this error in `capstan_reconcile_errors_total{error=…}`: the cause's
    /// kind, never its text (bounded cardinality).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Step { cause, .. } => cause.metric_label(),
            Error::Kube { .. } => "kube",
            Error::Encode { .. } => "encode",
            Error::Waiting { .. } => "waiting",
            Error::Finalizer(_) => "finalizer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("boom", "Reason")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn terminal_or_retryable() {
        let invalid = Invalid::NoSuchStage {
            hook: "AfterControlPlaneInitialized".into(),
            index: 3,
        };
        let cases: Vec<(Error, bool, &str)> = vec![
            (Error::step("Rendered", "NoSuchStage", invalid), true, "invalid"),
            (
                Error::step(
                    "Rendered",
                    "RenderFailed",
                    capstan_stack::render::RenderError::Part {
                        release: "docker-ferrol-1-27-v1".into(),
                        part: "cluster-class".into(),
                        chart: "docker-ferrol-1-27-cluster-class".into(),
                        message: "template: boom".into(),
                    },
                ),
                true,
                "render",
            ),
            (
                Error::step(
                    "Rendered",
                    "CompileFailed",
                    Cause::Compile(Box::new(capstan_source::local::InRelease::new(
                        capstan_stack::render::RenderError::Part {
                            release: "docker-ferrol-1-27-v1".into(),
                            part: "cluster-addon".into(),
                            chart: "ngnix".into(),
                            message: "dependency download failed".into(),
                        },
                        "docker-ferrol-1-27-v1",
                        None,
                    ))),
                ),
                false,
                "compile",
            ),
            (
                Error::step(
                    "Applied",
                    "ApplyFailed",
                    Cause::Objects("1 of 2 object(s) failed".into()),
                ),
                false,
                "apply",
            ),
            (
                Error::step("Rendered", "ReleaseUnreadable", Cause::Api(api(500))),
                false,
                "kube",
            ),
            (
                Error::step("Rendered", "ReleaseUnreadable", Cause::Api(api(422))),
                true,
                "kube",
            ),
            (Error::kube("writing the status", api(409)), false, "kube"),
            (
                Error::step(
                    "Downloaded",
                    "SourceUnavailable",
                    SourceConfigError::NoToken {
                        namespace: "ns".into(),
                        name: "token".into(),
                    },
                ),
                false,
                "source_config",
            ),
            (
                Error::step(
                    "Downloaded",
                    "SourceUnavailable",
                    SourceConfigError::NoSource {
                        namespace: "ns".into(),
                        name: "stack".into(),
                    },
                ),
                true,
                "source_config",
            ),
            (
                Error::Waiting {
                    reason: "in use".into(),
                    retry: Duration::from_secs(1),
                },
                false,
                "waiting",
            ),
        ];
        for (error, terminal, label) in cases {
            assert_eq!(error.is_terminal(), terminal, "{error}");
            assert_eq!(error.metric_label(), label, "{error}");
        }
    }

    #[test]
    fn the_text_is_the_step_and_the_cause() {
        let error = Error::step(
            "Rendered",
            "NoClusterStack",
            Cause::NoClusterStack {
                namespace: "ns".into(),
                stack: "docker-ferrol-1-27".into(),
                detail: "",
            },
        );
        assert_eq!(
            error.to_string(),
            "Rendered: no ClusterStack in namespace ns follows docker-ferrol-1-27"
        );
        let not_found = Error::kube("deleting x", api(404));
        assert!(
            std::error::Error::source(&not_found).is_some(),
            "the kube error is kept"
        );
    }
}
