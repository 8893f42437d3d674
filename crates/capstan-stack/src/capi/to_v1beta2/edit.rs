//! The edits the conversions are made of: moving and renaming fields of a JSON object,
//! durations to seconds, argument maps to lists, each naming the field it refuses.

use serde_json::{Map, Value};

use super::kinds::converted_api_version;
use super::refusal::{ConversionError, Dropped, Refusal};
use crate::capi::model::describe;

pub type Object = Map<String, Value>;

/// One object's conversion: who it is, where it is applied, what was dropped.
pub struct Ctx {
    /// `Kind name`, for errors.
    pub object: String,
    /// The namespace the object is applied in.
    pub namespace: String,
    pub dropped: Vec<Dropped>,
}

/// `parent.key` (or `key` at the top).
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl Ctx {
    pub fn error(&self, field: &str, refusal: Refusal) -> ConversionError {
        ConversionError {
            object: self.object.clone(),
            field: field.to_string(),
            refusal,
        }
    }

    /// The mapping at `map[key]` (`None` when absent or null); a refusal when it is not one.
    pub fn object_field<'m>(
        &self,
        map: &'m mut Object,
        key: &str,
        parent: &str,
    ) -> Result<Option<&'m mut Object>, ConversionError> {
        match map.get_mut(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(inner)) => Ok(Some(inner)),
            Some(other) => Err(self.error(
                &join(parent, key),
                Refusal::Invalid(format!("expected a mapping, found {}", describe(other))),
            )),
        }
    }

    /// The list at `map[key]`'s mappings, each with its path; a refusal for anything else.
    pub fn list_of_objects<'m>(
        &self,
        map: &'m mut Object,
        key: &str,
        parent: &str,
    ) -> Result<Vec<(String, &'m mut Object)>, ConversionError> {
        let path = join(parent, key);
        match map.get_mut(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter_mut()
                .enumerate()
                .map(|(i, item)| {
                    let item_path = format!("{path}[{i}]");
                    match item {
                        Value::Object(inner) => Ok((item_path, inner)),
                        other => Err(self.error(
                            &item_path,
                            Refusal::Invalid(format!("expected a mapping, found {}", describe(other))),
                        )),
                    }
                })
                .collect(),
            Some(other) => Err(self.error(
                &path,
                Refusal::Invalid(format!("expected a list, found {}", describe(other))),
            )),
        }
    }

    /// Takes `map[key]` out as a mapping (`None` when absent or null).
    pub fn take_object(
        &self,
        map: &mut Object,
        key: &str,
        parent: &str,
    ) -> Result<Option<Object>, ConversionError> {
        match map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(inner)) => Ok(Some(inner)),
            Some(other) => Err(self.error(
                &join(parent, key),
                Refusal::Invalid(format!("expected a mapping, found {}", describe(&other))),
            )),
        }
    }

    /// Refuses what is left in `map` (fields the conversion of its parent does not know).
    pub fn nothing_left(&self, map: &Object, parent: &str, kind: &str) -> Result<(), ConversionError> {
        match map.keys().next() {
            Some(key) => Err(self.error(
                &join(parent, key),
                Refusal::Unknown {
                    kind: kind.to_string(),
                },
            )),
            None => Ok(()),
        }
    }

    /// Refuses what is left in `map` but `keys`.
    pub fn nothing_left_but(&self, map: &Object, parent: &str, keys: &[&str]) -> Result<(), ConversionError> {
        match map.keys().find(|key| !keys.contains(&key.as_str())) {
            Some(key) => Err(self.error(
                &join(parent, key),
                Refusal::Unknown {
                    kind: "ClusterClass".to_string(),
                },
            )),
            None => Ok(()),
        }
    }

    /// Takes `map[key]` (a Go duration) out as whole seconds, as Cluster API's conversion
    /// does: truncated, capped at the largest int32.
    pub fn take_seconds(
        &self,
        map: &mut Object,
        key: &str,
        parent: &str,
    ) -> Result<Option<Value>, ConversionError> {
        match map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => go_duration_seconds(&text)
                .map(|seconds| Some(Value::from(seconds)))
                .map_err(|problem| self.error(&join(parent, key), Refusal::Invalid(problem))),
            Some(other) => Err(self.error(
                &join(parent, key),
                Refusal::Invalid(format!(
                    "expected a duration (\"10m\"), found {}",
                    describe(&other)
                )),
            )),
        }
    }

    /// Takes `map[key]` out and records it as dropped (when set).
    pub fn drop_field(&mut self, map: &mut Object, key: &str, parent: &str, why: &'static str) {
        if let Some(value) = map.remove(key)
            && !is_empty(&value)
        {
            self.dropped.push(Dropped {
                field: join(parent, key),
                why,
            });
        }
    }

    /// A `v1beta1` object reference (`{apiVersion, kind, name, namespace, …}`) as a
    /// `v1beta2` template reference (`{apiVersion, kind, name}`, the apiVersion of a
    /// converted kind moved to `v1beta2`): its namespace must be the object's (or unset),
    /// and the fields of a reference to a live object (uid, resourceVersion, fieldPath)
    /// unset.
    pub fn template_ref(&self, mut reference: Object, path: &str) -> Result<Object, ConversionError> {
        let mut out = Object::new();
        let kind = reference
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(api_version) = reference.remove("apiVersion") {
            let converted = match &api_version {
                Value::String(text) => Value::String(converted_api_version(text, &kind)),
                other => other.clone(),
            };
            out.insert("apiVersion".into(), converted);
        }
        for key in ["kind", "name"] {
            if let Some(value) = reference.remove(key) {
                out.insert(key.into(), value);
            }
        }
        match reference.remove("namespace") {
            None | Some(Value::Null) => {}
            Some(Value::String(ns)) if ns.is_empty() || ns == self.namespace => {}
            Some(other) => {
                return Err(self.error(
                    &join(path, "namespace"),
                    Refusal::NoEquivalent(format!(
                        "a v1beta2 reference is always in the object's namespace ({:?}), not {other}",
                        self.namespace
                    )),
                ));
            }
        }
        for key in ["uid", "resourceVersion", "fieldPath"] {
            match reference.remove(key) {
                Some(value) if !is_empty(&value) => {
                    return Err(self.error(
                        &join(path, key),
                        Refusal::NoEquivalent(
                            "a v1beta2 template reference names a kind and name only".into(),
                        ),
                    ));
                }
                _ => {}
            }
        }
        self.nothing_left(&reference, path, "object reference")?;
        Ok(out)
    }

    /// A `v1beta1` argument map (`{name: value}`) at `map[key]` as the `v1beta2` list
    /// (`[{name, value}]`, sorted by name as Cluster API's conversion sorts it).
    pub fn args_to_list(&self, map: &mut Object, key: &str, parent: &str) -> Result<(), ConversionError> {
        let path = join(parent, key);
        let Some(args) = self.take_object(map, key, parent)? else {
            return Ok(());
        };
        let mut args: Vec<(String, Value)> = args.into_iter().collect();
        args.sort_by(|a, b| a.0.cmp(&b.0));
        let mut list = Vec::with_capacity(args.len());
        for (name, value) in args {
            let Value::String(value) = value else {
                return Err(self.error(
                    &join(&path, &name),
                    Refusal::Invalid(format!("expected a string, found {}", describe(&value))),
                ));
            };
            let mut arg = Object::new();
            arg.insert("name".into(), Value::String(name));
            arg.insert("value".into(), Value::String(value));
            list.push(Value::Object(arg));
        }
        map.insert(key.into(), Value::Array(list));
        Ok(())
    }
}

