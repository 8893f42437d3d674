//! Document nodes → [`YamlNode`], as go-yaml v2 decodes into `interface{}`: scalar
//! resolution, aliases (with its excessive-aliasing guard), `<<` merge keys, map-key rules.

use super::error::YamlError;
use super::node::YamlNode;
use super::parser::{Document, NodeId, NodeKind};
use super::resolve::{self, short_tag};
use super::scanner::ScalarStyle;

const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";

struct Decoder<'d> {
    doc: &'d Document,
    decode_count: u64,
    alias_count: u64,
    alias_depth: u32,
    /// Aliases being expanded (to reject an anchor that contains itself).
    active: Vec<NodeId>,
}

/// Decodes the document's root (`Null` for an empty stream).
pub fn decode(doc: &Document) -> Result<YamlNode, YamlError> {
    let mut d = Decoder {
        doc,
        decode_count: 0,
        alias_count: 0,
        alias_depth: 0,
        active: Vec::new(),
    };
    match doc.root {
        Some(root) => d.node(root),
        None => Ok(YamlNode::Null),
    }
}

/// go-yaml's bound on alias expansion: the share of decoded nodes that come through aliases
/// may not exceed 99% up to 400k nodes, tapering linearly to 10% at 4M nodes.
fn allowed_alias_ratio(decode_count: u64) -> f64 {
    const LOW: u64 = 400_000;
    const HIGH: u64 = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

impl<'d> Decoder<'d> {
    fn count(&mut self) -> Result<(), YamlError> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64 > allowed_alias_ratio(self.decode_count)
        {
            return Err(YamlError::Decode("document contains excessive aliasing".into()));
        }
        Ok(())
    }

    /// The kind of node `id` (borrowing the document, not the decoder).
    fn kind(&self, id: NodeId) -> Result<&'d NodeKind, YamlError> {
        let doc: &'d Document = self.doc;
        doc.nodes
            .get(id)
            .map(|n| &n.kind)
            .ok_or_else(|| YamlError::Decode("dangling node".into()))
    }

    fn node(&mut self, id: NodeId) -> Result<YamlNode, YamlError> {
        super::deep::grow(|| self.node_inner(id))
    }

    fn node_inner(&mut self, id: NodeId) -> Result<YamlNode, YamlError> {
        self.count()?;
        let doc = self.doc;
        let node = doc
            .nodes
            .get(id)
            .ok_or_else(|| YamlError::Decode("dangling node".into()))?;
        match &node.kind {
            NodeKind::Scalar { value, style } => scalar(&node.tag, value, *style),
            NodeKind::Sequence(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.node(*item)?);
                }
                Ok(YamlNode::Seq(out))
            }
            NodeKind::Mapping(_) => {
                let mut entries = MapBuilder::default();
                self.mapping_into(id, &mut entries)?;
                Ok(YamlNode::Map(entries.entries))
            }
            NodeKind::Alias { name, target } => {
                let target = *target;
                self.with_alias(name, target, |d| d.node(target))
            }
        }
    }

    fn with_alias<T>(
        &mut self,
        name: &str,
        target: NodeId,
        f: impl FnOnce(&mut Self) -> Result<T, YamlError>,
    ) -> Result<T, YamlError> {
        if self.active.contains(&target) {
            return Err(YamlError::Decode(format!(
                "anchor '{name}' value contains itself"
            )));
        }
        self.active.push(target);
        self.alias_depth += 1;
        let result = f(self);
        self.alias_depth -= 1;
        self.active.pop();
        result
    }

    /// Decodes mapping `id` into `entries` (merging into what is there, later keys winning).
    fn mapping_into(&mut self, id: NodeId, entries: &mut MapBuilder) -> Result<(), YamlError> {
        let doc = self.doc;
        let NodeKind::Mapping(pairs) = self.kind(id)? else {
            return Err(YamlError::Decode(WANT_MAP.into()));
        };
        for (k, v) in pairs {
            if is_merge_key(doc, *k) {
                self.merge(*v, entries)?;
                continue;
            }
            let key = self.node(*k)?;
            if matches!(key, YamlNode::Seq(_) | YamlNode::Map(_)) {
                return Err(YamlError::Decode(format!("invalid map key: {}", key.go_syntax())));
            }
            let value = self.node(*v)?;
            entries.insert(key, value);
        }
        Ok(())
    }

    /// A `<<` value: a mapping, an alias of one, or a sequence of those (earlier ones win).
    fn merge(&mut self, id: NodeId, entries: &mut MapBuilder) -> Result<(), YamlError> {
        match self.kind(id)? {
            NodeKind::Mapping(_) => {
                self.count()?;
                self.mapping_into(id, entries)
            }
            NodeKind::Alias { name, target } => self.merge_alias(name, *target, entries),
            NodeKind::Sequence(items) => {
                for item in items.iter().rev() {
                    match self.kind(*item)? {
                        NodeKind::Mapping(_) => {
                            self.count()?;
                            self.mapping_into(*item, entries)?;
                        }
                        NodeKind::Alias { name, target } => self.merge_alias(name, *target, entries)?,
                        _ => return Err(YamlError::Decode(WANT_MAP.into())),
                    }
                }
                Ok(())
            }
            _ => Err(YamlError::Decode(WANT_MAP.into())),
        }
    }

    fn merge_alias(&mut self, name: &str, target: NodeId, entries: &mut MapBuilder) -> Result<(), YamlError> {
        if !matches!(self.kind(target)?, NodeKind::Mapping(_)) {
            return Err(YamlError::Decode(WANT_MAP.into()));
        }
        self.count()?;
        self.with_alias(name, target, |d| {
            d.count()?;
            d.mapping_into(target, entries)
        })
    }
}

