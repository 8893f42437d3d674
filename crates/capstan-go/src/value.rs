//! The Go value model templates operate on.
//!
//! Helm charts can observe Go's static types (`typeOf`, `kindIs`, `eq` type errors,
//! `has` using `reflect.DeepEqual`, typed function parameters), so a value keeps its Go type:
//! `int` vs `int64` vs `float64`, `[]interface{}` vs `[]string`, `map[string]interface{}` vs
//! Helm's named `common.Values` vs `map[string]string`. Maps have reference semantics (sprig's
//! `set`/`merge` mutate the shared `.Values`), so they live behind `Rc<RefCell<…>>`; lists are
//! never mutated in place by any template function, so they are shared immutably.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

pub mod cycles;
pub mod frozen;
mod tracking;

/// A dynamic Go value.
#[derive(Clone)]
pub enum Value {
    /// A nil `interface{}` (also what a missing map key yields under `missingkey=zero`).
    Nil,
    Bool(bool),
    /// Go `int` (template literals, `len`, `atoi`, `.Release.Revision`).
    Int(i64),
    /// Go `int64` (sprig arithmetic results, `int64`).
    Int64(i64),
    /// Go `uint8` (`index "abc" 1`).
    Uint8(u8),
    /// Go `uint64` (Masterminds semver's `Major`/`Minor`/`Patch`).
    Uint64(u64),
    /// Go `float64` (every number from YAML/JSON values).
    Float(f64),
    /// A Go `string` holding valid UTF-8 (the normal case).
    String(Rc<str>),
    /// A Go `string` whose bytes are not valid UTF-8 (what `trunc`/`substr`/`slice` leave
    /// when they cut inside a character, or `b64dec` of binary data). Its Go type is `string`
    /// everywhere. Only [`Value::from_go_bytes`] creates it, so it never holds valid UTF-8:
    /// a `String` and a `ByteString` are never the same Go string.
    ByteString(Rc<[u8]>),
    /// Go `[]byte` (`.Files.GetBytes`, `randBytes` inputs).
    Bytes(Rc<[u8]>),
    List(List),
    Map(Map),
    /// A Go struct or pointer with fields and methods (`.Capabilities`, `.Files`, semver…).
    Object(Rc<dyn Object>),
}

/// A Go slice.
#[derive(Clone)]
pub struct List {
    pub kind: ListKind,
    pub items: Rc<Vec<Value>>,
    /// A nil slice (Go keeps it apart from an empty one: JSON/YAML `null`, `%#v`, DeepEqual).
    /// It is always empty.
    pub nil: bool,
}

/// The element type of a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `[]interface {}`
    Any,
    /// `[]string`
    String,
    /// `[]int`
    Int,
    /// `[][]interface {}` (sprig `chunk`)
    AnyList,
    /// `[]map[string]interface {}` (`fromToml`'s arrays of tables)
    MapAny,
}

/// A Go map with string keys. Keys iterate in byte order, which is how Go's `range`, `fmt` and
/// `encoding/json` visit them.
#[derive(Clone)]
pub struct Map {
    pub kind: MapKind,
    pub entries: Rc<RefCell<BTreeMap<String, Value>>>,
    /// A nil map: reads like an empty map, but writing to it is an error and it encodes as
    /// JSON/YAML `null`. It is always empty.
    pub nil: bool,
}

/// The Go type of a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// `map[string]interface {}`
    Any,
    /// Helm's named `common.Values` (underlying `map[string]interface {}`).
    Values,
    /// `map[string]string`
    String,
}

/// A method value bound to its receiver (Go's `reflect.Value.MethodByName`): its parameter
/// types and the call. Methods return a value or Go's error text; whoever calls them (the
/// template executor) checks arguments against `params` first.
#[derive(Clone)]
pub struct Method {
    pub params: Vec<GoType>,
    pub call: MethodCall,
}

/// The body of a [`Method`]: arguments in, a value or Go's error text out.
pub type MethodCall = Rc<dyn Fn(&[Value]) -> Result<Value, String>>;

impl Method {
    pub fn new(params: &[GoType], call: impl Fn(&[Value]) -> Result<Value, String> + 'static) -> Method {
        Method {
            params: params.to_vec(),
            call: Rc::new(call),
        }
    }
}

