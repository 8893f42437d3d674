//! Values that cross threads: a `Send + Sync` snapshot of a plain value tree.
//!
//! [`Value`] shares strings, lists and maps with `Rc` (executions are single-threaded and
//! cheap to clone that way). Data decoded once and used by renders on many threads — a
//! chart's `values.yaml` — is kept [`Frozen`] and thawed into fresh values per render.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{List, ListKind, Map, MapKind, Value};

/// A plain value tree (no Go objects or functions) that can be shared between threads.
#[derive(Debug, Clone, PartialEq)]
pub enum Frozen {
    Nil,
    Bool(bool),
    Int(i64),
    Int64(i64),
    Uint8(u8),
    Uint64(u64),
    Float(f64),
    String(Arc<str>),
    ByteString(Arc<[u8]>),
    Bytes(Arc<[u8]>),
    List {
        kind: ListKind,
        nil: bool,
        items: Arc<[Frozen]>,
    },
    Map {
        kind: MapKind,
        nil: bool,
        entries: Arc<[(String, Frozen)]>,
    },
}

/// The value holds a Go object (`.Capabilities`, a semver…), which cannot be frozen.
#[derive(Debug, Clone, thiserror::Error)]
#[error("a {0} cannot be shared between renders")]
pub struct NotPlain(pub String);

impl Frozen {
    /// A snapshot of `value`; maps and lists are copied, so later writes to `value` do not
    /// show. Fails on Go objects.
    pub fn freeze(value: &Value) -> Result<Frozen, NotPlain> {
        Ok(match value {
            Value::Nil => Frozen::Nil,
            Value::Bool(b) => Frozen::Bool(*b),
            Value::Int(i) => Frozen::Int(*i),
            Value::Int64(i) => Frozen::Int64(*i),
            Value::Uint8(u) => Frozen::Uint8(*u),
            Value::Uint64(u) => Frozen::Uint64(*u),
            Value::Float(f) => Frozen::Float(*f),
            Value::String(s) => Frozen::String(Arc::from(&**s)),
            Value::ByteString(b) => Frozen::ByteString(Arc::from(&**b)),
            Value::Bytes(b) => Frozen::Bytes(Arc::from(&**b)),
            Value::List(l) => Frozen::List {
                kind: l.kind,
                nil: l.nil,
                items: l.items.iter().map(Frozen::freeze).collect::<Result<_, _>>()?,
            },
            Value::Map(m) => Frozen::Map {
                kind: m.kind,
                nil: m.nil,
                entries: m
                    .entries
                    .borrow()
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Frozen::freeze(v)?)))
                    .collect::<Result<_, NotPlain>>()?,
            },
            Value::Object(o) => return Err(NotPlain(o.type_name())),
        })
    }

    /// A fresh value tree: every map and list is new, so the caller may change it freely.
    pub fn thaw(&self) -> Value {
        match self {
            Frozen::Nil => Value::Nil,
            Frozen::Bool(b) => Value::Bool(*b),
            Frozen::Int(i) => Value::Int(*i),
            Frozen::Int64(i) => Value::Int64(*i),
            Frozen::Uint8(u) => Value::Uint8(*u),
            Frozen::Uint64(u) => Value::Uint64(*u),
            Frozen::Float(f) => Value::Float(*f),
            Frozen::String(s) => Value::String(s.as_ref().into()),
            Frozen::ByteString(b) => Value::ByteString(b.as_ref().into()),
            Frozen::Bytes(b) => Value::Bytes(b.as_ref().into()),
            Frozen::List { kind, nil, items } => Value::List(List {
                kind: *kind,
                nil: *nil,
                items: std::rc::Rc::new(items.iter().map(Frozen::thaw).collect()),
            }),
            // A nil map is always empty.
            Frozen::Map { kind, nil: true, .. } => Value::nil_map(*kind),
            Frozen::Map { kind, entries, .. } => Value::Map(Map::new(
                *kind,
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.thaw()))
                    .collect::<BTreeMap<_, _>>(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        let inner = Value::map(BTreeMap::from([
            ("s".to_string(), Value::from("text")),
            ("f".to_string(), Value::Float(1.5)),
            ("nil".to_string(), Value::Nil),
        ]));
        Value::map(BTreeMap::from([
            ("inner".to_string(), inner),
            (
                "list".to_string(),
                Value::list(vec![
                    Value::Bool(true),
                    Value::Int(3),
                    Value::from_go_bytes(vec![0xff]),
                ]),
            ),
            ("nil map".to_string(), Value::nil_map(MapKind::String)),
        ]))
    }

    #[test]
    fn thaw_gives_back_an_equal_tree_with_new_identities() {
        let original = sample();
        let frozen = Frozen::freeze(&original).expect("plain values freeze");
        let thawed = frozen.thaw();
        assert_eq!(Frozen::freeze(&thawed).expect("plain"), frozen);
        assert_eq!(format!("{thawed:?}"), format!("{original:?}"));
        // Writing to the thawed tree leaves the frozen one (and the next thaw) alone.
        let Value::Map(m) = &thawed else { panic!("a map") };
        m.insert("new", Value::Int(1));
        assert!(!format!("{:?}", frozen.thaw()).contains("new"));
    }

    #[test]
    fn frozen_values_cross_threads() {
        let frozen = Frozen::freeze(&sample()).expect("plain");
        let printed =
            std::thread::scope(|s| s.spawn(|| format!("{:?}", frozen.thaw())).join().expect("thread"));
        assert_eq!(printed, format!("{:?}", sample()));
    }
}