fn is_merge_key(doc: &Document, id: NodeId) -> bool {
    match doc.nodes.get(id) {
        Some(node) => match &node.kind {
            NodeKind::Scalar { value, style } => {
                let tag = short_tag(&node.tag);
                value == "<<"
                    && ((tag.is_empty() && *style == ScalarStyle::Plain)
                        || tag == "!"
                        || tag == resolve::MERGE)
            }
            _ => false,
        },
        None => false,
    }
}

/// A decoded mapping under construction: a repeated key keeps its place and takes the new
/// value (string keys are indexed so large mappings stay linear).
#[derive(Default)]
struct MapBuilder {
    entries: Vec<(YamlNode, YamlNode)>,
    index: std::collections::HashMap<(u8, String), usize>,
}

/// A hashable identity for the key types Go compares by value (floats are searched).
fn key_identity(key: &YamlNode) -> Option<(u8, String)> {
    match key {
        YamlNode::Str(s) => Some((0, s.clone())),
        YamlNode::Int(i) => Some((1, i.to_string())),
        YamlNode::Uint(u) => Some((2, u.to_string())),
        YamlNode::Bool(b) => Some((3, b.to_string())),
        YamlNode::Null => Some((4, String::new())),
        _ => None,
    }
}

impl MapBuilder {
    fn insert(&mut self, key: YamlNode, value: YamlNode) {
        let identity = key_identity(&key);
        let found = match &identity {
            Some(id) => self.index.get(id).copied(),
            None => self.entries.iter().position(|(k, _)| k.same_key(&key)),
        };
        match found.and_then(|i| self.entries.get_mut(i)) {
            Some(slot) => slot.1 = value,
            None => {
                if let Some(id) = identity {
                    self.index.insert(id, self.entries.len());
                }
                self.entries.push((key, value));
            }
        }
    }
}

fn scalar(tag: &str, value: &str, style: ScalarStyle) -> Result<YamlNode, YamlError> {
    let tag = short_tag(tag);
    // Quoted and block scalars without a tag are strings; `!` forces a string too.
    if (tag.is_empty() && style != ScalarStyle::Plain) || tag == "!" {
        return Ok(YamlNode::Str(value.to_string()));
    }
    if tag == resolve::BINARY {
        return binary(value);
    }
    resolve::resolve(&tag, value)
}

/// `!!binary`: padded standard base64 (Go's decoder skips line breaks), decoded to a string.
fn binary(text: &str) -> Result<YamlNode, YamlError> {
    use base64::Engine;
    use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let compact: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    let bytes = LENIENT
        .decode(compact.as_bytes())
        .map_err(|_| YamlError::Decode("!!binary value contains invalid base64 data".into()))?;
    Ok(YamlNode::Str(lossy_per_byte(&bytes)))
}

/// Invalid UTF-8 → one U+FFFD per bad byte (what Go's JSON encoder writes).
pub fn lossy_per_byte(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{fffd}');
                rest = bad.get(1..).unwrap_or_default();
            }
        }
    }
    out
}