/// A Go struct-like value: fields, methods, a `%T` name and a `%v` form.
pub trait Object {
    /// Go's `%T` (`*common.Capabilities`, `engine.files`, `*semver.Version`, …).
    fn type_name(&self) -> String;
    /// Go's `reflect.Kind` name (`struct`, `ptr`, `map`), for `kindOf`/`kindIs`.
    fn kind(&self) -> &'static str;
    /// A field, or a method taking no arguments, by name. `None` when there is no such member.
    fn field(&self, name: &str) -> Option<Value>;
    /// A method that takes arguments, called like a function (`.Files.Get "x"`).
    fn method(&self, name: &str) -> Option<Method> {
        let _ = name;
        None
    }
    /// Go's `%v` rendering (the `String()` method for Stringers, struct layout otherwise).
    /// Structs with [`Object::fmt_fields`] need not implement it: `go::fmt` prints them from
    /// their fields (print them through `go::fmt::format_value`, not with this method).
    fn format(&self) -> String {
        String::new()
    }
    /// For structs and pointers to structs: the fields in declaration order, with their Go
    /// names, which `fmt` prints one by one (the verb applies to each; `%+v` adds the names,
    /// `%#v` writes Go syntax). `None` leaves printing to [`Object::format`].
    fn fmt_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        None
    }
    /// The `String()` result when the Go type is a `fmt.Stringer`.
    fn stringer(&self) -> Option<String> {
        None
    }
    /// The `String()` result when the value is addressable, as a field printed directly by
    /// an action is: pointer-receiver `String` methods count there, but not on the copies
    /// `print`/`printf`/`toString` receive (Helm's `KubeVersion`).
    fn addressable_stringer(&self) -> Option<String> {
        self.stringer()
    }
    /// The value `encoding/json` would marshal this object as (fields by JSON name).
    fn to_data(&self) -> Value {
        Value::Nil
    }
    /// For structs: the fields `encoding/json` writes, in declaration order (JSON keeps struct
    /// field order; `to_data`'s map would sort them). `None` encodes `to_data` instead.
    fn json_fields(&self) -> Option<Vec<(String, Value)>> {
        None
    }
    /// Go's truth of a value that is neither a container nor a struct (`complex128`: non-zero).
    fn truth(&self) -> Option<bool> {
        None
    }
    /// A typed nil (a nil map or pointer): encodes as JSON `null` though it has a type.
    fn is_nil(&self) -> bool {
        false
    }
    /// For map-typed objects (`engine.files`): the entries, for `range`, `len` and `index`.
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        None
    }
    /// Whether the member `name` is a method with a pointer receiver: Go finds it only on
    /// an addressable value (a field reached through a pointer), not on a copy.
    fn pointer_receiver(&self, name: &str) -> bool {
        let _ = name;
        false
    }
    /// What sprig's `deepCopy` makes of this object: Go's copystructure copies exported
    /// fields only, so unexported state comes back zero. `None` when that changes nothing
    /// (the copy may then share this object, which is immutable).
    fn deep_copy(&self) -> Option<Value> {
        None
    }
    /// Downcasting support for functions that need the concrete type.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Go parameter types of template functions, for text/template's `validateType` rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoType {
    /// `interface {}`: accepts anything.
    Any,
    /// `reflect.Value` (builtins like `eq`, `index`): accepts anything, like `Any`.
    Reflect,
    Bool,
    Int,
    Int64,
    /// `uint32` (sprig's `derivePassword` counter). No value has this type, so only integer
    /// literals are accepted; they arrive as `Value::Int`.
    Uint32,
    Float64,
    String,
    Bytes,
    /// `[]interface {}`
    ListAny,
    /// `[]string`
    StringList,
    /// `map[string]interface {}` (a `common.Values` is assignable to it).
    MapAny,
    /// `common.Values` (a `map[string]interface {}` is assignable to it).
    Values,
    /// `map[string]string`
    MapString,
    /// A named Go struct or pointer type (`time.Time`, `*semver.Version`): accepts the
    /// objects whose `%T` is exactly this name; a pointer type (leading `*`) also takes nil.
    Named(&'static str),
}

