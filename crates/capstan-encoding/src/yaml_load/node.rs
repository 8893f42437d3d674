//! The typed tree go-yaml v2 decodes into `interface{}`: the Go types it produces, with the
//! document's key order kept.

/// A decoded YAML value with go-yaml v2's Go types (before any JSON round trip).
#[derive(Debug, Clone, PartialEq)]
pub enum YamlNode {
    Null,
    Bool(bool),
    /// Go `int`.
    Int(i64),
    /// Go `uint64` (integers above `int64`'s range).
    Uint(u64),
    Float(f64),
    /// Strings; `!!binary` data with invalid UTF-8 has each bad byte replaced by U+FFFD, as
    /// the JSON step does.
    Str(String),
    Seq(Vec<YamlNode>),
    /// Entries in document order; a repeated key keeps its first position and last value.
    Map(Vec<(YamlNode, YamlNode)>),
}

impl YamlNode {
    /// Go map-key identity: same dynamic type and equal value (`1` and `1.0` differ).
    pub fn same_key(&self, other: &YamlNode) -> bool {
        match (self, other) {
            (YamlNode::Null, YamlNode::Null) => true,
            (YamlNode::Bool(a), YamlNode::Bool(b)) => a == b,
            (YamlNode::Int(a), YamlNode::Int(b)) => a == b,
            (YamlNode::Uint(a), YamlNode::Uint(b)) => a == b,
            (YamlNode::Float(a), YamlNode::Float(b)) => a == b,
            (YamlNode::Str(a), YamlNode::Str(b)) => a == b,
            _ => false,
        }
    }

    /// Go's `%T` of the decoded value.
    pub fn go_type(&self) -> &'static str {
        match self {
            YamlNode::Null => "<nil>",
            YamlNode::Bool(_) => "bool",
            YamlNode::Int(_) => "int",
            YamlNode::Uint(_) => "uint64",
            YamlNode::Float(_) => "float64",
            YamlNode::Str(_) => "string",
            YamlNode::Seq(_) => "[]interface {}",
            YamlNode::Map(_) => "map[interface {}]interface {}",
        }
    }

    /// Go's `%#v` of the decoded value (used in error texts).
    pub fn go_syntax(&self) -> String {
        match self {
            YamlNode::Null => "<nil>".to_string(),
            YamlNode::Bool(b) => b.to_string(),
            YamlNode::Int(i) => i.to_string(),
            YamlNode::Uint(u) => format!("0x{u:x}"),
            YamlNode::Float(f) => super::format::go_float_g(*f, false),
            YamlNode::Str(s) => super::format::go_quote(s),
            YamlNode::Seq(items) => {
                let inner: Vec<String> = items.iter().map(|i| i.go_syntax_elem()).collect();
                format!("[]interface {{}}{{{}}}", inner.join(", "))
            }
            YamlNode::Map(entries) => {
                // fmt prints maps with sorted keys: nil first, then by dynamic type (in the
                // order Go's runtime happens to give: string, uint64, int, float64, bool),
                // then by value.
                let mut sorted: Vec<&(YamlNode, YamlNode)> = entries.iter().collect();
                sorted.sort_by(|(a, _), (b, _)| a.fmt_key_order(b));
                let inner: Vec<String> = sorted
                    .iter()
                    .map(|(k, v)| format!("{}:{}", k.go_syntax_elem(), v.go_syntax_elem()))
                    .collect();
                format!("map[interface {{}}]interface {{}}{{{}}}", inner.join(", "))
            }
        }
    }

    fn fmt_key_order(&self, other: &YamlNode) -> std::cmp::Ordering {
        let rank = |n: &YamlNode| match n {
            YamlNode::Null => 0,
            YamlNode::Str(_) => 1,
            YamlNode::Uint(_) => 2,
            YamlNode::Int(_) => 3,
            YamlNode::Float(_) => 4,
            YamlNode::Bool(_) => 5,
            YamlNode::Seq(_) => 6,
            YamlNode::Map(_) => 7,
        };
        match (self, other) {
            (YamlNode::Str(a), YamlNode::Str(b)) => a.cmp(b),
            (YamlNode::Uint(a), YamlNode::Uint(b)) => a.cmp(b),
            (YamlNode::Int(a), YamlNode::Int(b)) => a.cmp(b),
            (YamlNode::Float(a), YamlNode::Float(b)) => a.total_cmp(b),
            (YamlNode::Bool(a), YamlNode::Bool(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }

    /// `%#v` of an element inside an `interface{}` container (nil prints as `interface {}(nil)`).
    fn go_syntax_elem(&self) -> String {
        match self {
            YamlNode::Null => "interface {}(nil)".to_string(),
            YamlNode::Uint(u) => format!("0x{u:x}"),
            other => other.go_syntax(),
        }
    }

    /// The string sigs.k8s.io/yaml makes of a scalar headed for a Go `string` field (Chart.yaml
    /// metadata): numbers and bools become text, floats with float32 precision (`1.10` →
    /// `"1.1"`). `None` for null and collections.
    pub fn go_string(&self) -> Option<String> {
        match self {
            YamlNode::Str(s) => Some(s.clone()),
            YamlNode::Bool(b) => Some(b.to_string()),
            YamlNode::Int(i) => Some(i.to_string()),
            YamlNode::Uint(u) => Some(u.to_string()),
            YamlNode::Float(f) => Some(super::format::go_float_g(*f, true)),
            _ => None,
        }
    }
}
