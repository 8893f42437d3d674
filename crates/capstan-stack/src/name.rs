//! The naming scheme of cluster-stack releases.
//!
//! | what | form | example |
//! |---|---|---|
//! | stack | `<provider>-<name>-<k8sMajor>-<k8sMinor>` | `docker-ferrol-1-27` |
//! | release tag | stack + `-` + version in dash form | `docker-ferrol-1-27-v0-sha-hipstsw` |
//! | ClusterClass name | stack + `-` + version in dot form | `docker-ferrol-1-27-v0-sha.hipstsw` |
//! | ClusterClass asset | `<stack>-cluster-class-<version>.tgz` | `docker-ferrol-1-27-cluster-class-v2.tgz` |
//! | addon asset | `<stack>-cluster-addon-<addonVersion>.tgz` | `docker-ferrol-1-27-cluster-addon-v2.tgz` |
//!
//! The parts are separated by `-`, so a provider or stack name containing `-` cannot be
//! represented: [`StackName::new`] refuses it instead of producing a tag that reads back as
//! something else.

use std::fmt;

use super::version::{Version, VersionError, parse_number};

/// The Kubernetes minor line a stack targets (`1.27`), spelled `1-27` in names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubernetesVersion {
    pub major: u64,
    pub minor: u64,
}

/// A stack name, release tag, ClusterClass name or Kubernetes version that does not fit the
/// scheme; the message names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("invalid {what} {input:?}: {problem}")]
    Invalid {
        /// `release tag`, `ClusterClass name`, `provider`, `stack name`, `Kubernetes version`.
        what: &'static str,
        input: String,
        problem: String,
    },
    #[error("invalid {what} {input:?}: {source}")]
    Version {
        what: &'static str,
        input: String,
        source: VersionError,
    },
}

impl KubernetesVersion {
    pub fn new(major: u64, minor: u64) -> KubernetesVersion {
        KubernetesVersion { major, minor }
    }

    /// `1.27` (the form of `ClusterStack.spec.kubernetesVersion`).
    pub fn parse(text: &str) -> Result<KubernetesVersion, NameError> {
        let Some((major, minor)) = text.split_once('.') else {
            return Err(k8s_error(text, "expected <major>.<minor>, e.g. 1.27".into()));
        };
        KubernetesVersion::from_parts(text, major, minor)
    }

    /// The minor line of a full Kubernetes release version `v1.27.3` (the form of
    /// `metadata.yaml`'s `versions.kubernetes` and `csctl.yaml`'s `kubernetesVersion`).
    pub fn parse_release(text: &str) -> Result<KubernetesVersion, NameError> {
        let parts: Vec<&str> = text.strip_prefix('v').unwrap_or("").split('.').collect();
        if !text.starts_with('v') || parts.len() != 3 {
            return Err(k8s_error(
                text,
                "expected v<major>.<minor>.<patch>, e.g. v1.27.3".into(),
            ));
        }
        parse_number(parts[2])
            .map_err(|why| k8s_error(text, format!("patch version {:?} {why}", parts[2])))?;
        KubernetesVersion::from_parts(text, parts[0], parts[1])
    }

    fn from_parts(text: &str, major: &str, minor: &str) -> Result<KubernetesVersion, NameError> {
        let major_n =
            parse_number(major).map_err(|why| k8s_error(text, format!("major version {major:?} {why}")))?;
        let minor_n =
            parse_number(minor).map_err(|why| k8s_error(text, format!("minor version {minor:?} {why}")))?;
        if major_n == 0 {
            return Err(k8s_error(text, "major version must not be 0".into()));
        }
        Ok(KubernetesVersion::new(major_n, minor_n))
    }

    /// `1-27`, as inside names.
    pub fn dashed(&self) -> String {
        format!("{}-{}", self.major, self.minor)
    }
}

/// `1.27`.
impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

fn k8s_error(text: &str, problem: String) -> NameError {
    NameError::Invalid {
        what: "Kubernetes version",
        input: text.to_string(),
        problem,
    }
}

/// A cluster stack: provider, name and Kubernetes minor line (`docker-ferrol-1-27`). Its
/// `Display` is also the Helm release name of the ClusterClass chart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackName {
    provider: String,
    name: String,
    kubernetes: KubernetesVersion,
}

impl StackName {
    /// Checks that provider and name are lowercase letters and digits (no `-`, which the
    /// naming scheme cannot represent).
    pub fn new(provider: &str, name: &str, kubernetes: KubernetesVersion) -> Result<StackName, NameError> {
        check_part("provider", provider)?;
        check_part("stack name", name)?;
        Ok(StackName {
            provider: provider.to_string(),
            name: name.to_string(),
            kubernetes,
        })
    }

