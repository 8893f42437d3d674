//! `clusteraddon.yaml`: the stages of a multi-stage cluster addon.
//!
//! ```yaml
//! apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1
//! clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1
//! addonStages:
//!   AfterControlPlaneInitialized:      # hook: when the stages run
//!     - name: cni                       # a chart directory of the addon .tgz
//!       action: apply                   # apply | delete
//!   BeforeClusterUpgrade:
//!     - name: ngnix
//!       action: apply
//!       waitForPostCondition:           # also waitForPreCondition
//!         objects:                      # objects the CEL expression sees, by key
//!           - key: ngnix
//!             apiVersion: apps/v1
//!             kind: Deployment
//!             name: cluster-addon-ngnix
//!             namespace: kube-system
//!         conditions: ngnix.spec.replicas == 1
//! ```
//!
//! The CEL expressions are kept as strings (evaluated by whoever applies the stages); this
//! module checks the structure: known hooks, known actions, stage names usable as directory
//! names and unique within a hook, object keys usable as CEL identifiers and unique, and a
//! condition wherever objects are named.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use super::doc::{DocumentError, Node, read_text, with_root};

/// The `apiVersion` of `clusteraddon.yaml`.
pub const ADDON_CONFIG_API_VERSION: &str = "clusteraddonconfig.x-k8s.io/v1alpha1";
/// The `clusterAddonVersion` of `clusteraddon.yaml`.
pub const CLUSTER_ADDON_VERSION: &str = "clusteraddons.clusterstack.x-k8s.io/v1alpha1";
/// The file name in a release and in a stack source.
pub const ADDON_CONFIG_FILE: &str = "clusteraddon.yaml";

/// When a list of stages runs (a Cluster API lifecycle hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hook {
    AfterControlPlaneInitialized,
    BeforeClusterUpgrade,
}

impl Hook {
    pub const ALL: [Hook; 2] = [Hook::AfterControlPlaneInitialized, Hook::BeforeClusterUpgrade];

    pub fn as_str(&self) -> &'static str {
        match self {
            Hook::AfterControlPlaneInitialized => "AfterControlPlaneInitialized",
            Hook::BeforeClusterUpgrade => "BeforeClusterUpgrade",
        }
    }

    pub fn parse(text: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.as_str() == text)
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a stage does with its chart's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Apply,
    Delete,
}

impl Action {
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Apply => "apply",
            Action::Delete => "delete",
        }
    }
}

/// An object a wait condition reads, bound to a CEL variable `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionObject {
    pub key: String,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
}

/// `waitForPreCondition` / `waitForPostCondition`: a CEL expression over named objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitCondition {
    pub objects: Vec<ConditionObject>,
    /// The CEL expression, unparsed.
    pub conditions: String,
}

/// One stage: a chart directory of the addon archive and what to do with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The chart directory in the addon `.tgz` (and in `cluster-addon/` of a source tree).
    pub name: String,
    pub action: Action,
    pub wait_for_pre_condition: Option<WaitCondition>,
    pub wait_for_post_condition: Option<WaitCondition>,
}

/// A validated `clusteraddon.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddonConfig {
    /// Hooks in file order, each with its stages in order.
    pub hooks: Vec<(Hook, Vec<Stage>)>,
}

impl AddonConfig {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<AddonConfig, DocumentError> {
        AddonConfig::parse(&read_text(path)?, path)
    }

