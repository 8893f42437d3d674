//! Who signed a release, checked before it is rendered: the stack's `spec.verify` (keys from
//! a Secret's `*.pub` entries) or else the operator's `--verify-key` keys. A release that fails
//! gets `SourceVerified=False` naming the reason, a Warning event and a metric, and goes no
//! further (so nothing of the release is applied, and the Clusters keep the class they use). A
//! pass records the signer in the status; the cache's recorded verification spares the
//! registry on later passes.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;

use super::super::Error;
use super::super::error::SourceConfigError;
use super::super::pipeline::dependencies::{SOURCE_VERIFIED, record_refusal};
use super::super::pipeline::{ReleaseFiles, dependency_policy};
use super::super::progress::Because;
use crate::api::{ClusterStack, VerifySpec};
use crate::context::Context;
use crate::sources::Verification;
use capstan_source::verify::{Identity, Policy, TrustedRoot};
use capstan_stack::name::ReleaseTag;

/// The release controller's progress, named here rather than through the parent module (which
/// uses this one: no import circle).
type Progress<'a> = super::super::progress::Progress<'a, crate::api::ClusterStackRelease>;

/// The one provider verified.
const COSIGN: &str = "cosign";

/// The trusted keys of a Secret `namespace/name`: every `*.pub` entry, in name order.
pub fn keys_of_secret(
    namespace: &str,
    name: &str,
    data: &BTreeMap<String, ByteString>,
) -> Result<Policy, SourceConfigError> {
    let keys = dependency_policy::pub_entries(namespace, name, data)?;
    if keys.is_empty() {
        return Err(SourceConfigError::NoVerifyKeys {
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }
    Ok(Policy::keyed(keys))
}

/// Whether `stack`'s releases are verified at all (known before anything is read).
pub fn has_policy(stack: &ClusterStack, ctx: &Context) -> bool {
    stack.spec.verify.is_some() || !ctx.settings.verify.is_empty()
}

/// The keyless identities of `spec.verify.matchOIDCIdentity`.
pub fn identities_of(spec: &VerifySpec) -> Result<Vec<Identity>, SourceConfigError> {
    dependency_policy::identities_of_matches(&spec.match_oidc_identity)
        .map_err(|(index, message)| SourceConfigError::VerifyIdentity { index, message })
}

/// The trusted root of a Secret `namespace/name` (its `trusted_root.json` entry).
pub fn trusted_root_of_secret(
    namespace: &str,
    name: &str,
    data: &BTreeMap<String, ByteString>,
) -> Result<TrustedRoot, SourceConfigError> {
    let root = dependency_policy::trusted_root_entry(namespace, name, data).ok_or_else(|| {
        SourceConfigError::NoTrustedRoot {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    })?;
    Ok(root?)
}

/// The policy of `stack`: its `spec.verify` with the keys and trusted root read, else the
/// operator's.
async fn policy_of(stack: &ClusterStack, ctx: &Context) -> Result<Policy, SourceConfigError> {
    let Some(spec) = &stack.spec.verify else {
        return Ok(ctx.settings.verify.clone());
    };
    if spec.provider != COSIGN {
        return Err(SourceConfigError::VerifyProvider {
            provider: spec.provider.clone(),
        });
    }
    let namespace = stack.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let named = |r: &Option<crate::api::SecretReference>| {
        r.as_ref()
            .filter(|r| !r.name.trim().is_empty())
            .map(|r| r.name.clone())
    };
    let identities = identities_of(spec)?;
    let mut policy = match named(&spec.secret_ref) {
        Some(name) => {
            let secret = super::super::read_secret(&secrets, &namespace, &name).await?;
            keys_of_secret(&namespace, &name, &secret.data.unwrap_or_default())?
        }
        None if identities.is_empty() => return Err(SourceConfigError::NoVerifySecret),
        None => Policy::default(),
    };
    if !identities.is_empty() {
        let root = match named(&spec.trusted_root_secret_ref) {
            Some(name) => {
                let secret = super::super::read_secret(&secrets, &namespace, &name).await?;
                trusted_root_of_secret(&namespace, &name, &secret.data.unwrap_or_default())?
            }
            None => TrustedRoot::public_good()?,
        };
        policy.identities = identities;
        policy.trusted_root = Some(root);
    }
    Ok(policy)
}

/// Checks release `tag` of `stack` (fetched as `files`) against its policy: `Continue` when
/// it passed or there is none, `Break` with the next look when it was refused (recorded).
pub async fn check(
    progress: &mut Progress<'_>,
    stack: &ClusterStack,
    files: &ReleaseFiles,
    tag: &ReleaseTag,
) -> Result<ControlFlow<Action>, Error> {
    let ctx = progress.ctx;
    if !has_policy(stack, ctx) {
        // Without a policy nothing is verified, and a policy removed leaves no stale verdict
        // (the dependencies' check, next, writes its own).
        progress.status.verified_by = None;
        progress.status.conditions.retain(|c| c.type_ != SOURCE_VERIFIED);
        return Ok(ControlFlow::Continue(()));
    }
    let policy = policy_of(stack, ctx).await.because("VerifyPolicyInvalid");
    let policy = progress.check(SOURCE_VERIFIED, policy).await?;
    let outcome = ctx.sources.verify(&files.source, tag, &policy).await;
    let outcome = progress
        .check(SOURCE_VERIFIED, outcome.because("VerificationFailed"))
        .await?;
    let (reason, message) = match outcome {
        Verification::Verified { verified, fresh } => {
            if fresh {
                ctx.metrics.source_verified("verified");
            }
            let mut message = format!(
                "cosign signature of {} by key {}",
                verified.digest, verified.signer
            );
            if !verified.skipped.is_empty() {
                message.push_str(&format!("; skipped unreadable: {}", verified.skipped.join("; ")));
            }
            progress.status.verified_by = Some(verified.signer);
            progress.condition(SOURCE_VERIFIED, true, "Verified", message);
            return Ok(ControlFlow::Continue(()));
        }
        Verification::Refused(refusal) => (refusal.reason(), refusal.to_string()),
        Verification::Unsupported => (
            "VerificationUnsupported",
            format!(
                "the stack has a signature policy, but signatures are verified only for releases from an OCI source; {} carries none",
                files.source.describe()
            ),
        ),
    };
    refuse(progress, reason, message).await
}

/// Records a refused release: the condition, a Warning event when the verdict is new, the
/// metric; looked at again after the drift interval (a signature may yet be pushed).
async fn refuse(
    progress: &mut Progress<'_>,
    reason: &'static str,
    message: String,
) -> Result<ControlFlow<Action>, Error> {
    progress.ctx.metrics.source_verified(reason);
    progress.status.verified_by = None;
    Ok(ControlFlow::Break(
        record_refusal(progress, reason, message).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::super::pipeline::dependency_policy::TRUSTED_ROOT_ENTRY;
    use super::*;
    use capstan_source::verify::{PublicKey, SigningKey};

    #[test]
    fn keyless_identities_and_the_trusted_root_secret_are_read() {
        use crate::api::OidcIdentityMatch;
        let spec = |issuer: &str| VerifySpec {
            provider: COSIGN.into(),
            match_oidc_identity: vec![OidcIdentityMatch {
                issuer: issuer.into(),
                subject: ".*@example\\.org".into(),
            }],
            ..VerifySpec::default()
        };
        let ids = identities_of(&spec("https://issuer")).unwrap();
        assert!(ids[0].matches("https://issuer", "dev@example.org"));
        assert!(!ids[0].matches("https://issuer", "dev@example.org.evil"));
        let err = identities_of(&spec("(")).unwrap_err().to_string();
        assert!(err.starts_with("spec.verify.matchOIDCIdentity[0]: "), "{err}");

        let root = include_bytes!("../../../../../testdata/verify/keyless/trusted_root.json");
        let data = |entry: &str, bytes: &[u8]| -> BTreeMap<String, ByteString> {
            [(entry.to_string(), ByteString(bytes.to_vec()))].into()
        };
        let read = trusted_root_of_secret("ns", "root", &data(TRUSTED_ROOT_ENTRY, root)).unwrap();
        assert_eq!(
            read,
            TrustedRoot::public_good().unwrap(),
            "the shipped root is the test data's"
        );
        let table = [
            (
                data("root.json", root),
                "Secret ns/root has no data.trusted_root.json",
            ),
            (
                data(TRUSTED_ROOT_ENTRY, b"{}"),
                "Secret ns/root entry trusted_root.json: no certificate authority",
            ),
        ];
        for (data, want) in table {
            let err = trusted_root_of_secret("ns", "root", &data)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{err}");
        }
    }

    #[test]
    fn the_secret_s_pub_entries_are_the_keys() {
        let (a, b) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
        let pem = |k: &SigningKey| ByteString(k.public_key().to_pem().into_bytes());
        let data = |entries: &[(&str, ByteString)]| -> BTreeMap<String, ByteString> {
            entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
        };
        let both = keys_of_secret(
            "ns",
            "keys",
            &data(&[
                ("a.pub", pem(&a)),
                ("b.pub", pem(&b)),
                ("cosign.key", ByteString(b"not read".to_vec())),
            ]),
        )
        .unwrap();
        let fingerprints: Vec<&str> = both.keys.iter().map(PublicKey::fingerprint).collect();
        assert_eq!(
            fingerprints,
            [a.public_key().fingerprint(), b.public_key().fingerprint()]
        );
        let table: [(&str, BTreeMap<String, ByteString>, &str); 3] = [
            (
                "no .pub entry",
                data(&[("cosign.key", pem(&a))]),
                "Secret ns/keys has no *.pub entry",
            ),
            ("empty", BTreeMap::new(), "Secret ns/keys has no *.pub entry"),
            (
                "not PEM",
                data(&[("a.pub", pem(&a)), ("bad.pub", ByteString(b"junk".to_vec()))]),
                "Secret ns/keys entry bad.pub: not a PEM file",
            ),
        ];
        for (what, data, want) in table {
            let err = keys_of_secret("ns", "keys", &data).unwrap_err().to_string();
            assert!(err.starts_with(want), "{what}: {err}");
        }
    }
}