    /// Parses `docker-ferrol-1-27`.
    pub fn parse(text: &str) -> Result<StackName, NameError> {
        let parts: Vec<&str> = text.split('-').collect();
        if parts.len() != 4 {
            return Err(NameError::Invalid {
                what: "stack",
                input: text.to_string(),
                problem: format!(
                    "expected <provider>-<name>-<k8sMajor>-<k8sMinor> (4 parts separated by \"-\"), found {} parts",
                    parts.len()
                ),
            });
        }
        stack_from_parts("stack", text, &parts)
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kubernetes(&self) -> KubernetesVersion {
        self.kubernetes
    }

    /// The release tag of `version` of this stack.
    pub fn release(&self, version: Version) -> ReleaseTag {
        ReleaseTag {
            stack: self.clone(),
            version,
        }
    }
}

/// `docker-ferrol-1-27`.
impl fmt::Display for StackName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.provider, self.name, self.kubernetes.dashed())
    }
}

fn check_part(what: &'static str, text: &str) -> Result<(), NameError> {
    let problem = if text.is_empty() {
        "it is empty".to_string()
    } else if text.contains('-') {
        "it contains \"-\", which the release tag format <provider>-<name>-<k8sMajor>-<k8sMinor>-<version> cannot represent"
            .to_string()
    } else if !text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        "it may only contain lowercase letters and digits".to_string()
    } else {
        return Ok(());
    };
    Err(NameError::Invalid {
        what,
        input: text.to_string(),
        problem,
    })
}

fn stack_from_parts(what: &'static str, text: &str, parts: &[&str]) -> Result<StackName, NameError> {
    let wrap = |e: NameError| match e {
        NameError::Invalid {
            what: part,
            input,
            problem,
        } => NameError::Invalid {
            what,
            input: text.to_string(),
            problem: format!("{part} {input:?}: {problem}"),
        },
        other => other,
    };
    // `open-stack-scs-1-27-v1`: a `-` inside provider or name moves every part along.
    let hint = if parts[2].bytes().any(|b| !b.is_ascii_digit()) {
        " (the third part must be the Kubernetes major version; provider and stack name cannot contain \"-\")"
    } else {
        ""
    };
    let kubernetes = KubernetesVersion::from_parts(&format!("{}-{}", parts[2], parts[3]), parts[2], parts[3])
        .map_err(|e| match wrap(e) {
            NameError::Invalid { what, input, problem } => NameError::Invalid {
                what,
                input,
                problem: format!("{problem}{hint}"),
            },
            other => other,
        })?;
    StackName::new(parts[0], parts[1], kubernetes).map_err(wrap)
}

/// A release of a stack: stack + version. `Display` prints the release tag.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReleaseTag {
    stack: StackName,
    version: Version,
}

impl ReleaseTag {
    pub fn new(stack: StackName, version: Version) -> ReleaseTag {
        ReleaseTag { stack, version }
    }

    /// Parses a release tag with the version in dash form: `docker-ferrol-1-27-v2`,
    /// `docker-ferrol-1-27-v1-alpha-3`, `docker-ferrol-1-27-v0-sha-hipstsw`.
    pub fn parse(tag: &str) -> Result<ReleaseTag, NameError> {
        ReleaseTag::parse_as("release tag", tag, Version::parse_dashed)
    }

    /// Parses a ClusterClass name, the version in dot form: `docker-ferrol-1-27-v0-sha.hipstsw`.
    pub fn parse_cluster_class(name: &str) -> Result<ReleaseTag, NameError> {
        ReleaseTag::parse_as("ClusterClass name", name, Version::parse)
    }

    fn parse_as(
        what: &'static str,
        text: &str,
        parse_version: fn(&str) -> Result<Version, VersionError>,
    ) -> Result<ReleaseTag, NameError> {
        let parts: Vec<&str> = text.splitn(5, '-').collect();
        if parts.len() < 5 {
            return Err(NameError::Invalid {
                what,
                input: text.to_string(),
                problem: "expected <provider>-<name>-<k8sMajor>-<k8sMinor>-<version>".to_string(),
            });
        }
        let stack = stack_from_parts(what, text, &parts[..4])?;
        let version = parse_version(parts[4]).map_err(|source| NameError::Version {
            what,
            input: text.to_string(),
            source,
        })?;
        Ok(ReleaseTag { stack, version })
    }

    pub fn stack(&self) -> &StackName {
        &self.stack
    }

    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The release tag (version in dash form): `docker-ferrol-1-27-v0-sha-hipstsw`.
    pub fn tag(&self) -> String {
        format!("{}-{}", self.stack, self.version.dashed())
    }

    /// The ClusterClass name (version in dot form): `docker-ferrol-1-27-v0-sha.hipstsw`.
    pub fn cluster_class_name(&self) -> String {
        format!("{}-{}", self.stack, self.version)
    }

    /// The Helm release name the ClusterClass chart is rendered with: `docker-ferrol-1-27`.
    pub fn cluster_class_release_name(&self) -> String {
        self.stack.to_string()
    }

