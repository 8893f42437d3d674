//! What an upgrade from one release to another changes, offline: the rendered objects of both
//! releases, per part (the ClusterClass part, and the addon part — the single chart or all its
//! stages together), keyed by group, kind, namespace and name, compared as added, removed or
//! changed (with a unified diff of the changed ones).
//!
//! Objects named after the release's ClusterClass (`docker-ferrol-1-27-v1`,
//! `docker-ferrol-1-27-v1-control-plane`) are renamed by every release; they are paired with
//! their successor (`…-v2…`) and reported as changed, not as removed plus added. The
//! `# Source:` header is not part of an object: moving an object to another template is not a
//! change.

use std::collections::BTreeMap;
use std::fmt;

use similar::TextDiff;

use capstan_chart::{manifest, values};
use capstan_template::Value;

use super::render::Part;

/// The identity of an object in a diff.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The API group (`""` for the core group).
    pub group: String,
    pub kind: String,
    /// `metadata.namespace` as rendered (`""` when the template sets none).
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            String::new()
        } else {
            format!("{}/", self.group)
        };
        let ns = if self.namespace.is_empty() {
            String::new()
        } else {
            format!("{}/", self.namespace)
        };
        write!(f, "{group}{} {ns}{}", self.kind, self.name)
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added {
        key: ObjectKey,
    },
    Removed {
        key: ObjectKey,
    },
    /// `old` and `new` differ when the object was renamed with the release.
    Changed {
        old: ObjectKey,
        new: ObjectKey,
        /// Unified diff of the two documents (`--- old/…`, `+++ new/…`).
        diff: String,
    },
}

/// The changes of one part, sorted by key; `unchanged` counts objects equal in both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartDiff {
    /// `cluster-class` or `cluster-addon`.
    pub part: String,
    pub changes: Vec<Change>,
    pub unchanged: usize,
}

/// A rendered document that is not a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{part}: {source_path}: {problem}")]
pub struct DiffError {
    pub part: String,
    pub source_path: String,
    pub problem: String,
}

/// The objects of one side of a part: normalized key → (real key, document text).
type Objects = BTreeMap<ObjectKey, (ObjectKey, String)>;

/// Compares the parts of the old and new release (as [`render_release`] returns them;
/// `old_class` / `new_class` are the releases' ClusterClass names, used to pair renamed
/// objects).
///
/// [`render_release`]: super::render::render_release
pub fn diff_releases(
    old: &[Part],
    old_class: &str,
    new: &[Part],
    new_class: &str,
) -> Result<Vec<PartDiff>, DiffError> {
    let mut out = Vec::new();
    for group in ["cluster-class", "cluster-addon"] {
        let select = |parts: &[Part]| -> Vec<Part> {
            parts
                .iter()
                .filter(|p| p.name == group || p.name.starts_with(&format!("{group}/")))
                .cloned()
                .collect()
        };
        let old_objects = objects(&select(old), old_class)?;
        let new_objects = objects(&select(new), new_class)?;
        out.push(compare(group, &old_objects, &new_objects));
    }
    Ok(out)
}

fn compare(part: &str, old: &Objects, new: &Objects) -> PartDiff {
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for (norm, (old_key, old_text)) in old {
        match new.get(norm) {
            None => changes.push(Change::Removed { key: old_key.clone() }),
            Some((new_key, new_text)) if new_text == old_text && new_key == old_key => unchanged += 1,
            Some((new_key, new_text)) => {
                let diff = TextDiff::from_lines(old_text.as_str(), new_text.as_str())
                    .unified_diff()
                    .context_radius(3)
                    .header(&format!("old/{old_key}"), &format!("new/{new_key}"))
                    .to_string();
                changes.push(Change::Changed {
                    old: old_key.clone(),
                    new: new_key.clone(),
                    diff,
                });
            }
        }
    }
    for (norm, (new_key, _)) in new {
        if !old.contains_key(norm) {
            changes.push(Change::Added { key: new_key.clone() });
        }
    }
    changes.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    PartDiff {
        part: part.to_string(),
        changes,
        unchanged,
    }
}

fn sort_key(c: &Change) -> &ObjectKey {
    match c {
        Change::Added { key } | Change::Removed { key } => key,
        Change::Changed { new, .. } => new,
    }
}

/// The objects of the parts' streams, keyed with names normalized: a name that is the
/// ClusterClass name or starts with it and `-` has that prefix replaced.
fn objects(parts: &[Part], class_name: &str) -> Result<Objects, DiffError> {
    let mut out = Objects::new();
    for part in parts {
        for doc in manifest::split_documents(&part.stream) {
            let source = doc
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .unwrap_or("?")
                .to_string();
            let body: String = doc
                .split_inclusive('\n')
                .filter(|l| !l.starts_with("# Source: "))
                .collect();
            let fail = |problem: String| DiffError {
                part: part.name.clone(),
                source_path: source.clone(),
                problem,
            };
            let value = values::parse_document(&body).map_err(fail)?;
            if value.is_nil() {
                continue;
            }
            let key = key_of(&value).map_err(fail)?;
            let mut text = body.trim_end().to_string();
            text.push('\n');
            let normalized = ObjectKey {
                name: normalize(&key.name, class_name),
                ..key.clone()
            };
            out.insert(normalized, (key, text));
        }
    }
    Ok(out)
}