impl GoType {
    /// Go's spelling of the type in error messages.
    pub fn name(self) -> &'static str {
        match self {
            GoType::Any => "interface {}",
            GoType::Reflect => "reflect.Value",
            GoType::Bool => "bool",
            GoType::Int => "int",
            GoType::Uint32 => "uint32",
            GoType::Int64 => "int64",
            GoType::Float64 => "float64",
            GoType::String => "string",
            GoType::Bytes => "[]uint8",
            GoType::ListAny => "[]interface {}",
            GoType::StringList => "[]string",
            GoType::MapAny => "map[string]interface {}",
            GoType::Values => "common.Values",
            GoType::MapString => "map[string]string",
            GoType::Named(name) => name,
        }
    }

    /// Whether a nil value can be assigned (maps, slices, interfaces).
    pub fn can_be_nil(self) -> bool {
        matches!(
            self,
            GoType::Any
                | GoType::Bytes
                | GoType::ListAny
                | GoType::StringList
                | GoType::MapAny
                | GoType::Values
                | GoType::MapString
        ) || matches!(self, GoType::Named(name) if name.starts_with('*'))
    }

    /// The zero value of the type (what a `nil` literal or a missing value becomes).
    pub fn zero(self) -> Value {
        match self {
            GoType::Bool => Value::Bool(false),
            GoType::Int | GoType::Uint32 => Value::Int(0),
            GoType::Int64 => Value::Int64(0),
            GoType::Float64 => Value::Float(0.0),
            GoType::String => Value::from(""),
            _ => Value::Nil,
        }
    }

    /// Go assignability of a (non-nil) value to this type.
    pub fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (GoType::Any | GoType::Reflect, _) => true,
            (GoType::Bool, Value::Bool(_)) => true,
            (GoType::Int, Value::Int(_)) => true,
            (GoType::Int64, Value::Int64(_)) => true,
            (GoType::Float64, Value::Float(_)) => true,
            (GoType::String, Value::String(_) | Value::ByteString(_)) => true,
            (GoType::Bytes, Value::Bytes(_)) => true,
            (GoType::ListAny, Value::List(l)) => l.kind == ListKind::Any,
            (GoType::StringList, Value::List(l)) => l.kind == ListKind::String,
            (GoType::MapAny | GoType::Values, Value::Map(m)) => m.kind != MapKind::String,
            (GoType::MapString, Value::Map(m)) => m.kind == MapKind::String,
            (GoType::Named(name), Value::Object(o)) => o.type_name() == name,
            _ => false,
        }
    }
}

impl Value {
    pub fn str(s: impl Into<Rc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A new `[]interface {}`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(List::new(ListKind::Any, items))
    }

    /// A new `[]string`.
    pub fn string_list(items: Vec<String>) -> Value {
        Value::List(List::new(
            ListKind::String,
            items.into_iter().map(Value::from).collect(),
        ))
    }

    /// A nil slice of the given element type (what Go functions return for "no result").
    pub fn nil_list(kind: ListKind) -> Value {
        Value::List(List {
            kind,
            items: Rc::new(Vec::new()),
            nil: true,
        })
    }

    /// A nil map of the given type (`json.Unmarshal` of `null` into a map).
    pub fn nil_map(kind: MapKind) -> Value {
        Value::Map(Map {
            kind,
            entries: Rc::new(RefCell::new(BTreeMap::new())),
            nil: true,
        })
    }

    /// Whether this is a nil map or slice: a typed nil that JSON and YAML encode as `null`.
    pub fn is_typed_nil(&self) -> bool {
        match self {
            Value::List(l) => l.nil,
            Value::Map(m) => m.nil,
            Value::Object(o) => o.is_nil(),
            _ => false,
        }
    }