    /// Validates the text of a `clusteraddon.yaml`; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<AddonConfig, DocumentError> {
        with_root(text, file, |root| {
            for (key, expected) in [
                ("apiVersion", ADDON_CONFIG_API_VERSION),
                ("clusterAddonVersion", CLUSTER_ADDON_VERSION),
            ] {
                let found = root.required_string(key)?;
                if found != expected {
                    return Err(DocumentError::field(
                        file,
                        key,
                        format!("expected {expected:?}, found {found:?}"),
                    ));
                }
            }
            let hooks = root.with_field("addonStages", |stages| {
                let Some(stages) = stages else {
                    return Err(DocumentError::field(file, "addonStages", "is missing"));
                };
                stages.each_entry(|hook_name, list| {
                    let Some(hook) = Hook::parse(hook_name) else {
                        return Err(list.error(format!(
                            "unknown hook {hook_name:?} (expected {} or {})",
                            Hook::AfterControlPlaneInitialized,
                            Hook::BeforeClusterUpgrade
                        )));
                    };
                    let stages = list.each_item(stage)?;
                    let mut seen = BTreeSet::new();
                    for (i, s) in stages.iter().enumerate() {
                        if !seen.insert(s.name.as_str()) {
                            return Err(DocumentError::field(
                                file,
                                &format!("{}[{i}].name", list.path()),
                                format!("stage {:?} appears twice in hook {hook}", s.name),
                            ));
                        }
                    }
                    Ok((hook, stages))
                })
            })?;
            Ok(AddonConfig { hooks })
        })
    }

    /// The stages of `hook` (empty when the file does not list it).
    pub fn stages(&self, hook: Hook) -> &[Stage] {
        self.hooks
            .iter()
            .find(|(h, _)| *h == hook)
            .map_or(&[], |(_, s)| s.as_slice())
    }

    /// Every stage name, once, in order of first appearance.
    pub fn stage_names(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.hooks
            .iter()
            .flat_map(|(_, stages)| stages.iter().map(|s| s.name.as_str()))
            .filter(|n| seen.insert(*n))
            .collect()
    }
}

fn stage(node: Node<'_>) -> Result<Stage, DocumentError> {
    let name = node.required_string("name")?;
    if name == "." || name == ".." || name.contains('/') || name.contains('\\') {
        return Err(node.error(format!(
            "stage name {name:?} must be a directory name of the addon archive"
        )));
    }
    let action_text = node.required_string("action")?;
    let action = match action_text.as_str() {
        "apply" => Action::Apply,
        "delete" => Action::Delete,
        other => {
            return Err(DocumentError::field(
                node.file(),
                &format!("{}.action", node.path()),
                format!("unknown action {other:?} (expected \"apply\" or \"delete\")"),
            ));
        }
    };
    let wait_for_pre_condition = node.with_field("waitForPreCondition", |c| c.map(condition).transpose())?;
    let wait_for_post_condition =
        node.with_field("waitForPostCondition", |c| c.map(condition).transpose())?;
    Ok(Stage {
        name,
        action,
        wait_for_pre_condition,
        wait_for_post_condition,
    })
}

fn condition(node: Node<'_>) -> Result<WaitCondition, DocumentError> {
    let objects = node.with_field("objects", |objects| match objects {
        None => Ok(Vec::new()),
        Some(list) => list.each_item(object),
    })?;
    let mut keys = BTreeSet::new();
    for o in &objects {
        if !keys.insert(o.key.as_str()) {
            return Err(node.error(format!("object key {:?} is used twice", o.key)));
        }
    }
    let conditions = node.optional_string("conditions")?;
    let Some(conditions) = conditions else {
        return Err(DocumentError::field(
            node.file(),
            &format!("{}.conditions", node.path()),
            "is missing (a CEL expression over the objects' keys)",
        ));
    };
    Ok(WaitCondition { objects, conditions })
}