    /// `docker-ferrol-1-27-cluster-class-v0-sha.hipstsw.tgz`.
    pub fn cluster_class_asset(&self) -> String {
        format!("{}-cluster-class-{}.tgz", self.stack, self.version)
    }

    /// `docker-ferrol-1-27-cluster-addon-<addonVersion>.tgz`: the addon version comes from
    /// `metadata.yaml` (`versions.components.clusterAddon`), not from the stack version.
    pub fn cluster_addon_asset(&self, addon_version: &Version) -> String {
        format!("{}-cluster-addon-{}.tgz", self.stack, addon_version)
    }

    /// `docker-ferrol-1-27-node-image-<nodeImageVersion>.tgz`.
    pub fn node_image_asset(&self, node_image_version: &Version) -> String {
        format!("{}-node-image-{}.tgz", self.stack, node_image_version)
    }
}

/// The release tag.
impl fmt::Display for ReleaseTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag())
    }
}

impl std::str::FromStr for ReleaseTag {
    type Err = NameError;
    fn from_str(s: &str) -> Result<ReleaseTag, NameError> {
        ReleaseTag::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_names_round_trip() {
        for (tag, class, asset) in [
            (
                "docker-ferrol-1-27-v2",
                "docker-ferrol-1-27-v2",
                "docker-ferrol-1-27-cluster-class-v2.tgz",
            ),
            (
                "docker-ferrol-1-27-v0-sha-hipstsw",
                "docker-ferrol-1-27-v0-sha.hipstsw",
                "docker-ferrol-1-27-cluster-class-v0-sha.hipstsw.tgz",
            ),
            (
                "openstack-scs2-1-34-v1-alpha-3",
                "openstack-scs2-1-34-v1-alpha.3",
                "openstack-scs2-1-34-cluster-class-v1-alpha.3.tgz",
            ),
        ] {
            let parsed = ReleaseTag::parse(tag).unwrap();
            assert_eq!(parsed.tag(), tag);
            assert_eq!(parsed.to_string(), tag);
            assert_eq!(parsed.cluster_class_name(), class);
            assert_eq!(parsed.cluster_class_asset(), asset);
            assert_eq!(ReleaseTag::parse_cluster_class(class).unwrap(), parsed);
        }
        let tag = ReleaseTag::parse("docker-ferrol-1-27-v3").unwrap();
        assert_eq!(tag.stack().provider(), "docker");
        assert_eq!(tag.stack().name(), "ferrol");
        assert_eq!(tag.stack().kubernetes(), KubernetesVersion::new(1, 27));
        assert_eq!(tag.cluster_class_release_name(), "docker-ferrol-1-27");
        assert_eq!(
            tag.cluster_addon_asset(&Version::parse("v2").unwrap()),
            "docker-ferrol-1-27-cluster-addon-v2.tgz"
        );
        assert_eq!(StackName::parse("docker-ferrol-1-27").unwrap(), *tag.stack());
    }

    #[test]
    fn bad_names_are_refused_precisely() {
        let cases = [
            (
                "docker-ferrol-1-27",
                "expected <provider>-<name>-<k8sMajor>-<k8sMinor>-<version>",
            ),
            (
                "open-stack-scs-1-27-v1",
                "provider and stack name cannot contain \"-\"",
            ),
            ("docker-ferrol-1-x-v1", "minor version \"x\" is not a number"),
            ("docker-ferrol-0-27-v1", "major version must not be 0"),
            ("docker-ferrol-1-27-v1-alpha.3", "is the dot form"),
            ("docker-ferrol-1-27-2", "must start with \"v\""),
            (
                "Docker-ferrol-1-27-v2",
                "provider \"Docker\": it may only contain lowercase",
            ),
            ("docker--1-27-v2", "stack name \"\": it is empty"),
        ];
        for (input, expected) in cases {
            let err = ReleaseTag::parse(input).unwrap_err().to_string();
            assert!(err.contains(expected), "{input}: {err}");
            assert!(err.contains(input), "{input}: {err}");
        }
        let err = ReleaseTag::parse_cluster_class("docker-ferrol-1-27-v0-sha-hipstsw")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is the dash form"), "{err}");
        let err = StackName::new("open-stack", "scs", KubernetesVersion::new(1, 30))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot represent"), "{err}");
    }

    #[test]
    fn kubernetes_versions() {
        assert_eq!(
            KubernetesVersion::parse_release("v1.27.3").unwrap(),
            KubernetesVersion::new(1, 27)
        );
        assert_eq!(KubernetesVersion::parse("1.30").unwrap().dashed(), "1-30");
        assert_eq!(KubernetesVersion::new(1, 30).to_string(), "1.30");
        for bad in ["1.27.3", "v1.27", "v1.x.3", "v1.27.3-rc.1"] {
            assert!(KubernetesVersion::parse_release(bad).is_err(), "{bad}");
        }
    }
}