    /// A new `map[string]interface {}`.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Map::new(MapKind::Any, entries))
    }

    /// A new empty `map[string]interface {}`.
    pub fn empty_map() -> Value {
        Value::map(BTreeMap::new())
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The text of a valid-UTF-8 string (`None` for a [`Value::ByteString`]).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A Go `string` from its bytes: [`Value::String`] when they are valid UTF-8, otherwise
    /// [`Value::ByteString`]. The only way to make a `ByteString`.
    pub fn from_go_bytes(bytes: impl Into<Vec<u8>>) -> Value {
        match String::from_utf8(bytes.into()) {
            Ok(s) => Value::String(s.into()),
            Err(e) => Value::ByteString(e.into_bytes().into()),
        }
    }

    /// The bytes of a Go `string` (either representation); `None` for other types.
    pub fn go_str_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::String(s) => Some(s.as_bytes()),
            Value::ByteString(b) => Some(b),
            _ => None,
        }
    }

    /// A Go `string` as text the way Go decodes it (each invalid byte becomes one U+FFFD);
    /// `None` for other types.
    pub fn go_str_lossy(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::ByteString(b) => Some(go_lossy(b)),
            _ => None,
        }
    }

    /// A `ByteString` replaced by its [`go_lossy`] text; every other value as it is.
    pub fn into_lossy(self) -> Value {
        match self {
            Value::ByteString(b) => Value::from(go_lossy(&b).into_owned()),
            other => other,
        }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// Go's `%T`: `typeOf`, and the "got X" part of type errors (`<nil>` for nil).
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Uint8(_) => "uint8".into(),
            Value::Uint64(_) => "uint64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) | Value::ByteString(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(l) => match l.kind {
                ListKind::Any => "[]interface {}",
                ListKind::String => "[]string",
                ListKind::Int => "[]int",
                ListKind::AnyList => "[][]interface {}",
                ListKind::MapAny => "[]map[string]interface {}",
            }
            .into(),
            Value::Map(m) => match m.kind {
                MapKind::Any => "map[string]interface {}",
                MapKind::Values => "common.Values",
                MapKind::String => "map[string]string",
            }
            .into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// Go's `reflect.Kind` name: `kindOf`/`kindIs` (`invalid` for nil).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Uint8(_) => "uint8",
            Value::Uint64(_) => "uint64",
            Value::Float(_) => "float64",
            Value::String(_) | Value::ByteString(_) => "string",
            Value::Bytes(_) | Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind(),
        }
    }

    /// text/template truthiness: false, 0, nil, "" and empty collections are false.
    pub fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Uint8(u) => *u != 0,
            Value::Uint64(u) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::ByteString(b) | Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.items.is_empty(),
            Value::Map(m) => !m.entries.borrow().is_empty(),
            Value::Object(o) => o
                .truth()
                .unwrap_or_else(|| o.entries().is_none_or(|e| !e.is_empty())),
        }
    }

    /// `reflect.DeepEqual` on the dynamic values (types must match exactly). Like Go, a pair
    /// of maps met again while comparing (maps that contain themselves) counts as equal, so
    /// cyclic values compare in finite time.
    pub fn deep_equal(&self, other: &Value) -> bool {
        deep_equal_seen(self, other, &mut std::collections::HashSet::new())
    }
}

fn deep_equal_seen(a: &Value, b: &Value, seen: &mut std::collections::HashSet<(usize, usize)>) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Int(a), Value::Int(b)) | (Value::Int64(a), Value::Int64(b)) => a == b,
        (Value::Uint8(a), Value::Uint8(b)) => a == b,
        (Value::Uint64(a), Value::Uint64(b)) => a == b,
        // DeepEqual uses ==, so NaN != NaN.
        (Value::Float(a), Value::Float(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::ByteString(a), Value::ByteString(b)) | (Value::Bytes(a), Value::Bytes(b)) => a == b,
        (Value::List(a), Value::List(b)) => {
            a.kind == b.kind
                && a.nil == b.nil
                && a.items.len() == b.items.len()
                && a.items
                    .iter()
                    .zip(b.items.iter())
                    .all(|(x, y)| stacker::maybe_grow(64 * 1024, 1024 * 1024, || deep_equal_seen(x, y, seen)))
        }
        (Value::Map(a), Value::Map(b)) => {
            if a.kind != b.kind || a.nil != b.nil {
                return false;
            }
            let pair = (
                Rc::as_ptr(&a.entries) as *const () as usize,
                Rc::as_ptr(&b.entries) as *const () as usize,
            );
            if pair.0 == pair.1 || !seen.insert(pair) {
                return true;
            }
            let (a, b) = (a.snapshot(), b.snapshot());
            a.len() == b.len()
                && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| {
                    ka == kb && stacker::maybe_grow(64 * 1024, 1024 * 1024, || deep_equal_seen(va, vb, seen))
                })
        }
        (Value::Object(a), Value::Object(b)) => {
            Rc::ptr_eq(a, b)
                || (a.type_name() == b.type_name()
                    && match (a.fmt_fields(), b.fmt_fields()) {
                        (Some(fa), Some(fb)) => {
                            fa.len() == fb.len()
                                && fa
                                    .iter()
                                    .zip(&fb)
                                    .all(|((na, va), (nb, vb))| na == nb && va.deep_equal(vb))
                        }
                        _ => a.format() == b.format(),
                    })
        }
        _ => false,
    }
}

impl List {
    /// A new (non-nil) slice.
    pub fn new(kind: ListKind, items: Vec<Value>) -> List {
        List {
            kind,
            items: Rc::new(items),
            nil: false,
        }
    }

