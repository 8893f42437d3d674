//! The stack-version rules of the webhooks, over capstan's one version parser
//! ([`capstan_stack::version`]).

use crate::api::cluster_stack::Channel;
use crate::webhook::validate::VersionSyntax;
use capstan_stack::version::Version;

/// [`VersionSyntax`] as `stack::version` parses versions: `vN` and `vN-<channel>.<patch>` on
/// the stable channel of a ClusterStack, hash versions `v0-sha.<hash>` on the custom one.
pub struct StackVersions;

impl VersionSyntax for StackVersions {
    fn check_version(&self, version: &str) -> Result<(), String> {
        Version::parse(version).map(drop).map_err(|e| e.problem)
    }

    fn is_class_version(&self, tail: &str, channel: Channel) -> bool {
        Version::parse_dashed(tail).is_ok_and(|v| match channel {
            Channel::Stable => !v.is_hash(),
            Channel::Custom => v.is_hash(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_spec_versions_write_them() {
        for ok in ["v1", "v12", "v1-alpha.0", "v1-beta.10", "v0-sha.4e0d8f3"] {
            assert_eq!(StackVersions.check_version(ok), Ok(()), "{ok}");
        }
        for bad in ["1", "v", "v1-alpha", "vx", "v1.0", "v1-alpha-0"] {
            let why = StackVersions.check_version(bad).expect_err(bad);
            assert!(!why.is_empty(), "{bad}: a reason");
        }
    }

    #[test]
    fn class_name_tails_by_channel() {
        assert!(StackVersions.is_class_version("v2", Channel::Stable));
        assert!(StackVersions.is_class_version("v1-alpha-0", Channel::Stable));
        assert!(!StackVersions.is_class_version("v0-sha-4e0d8f3", Channel::Stable));
        assert!(StackVersions.is_class_version("v0-sha-4e0d8f3", Channel::Custom));
        assert!(!StackVersions.is_class_version("v2", Channel::Custom));
        assert!(!StackVersions.is_class_version("not-a-version", Channel::Stable));
    }
}