fn object(node: Node<'_>) -> Result<ConditionObject, DocumentError> {
    let key = node.required_string("key")?;
    let cel_identifier = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !cel_identifier {
        return Err(DocumentError::field(
            node.file(),
            &format!("{}.key", node.path()),
            format!("{key:?} is not a CEL identifier (letters, digits and _, not starting with a digit)"),
        ));
    }
    Ok(ConditionObject {
        key,
        api_version: node.required_string("apiVersion")?,
        kind: node.required_string("kind")?,
        name: node.required_string("name")?,
        namespace: node.optional_string("namespace")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1
clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1
addonStages:
  AfterControlPlaneInitialized:
    - name: metrics-server
      action: apply
  BeforeClusterUpgrade:
    - name: ngnix
      action: apply
      waitForPostCondition:
        objects:
          - key: msdeployment
            apiVersion: apps/v1
            kind: Deployment
            name: metrics-server
            namespace: kube-system
          - key: ngnix
            apiVersion: apps/v1
            kind: Deployment
            name: cluster-addon-ngnix
            namespace: kube-system
        conditions: msdeployment.spec.replicas == ngnix.spec.replicas
    - name: old
      action: delete
"#;

    fn parse(text: &str) -> Result<AddonConfig, DocumentError> {
        AddonConfig::parse(text, Path::new("r/clusteraddon.yaml"))
    }

    #[test]
    fn parses_stages_in_order() {
        let c = parse(SAMPLE).unwrap();
        assert_eq!(c.hooks.len(), 2);
        let first = c.stages(Hook::AfterControlPlaneInitialized);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].name, "metrics-server");
        assert_eq!(first[0].action, Action::Apply);
        assert_eq!(first[0].wait_for_post_condition, None);
        let upgrade = c.stages(Hook::BeforeClusterUpgrade);
        assert_eq!(upgrade[1].action, Action::Delete);
        let cond = upgrade[0].wait_for_post_condition.as_ref().unwrap();
        assert_eq!(
            cond.conditions,
            "msdeployment.spec.replicas == ngnix.spec.replicas"
        );
        assert_eq!(cond.objects.len(), 2);
        assert_eq!(cond.objects[1].name, "cluster-addon-ngnix");
        assert_eq!(cond.objects[1].namespace.as_deref(), Some("kube-system"));
        assert_eq!(c.stage_names(), ["metrics-server", "ngnix", "old"]);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (SAMPLE.replace("BeforeClusterUpgrade:", "name:"), "field addonStages.name: unknown hook \"name\" (expected AfterControlPlaneInitialized or BeforeClusterUpgrade)"),
            (SAMPLE.replace("action: delete", "action: remove"), "field addonStages.BeforeClusterUpgrade[1].action: unknown action \"remove\""),
            (SAMPLE.replace("- name: old\n      action: delete", "- action: delete"), "field addonStages.BeforeClusterUpgrade[1].name: is missing"),
            (SAMPLE.replace("name: old", "name: ngnix"), "field addonStages.BeforeClusterUpgrade[1].name: stage \"ngnix\" appears twice"),
            (SAMPLE.replace("name: old", "name: ../x"), "field addonStages.BeforeClusterUpgrade[1]: stage name \"../x\" must be a directory name"),
            (SAMPLE.replace("key: ngnix", "key: ngnix-2"), "field addonStages.BeforeClusterUpgrade[0].waitForPostCondition.objects[1].key: \"ngnix-2\" is not a CEL identifier"),
            (SAMPLE.replace("key: ngnix", "key: msdeployment"), "field addonStages.BeforeClusterUpgrade[0].waitForPostCondition: object key \"msdeployment\" is used twice"),
            (SAMPLE.replace("        conditions: msdeployment.spec.replicas == ngnix.spec.replicas\n", ""), "field addonStages.BeforeClusterUpgrade[0].waitForPostCondition.conditions: is missing"),
            (SAMPLE.replace("            kind: Deployment\n            name: metrics-server\n", "            name: metrics-server\n"), "field addonStages.BeforeClusterUpgrade[0].waitForPostCondition.objects[0].kind: is missing"),
            (SAMPLE.replace("clusteraddonconfig.x-k8s.io/v1alpha1", "v1"), "field apiVersion: expected \"clusteraddonconfig.x-k8s.io/v1alpha1\", found \"v1\""),
            (SAMPLE.replace("clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1\n", ""), "field clusterAddonVersion: is missing"),
            ("apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1\nclusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1\n".to_string(), "field addonStages: is missing"),
            (SAMPLE.replace("  AfterControlPlaneInitialized:\n    - name: metrics-server\n      action: apply\n", "  AfterControlPlaneInitialized: cni\n"), "field addonStages.AfterControlPlaneInitialized: expected a list, found the string \"cni\""),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.contains(expected), "got: {err}\nwant: {expected}");
            assert!(err.starts_with("r/clusteraddon.yaml: "), "{err}");
        }
    }
}