    /// The same slice (shared items, same nil-ness) with another element type.
    pub fn retyped(&self, kind: ListKind) -> List {
        List {
            kind,
            items: Rc::clone(&self.items),
            nil: self.nil,
        }
    }
}

impl Map {
    pub fn new(kind: MapKind, entries: BTreeMap<String, Value>) -> Map {
        let entries = Rc::new(RefCell::new(entries));
        // A template may make the map contain itself: let the execution reclaim it then.
        tracking::track(&entries);
        Map {
            kind,
            entries,
            nil: false,
        }
    }

    /// The same map (shared entries, same nil-ness) as another Go map type.
    pub fn retyped(&self, kind: MapKind) -> Map {
        Map {
            kind,
            entries: Rc::clone(&self.entries),
            nil: self.nil,
        }
    }

    pub fn get(&self, key: &str) -> Option<Value> {
        self.entries.borrow().get(key).cloned()
    }

    pub fn insert(&self, key: impl Into<String>, value: Value) {
        self.entries.borrow_mut().insert(key.into(), value);
    }

    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }

    /// A snapshot of the entries in key order (safe to iterate while templates mutate the map).
    pub fn snapshot(&self) -> Vec<(String, Value)> {
        self.entries
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The zero value of the map's element type (what `missingkey=zero` yields).
    pub fn zero_elem(&self) -> Value {
        match self.kind {
            MapKind::String => Value::from(""),
            _ => Value::Nil,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.into())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s.into())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("Nil"),
            Value::Bool(b) => write!(f, "Bool({b})"),
            Value::Int(i) => write!(f, "Int({i})"),
            Value::Int64(i) => write!(f, "Int64({i})"),
            Value::Uint8(u) => write!(f, "Uint8({u})"),
            Value::Uint64(u) => write!(f, "Uint64({u})"),
            Value::Float(x) => write!(f, "Float({x:?})"),
            Value::String(s) => write!(f, "String({s:?})"),
            Value::ByteString(b) => write!(f, "ByteString({:?})", go_lossy(b)),
            Value::Bytes(b) => write!(f, "Bytes({b:?})"),
            Value::List(l) => f.debug_tuple("List").field(&l.kind).field(&l.items).finish(),
            Value::Map(m) => f
                .debug_tuple("Map")
                .field(&m.kind)
                .field(&m.entries.borrow())
                .finish(),
            Value::Object(o) => write!(f, "Object({})", o.type_name()),
        }
    }
}

impl fmt::Debug for dyn Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Object({})", self.type_name())
    }
}

