//! Reading the small YAML documents of a release (`metadata.yaml`, `clusteraddon.yaml`,
//! `csctl.yaml`) with errors that name the file and the field.
//!
//! The documents are decoded by the project's go-yaml v2 loader into typed nodes (key order
//! kept), then walked by hand: every problem becomes a [`DocumentError`] with a field path such
//! as `versions.components.clusterAddon` or `addonStages.BeforeClusterUpgrade[1].action`.

use std::fmt;
use std::path::{Path, PathBuf};

use capstan_encoding::yaml_load::{YamlNode, parse_yaml};

/// A problem with one file of a release or stack source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DocumentError {
    /// The file (as given; for files inside a release, its path on disk).
    pub file: PathBuf,
    /// The field path (`versions.kubernetes`), or `None` for the document as a whole.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: field {field}: {}", self.file.display(), self.problem),
            None => write!(f, "{}: {}", self.file.display(), self.problem),
        }
    }
}

impl DocumentError {
    pub(crate) fn whole(file: &Path, problem: impl Into<String>) -> DocumentError {
        DocumentError {
            file: file.to_path_buf(),
            field: None,
            problem: problem.into(),
        }
    }

    pub(crate) fn field(file: &Path, field: &str, problem: impl Into<String>) -> DocumentError {
        DocumentError {
            file: file.to_path_buf(),
            field: Some(field.to_string()),
            problem: problem.into(),
        }
    }
}

/// Reads `path` as UTF-8 text.
pub(crate) fn read_text(path: &Path) -> Result<String, DocumentError> {
    let bytes = std::fs::read(path).map_err(|e| {
        DocumentError::whole(
            path,
            if e.kind() == std::io::ErrorKind::NotFound {
                "file not found".to_string()
            } else {
                format!("cannot read: {e}")
            },
        )
    })?;
    String::from_utf8(bytes).map_err(|e| {
        DocumentError::whole(
            path,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// A node of a document being walked, with its field path and file for errors.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    pub node: &'a YamlNode,
    path: &'a str,
    file: &'a Path,
}

/// Parses `text` and hands the root to `f` (the root must be a mapping).
pub(crate) fn with_root<T>(
    text: &str,
    file: &Path,
    f: impl FnOnce(Node<'_>) -> Result<T, DocumentError>,
) -> Result<T, DocumentError> {
    let root = parse_yaml(text).map_err(|e| DocumentError::whole(file, e.to_string()))?;
    if matches!(root, YamlNode::Null) {
        return Err(DocumentError::whole(file, "the document is empty"));
    }
    if !matches!(root, YamlNode::Map(_)) {
        return Err(DocumentError::whole(
            file,
            format!("expected a mapping at the top, found {}", describe(&root)),
        ));
    }
    f(Node {
        node: &root,
        path: "",
        file,
    })
}

/// What a node is, for "expected …, found …" messages.
pub(crate) fn describe(node: &YamlNode) -> String {
    match node {
        YamlNode::Null => "null".into(),
        YamlNode::Bool(b) => format!("the boolean {b}"),
        YamlNode::Int(i) => format!("the number {i}"),
        YamlNode::Uint(u) => format!("the number {u}"),
        YamlNode::Float(f) => format!("the number {f}"),
        YamlNode::Str(s) => format!("the string {s:?}"),
        YamlNode::Seq(_) => "a list".into(),
        YamlNode::Map(_) => "a mapping".into(),
    }
}

impl<'a> Node<'a> {
    pub fn path(&self) -> &'a str {
        self.path
    }

    pub fn file(&self) -> &'a Path {
        self.file
    }

    pub fn error(&self, problem: impl Into<String>) -> DocumentError {
        if self.path.is_empty() {
            DocumentError::whole(self.file, problem)
        } else {
            DocumentError::field(self.file, self.path, problem)
        }
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// The entries of a mapping (keys must be strings).
    pub fn entries(&self) -> Result<Vec<(&'a str, &'a YamlNode)>, DocumentError> {
        let YamlNode::Map(entries) = self.node else {
            return Err(self.error(format!("expected a mapping, found {}", describe(self.node))));
        };
        entries
            .iter()
            .map(|(k, v)| match k {
                YamlNode::Str(s) => Ok((s.as_str(), v)),
                other => Err(self.error(format!("keys must be strings, found {}", describe(other)))),
            })
            .collect()
    }

    /// Runs `f` on the child `key` (absent and null alike give `None`).
    pub fn with_field<T>(
        &self,
        key: &str,
        f: impl FnOnce(Option<Node<'_>>) -> Result<T, DocumentError>,
    ) -> Result<T, DocumentError> {
        let entries = self.entries()?;
        let found = entries
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .filter(|v| !matches!(v, YamlNode::Null));
        let path = self.child_path(key);
        f(found.map(|node| Node {
            node,
            path: &path,
            file: self.file,
        }))
    }

    /// The string field `key`, which must be present and non-empty.
    pub fn required_string(&self, key: &str) -> Result<String, DocumentError> {
        let path = self.child_path(key);
        self.with_field(key, |field| match field {
            None => Err(DocumentError::field(self.file, &path, "is missing")),
            Some(node) => node.string(),
        })
    }

    /// The string field `key`, if present.
    pub fn optional_string(&self, key: &str) -> Result<Option<String>, DocumentError> {
        self.with_field(key, |field| field.map(|n| n.string()).transpose())
    }

    /// This node as a non-empty string.
    pub fn string(&self) -> Result<String, DocumentError> {
        match self.node {
            YamlNode::Str(s) if s.is_empty() => Err(self.error("is empty")),
            YamlNode::Str(s) => Ok(s.clone()),
            other => Err(self.error(format!("expected a string, found {}", describe(other)))),
        }
    }

    /// Runs `f` on each item of a list, with paths `field[i]`.
    pub fn each_item<T>(
        &self,
        mut f: impl FnMut(Node<'_>) -> Result<T, DocumentError>,
    ) -> Result<Vec<T>, DocumentError> {
        let YamlNode::Seq(items) = self.node else {
            return Err(self.error(format!("expected a list, found {}", describe(self.node))));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let path = format!("{}[{i}]", self.path);
                f(Node {
                    node,
                    path: &path,
                    file: self.file,
                })
            })
            .collect()
    }

    /// Runs `f` on each entry of a mapping, with paths `field.key`.
    pub fn each_entry<T>(
        &self,
        mut f: impl FnMut(&str, Node<'_>) -> Result<T, DocumentError>,
    ) -> Result<Vec<T>, DocumentError> {
        self.entries()?
            .into_iter()
            .map(|(key, node)| {
                let path = self.child_path(key);
                f(
                    key,
                    Node {
                        node,
                        path: &path,
                        file: self.file,
                    },
                )
            })
            .collect()
    }
}