fn normalize(name: &str, class_name: &str) -> String {
    if class_name.is_empty() {
        return name.to_string();
    }
    if name == class_name {
        "<cluster-class>".to_string()
    } else if let Some(rest) = name.strip_prefix(&format!("{class_name}-")) {
        format!("<cluster-class>-{rest}")
    } else {
        name.to_string()
    }
}

fn key_of(v: &Value) -> Result<ObjectKey, String> {
    let field = |path: &[&str]| -> Option<String> {
        let mut cur = v.clone();
        for key in path {
            let Value::Map(m) = &cur else { return None };
            let next = m.entries.borrow().get(*key).cloned()?;
            cur = next;
        }
        match cur {
            Value::String(s) => Some(s.to_string()),
            _ => None,
        }
    };
    let api_version = field(&["apiVersion"]).ok_or("the document has no apiVersion")?;
    let kind = field(&["kind"]).ok_or("the document has no kind")?;
    let name = field(&["metadata", "name"]).ok_or("the document has no metadata.name")?;
    let group = api_version
        .rsplit_once('/')
        .map(|(g, _)| g.to_string())
        .unwrap_or_default();
    Ok(ObjectKey {
        group,
        kind,
        namespace: field(&["metadata", "namespace"]).unwrap_or_default(),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_chart::manifest::Manifests;

    fn part(name: &str, stream: &str) -> Part {
        Part {
            name: name.into(),
            chart: "c".into(),
            release_name: "r".into(),
            namespace: "ns".into(),
            kube_version: "v1.30.0".into(),
            values: None,
            rendered: BTreeMap::new(),
            manifests: Manifests::default(),
            stream: stream.into(),
        }
    }

    #[test]
    fn added_removed_changed_and_renamed() {
        let old = [
            part(
                "cluster-class",
                "---\n# Source: c/templates/a.yaml\napiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata:\n  name: s-1-30-v1\nspec:\n  x: 1\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n",
            ),
            part(
                "cluster-addon/one",
                "---\n# Source: c/templates/d.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gone\n  namespace: kube-system\n",
            ),
        ];
        let new = [
            part(
                "cluster-class",
                "---\n# Source: c/templates/moved.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n---\n# Source: c/templates/a.yaml\napiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata:\n  name: s-1-30-v2\nspec:\n  x: 1\n",
            ),
            part(
                "cluster-addon",
                "---\n# Source: c/templates/e.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: fresh\n",
            ),
        ];
        let diffs = diff_releases(&old, "s-1-30-v1", &new, "s-1-30-v2").unwrap();
        assert_eq!(diffs[0].part, "cluster-class");
        assert_eq!(diffs[0].unchanged, 1, "moving to another template is no change");
        let [Change::Changed { old, new, diff }] = diffs[0].changes.as_slice() else {
            panic!("{:?}", diffs[0].changes)
        };
        assert_eq!(old.to_string(), "cluster.x-k8s.io/ClusterClass s-1-30-v1");
        assert_eq!(new.name, "s-1-30-v2");
        assert_eq!(
            diff,
            "--- old/cluster.x-k8s.io/ClusterClass s-1-30-v1\n+++ new/cluster.x-k8s.io/ClusterClass s-1-30-v2\n@@ -1,6 +1,6 @@\n apiVersion: cluster.x-k8s.io/v1beta1\n kind: ClusterClass\n metadata:\n-  name: s-1-30-v1\n+  name: s-1-30-v2\n spec:\n   x: 1\n"
        );
        assert_eq!(diffs[1].part, "cluster-addon");
        let keys: Vec<String> = diffs[1]
            .changes
            .iter()
            .map(|c| match c {
                Change::Added { key } => format!("+ {key}"),
                Change::Removed { key } => format!("- {key}"),
                Change::Changed { new, .. } => format!("~ {new}"),
            })
            .collect();
        assert_eq!(keys, ["+ Service fresh", "- apps/Deployment kube-system/gone"]);
    }

    #[test]
    fn documents_that_are_not_objects_are_errors() {
        let bad = [part(
            "cluster-class",
            "---\n# Source: c/templates/a.yaml\nkind: X\n",
        )];
        let err = diff_releases(&bad, "", &bad, "").unwrap_err();
        assert_eq!(
            err.to_string(),
            "cluster-class: c/templates/a.yaml: the document has no apiVersion"
        );
    }
}