impl Value {
    /// A value as Go's `encoding/json` decodes JSON into `interface{}`: every number is a
    /// `float64`, objects are `map[string]interface {}`, arrays `[]interface {}`.
    pub fn from_json(j: &serde_json::Value) -> Value {
        match j {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(items) => Value::list(items.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(entries) => Value::map(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The same map re-typed as Helm's named `common.Values` (shares the entries).
    pub fn into_values(self) -> Value {
        match self {
            Value::Map(m) => Value::Map(m.retyped(MapKind::Values)),
            other => other,
        }
    }
}

/// Go string bytes as Rust text, decoded the Go way (see [`go_lossy`]); valid UTF-8 is
/// taken over without copying.
pub fn go_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => go_lossy(e.as_bytes()).into_owned(),
    }
}

/// Go's decoding of a byte string as text (`for range`, `[]rune(s)`, `encoding/json`): valid
/// UTF-8 as it is, and each byte that does not start a valid sequence becomes one U+FFFD
/// (Go's `utf8.DecodeRune` reports width 1). This differs from Rust's `from_utf8_lossy`,
/// which replaces a truncated sequence as a whole.
pub fn go_lossy(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        // Every byte of an invalid run is a separate error for Go.
        out.extend(std::iter::repeat_n('\u{fffd}', chunk.invalid().len()));
    }
    Cow::Owned(out)
}

/// Frees nested containers iteratively: a value nested many thousands of levels deep (from
/// `fromJson`, values files or a template loop) would otherwise overflow the stack when the
/// recursive drop glue walks it.
fn drop_children(stack: &mut Vec<Value>) {
    while let Some(value) = stack.pop() {
        match value {
            Value::Map(m) => take_map_children(&m, stack),
            Value::List(mut l) => take_list_children(&mut l, stack),
            _ => {}
        }
    }
}

fn take_map_children(map: &Map, stack: &mut Vec<Value>) {
    if Rc::strong_count(&map.entries) == 1
        && let Ok(mut entries) = map.entries.try_borrow_mut()
    {
        stack.extend(std::mem::take(&mut *entries).into_values());
    }
}

fn take_list_children(list: &mut List, stack: &mut Vec<Value>) {
    if let Some(items) = Rc::get_mut(&mut list.items) {
        stack.append(items);
    }
}

/// Nesting up to which containers are dropped by the ordinary recursive drop glue (cheap);
/// deeper ones go through [`drop_children`]'s explicit stack.
const RECURSIVE_DROP_DEPTH: u32 = 128;

thread_local! {
    static DROP_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl Drop for Map {
    fn drop(&mut self) {
        // Only the last owner frees the entries.
        if Rc::strong_count(&self.entries) != 1 {
            return;
        }
        let entries = match self.entries.try_borrow_mut() {
            Ok(mut entries) => std::mem::take(&mut *entries),
            Err(_) => return,
        };
        if let Err(entries) = drop_recursively_or_return(entries) {
            let mut stack: Vec<Value> = entries.into_values().collect();
            drop_children(&mut stack);
        }
    }
}

impl Drop for List {
    fn drop(&mut self) {
        let Some(items) = Rc::get_mut(&mut self.items) else {
            return;
        };
        let items = std::mem::take(items);
        if let Err(mut items) = drop_recursively_or_return(items) {
            drop_children(&mut items);
        }
    }
}

/// Drops `value` with the ordinary recursive drop glue when shallow enough, else gives it
/// back for [`drop_children`].
fn drop_recursively_or_return<T>(value: T) -> Result<(), T> {
    let depth = DROP_DEPTH.get();
    if depth >= RECURSIVE_DROP_DEPTH {
        return Err(value);
    }
    DROP_DEPTH.set(depth + 1);
    drop(value);
    DROP_DEPTH.set(depth);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_bytes_are_a_byte_string_only_when_invalid_utf8() {
        assert!(matches!(Value::from_go_bytes(b"h\xc3\xa9".to_vec()), Value::String(s) if &*s == "hé"));
        assert!(matches!(Value::from_go_bytes(Vec::new()), Value::String(s) if s.is_empty()));
        let cut = Value::from_go_bytes(&b"h\xc3"[..]);
        assert!(matches!(&cut, Value::ByteString(b) if &b[..] == b"h\xc3"));
        assert_eq!(cut.type_name(), "string");
        assert_eq!(cut.kind_name(), "string");
        assert!(cut.truth());
        assert!(GoType::String.accepts(&cut));
        assert!(cut.deep_equal(&Value::from_go_bytes(b"h\xc3".to_vec())));
        assert!(!cut.deep_equal(&Value::from("h\u{fffd}")));
        assert_eq!(cut.go_str_bytes(), Some(&b"h\xc3"[..]));
        assert_eq!(cut.as_str(), None);
        assert_eq!(cut.into_lossy().as_str(), Some("h\u{fffd}"));
    }

    #[test]
    fn go_lossy_replaces_each_invalid_byte() {
        assert_eq!(go_lossy(b"plain"), "plain");
        assert!(matches!(go_lossy(b"plain"), Cow::Borrowed(_)));
        assert_eq!(go_lossy(b"h\xc3"), "h\u{fffd}");
        // A truncated three-byte sequence is two errors in Go (one in from_utf8_lossy).
        assert_eq!(go_lossy(b"\xe2\x82x"), "\u{fffd}\u{fffd}x");
        assert_eq!(go_lossy(b"a\xe2\x82"), "a\u{fffd}\u{fffd}");
        // Surrogates and overlong forms: one per byte.
        assert_eq!(go_lossy(b"\xed\xa0\x80"), "\u{fffd}\u{fffd}\u{fffd}");
        assert_eq!(go_lossy(b"\xc0\x80\xff\xc3\xa9"), "\u{fffd}\u{fffd}\u{fffd}é");
        assert_eq!(go_lossy(b"\xf0\x9f\x98"), "\u{fffd}\u{fffd}\u{fffd}");
    }

    #[test]
    fn very_deep_values_drop_without_overflowing_the_stack() {
        // Runs on a small thread stack on purpose: recursive drop glue would overflow it.
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut v = Value::Nil;
                for i in 0..200_000 {
                    v = if i % 2 == 0 {
                        Value::map(BTreeMap::from([("k".to_string(), v)]))
                    } else {
                        Value::list(vec![v])
                    };
                }
                drop(v);
            })
            .expect("thread starts");
        assert!(handle.join().is_ok());
    }
}