/// Inserts `value` at `map[keys[0]][keys[1]]…`, making the mappings on the way.
pub fn put(map: &mut Object, keys: &[&str], value: Value) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut at = map;
    for key in parents {
        let entry = at
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Object::new()));
        if !entry.is_object() {
            *entry = Value::Object(Object::new());
        }
        let Value::Object(inner) = entry else { return };
        at = inner;
    }
    at.insert(last.to_string(), value);
}

/// Moves `map[from]` to `map[to…]` when set.
pub fn rename(map: &mut Object, from: &str, to: &[&str]) {
    if let Some(value) = map.remove(from)
        && !value.is_null()
    {
        put(map, to, value);
    }
}

/// Null, `""`, `false`, `0`, or an empty list or mapping.
pub fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

/// The whole seconds of a Go duration (`"10m"`, `"1h30m"`, `"1.5s"`, `"-2m"`, `"0"`),
/// truncated toward zero and capped at the int32 range, as Cluster API's conversion makes
/// them.
pub fn go_duration_seconds(text: &str) -> Result<i64, String> {
    let bad = || format!("invalid duration {text:?} (expected Go's form: \"90s\", \"10m\", \"1h30m\")");
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| bad())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        nanos += number * scale;
    }
    let seconds = (nanos / 1e9).trunc();
    let seconds = if negative { -seconds } else { seconds };
    Ok(seconds.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i64)
}

/// `node{Drain,VolumeDetach,Deletion}Timeout` → `deletion.node…TimeoutSeconds`.
pub fn deletion_timeouts(ctx: &Ctx, holder: &mut Object, path: &str) -> Result<(), ConversionError> {
    deletion_timeouts_at(ctx, holder, path, &["deletion"])
}

/// As [`deletion_timeouts`], into `holder[at…]` (a KubeadmControlPlaneTemplate's machine
/// template has them under `spec.deletion`).
pub fn deletion_timeouts_at(
    ctx: &Ctx,
    holder: &mut Object,
    path: &str,
    at: &[&str],
) -> Result<(), ConversionError> {
    for (from, to) in [
        ("nodeDrainTimeout", "nodeDrainTimeoutSeconds"),
        ("nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds"),
        ("nodeDeletionTimeout", "nodeDeletionTimeoutSeconds"),
    ] {
        if let Some(seconds) = ctx.take_seconds(holder, from, path)? {
            let mut keys = at.to_vec();
            keys.push(to);
            put(holder, &keys, seconds);
        }
    }
    Ok(())
}
