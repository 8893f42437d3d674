//! Coalescing values like Helm v4.2.3: user values over chart defaults, subchart values
//! from the parent's table of the subchart's name, globals flowing down.
//!
//! Nulls: a user null deletes the key (also a key only the defaults have); a null in a
//! chart's defaults is dropped and never deletes anything (`merge` keeps nulls, for
//! dependency processing).

use std::collections::BTreeMap;

use crate::chart::Chart;
use crate::go::value::{Map, MapKind, Value};

pub const GLOBAL_KEY: &str = "global";

/// A deep copy of a value tree (maps get new identities).
pub fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::Map(Map::new(
            m.kind,
            m.entries
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), deep_copy(v)))
                .collect(),
        )),
        Value::List(l) => Value::List(crate::go::value::List {
            kind: l.kind,
            items: std::rc::Rc::new(l.items.iter().map(deep_copy).collect()),
            nil: l.nil,
        }),
        other => other.clone(),
    }
}

/// Go's `istable`: a `map[string]interface{}`.
pub fn table(v: &Value) -> Option<&Map> {
    match v {
        Value::Map(m) if m.kind != MapKind::String => Some(m),
        _ => None,
    }
}

pub fn new_table() -> Value {
    Value::map(BTreeMap::new())
}

/// `CoalesceValues`: the chart's defaults (recursively with its subcharts) under `user`.
/// `defaults_of` gives a chart's own default values (already parsed).
pub fn coalesce_values(chart: &ChartValues<'_>, user: &Value, merge: bool) -> Value {
    let dest = match table(user) {
        Some(_) => deep_copy(user),
        None => new_table(),
    };
    coalesce(chart, &dest, "", merge);
    dest
}

/// A chart together with its default values, as the coalescing walk needs it.
pub struct ChartValues<'c> {
    pub chart: &'c Chart,
    /// The name the chart is known by in its parent (alias or name).
    pub name: String,
    pub defaults: Value,
    pub children: Vec<ChartValues<'c>>,
}

fn coalesce(chart: &ChartValues<'_>, dest: &Value, prefix: &str, merge: bool) {
    coalesce_own(chart, dest, prefix, merge);
    coalesce_deps(chart, dest, prefix, merge);
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

fn coalesce_deps(chart: &ChartValues<'_>, dest: &Value, prefix: &str, merge: bool) {
    let Some(dest_map) = table(dest) else { return };
    for sub in &chart.children {
        let existing = dest_map.get(&sub.name);
        let sub_dest = match existing {
            None => {
                let t = new_table();
                dest_map.insert(sub.name.clone(), t.clone());
                t
            }
            Some(v) if table(&v).is_some() => v,
            // Helm errors with "type mismatch"; keep going without the subchart's values.
            Some(_) => continue,
        };
        let sub_prefix = concat_prefix(prefix, &chart.chart.metadata.name);
        coalesce_globals(&sub_dest, dest);
        coalesce(sub, &sub_dest, &sub_prefix, merge);
    }
}

/// Copies the parent's globals into the subchart's, parent keys winning (top-down).
fn coalesce_globals(dest: &Value, src: &Value) {
    let (Some(dest_map), Some(src_map)) = (table(dest), table(src)) else {
        return;
    };
    let dg = match dest_map.get(GLOBAL_KEY) {
        None => new_table(),
        Some(v) if table(&v).is_some() => v,
        Some(_) => return,
    };
    let sg = match src_map.get(GLOBAL_KEY) {
        None => new_table(),
        Some(v) if table(&v).is_some() => v,
        Some(_) => return,
    };
    let (Some(dg_map), Some(sg_map)) = (table(&dg), table(&sg)) else {
        return;
    };
    for (key, val) in sg_map.snapshot() {
        if table(&val).is_some() {
            let copy = deep_copy(&val);
            match dg_map.get(&key) {
                None => dg_map.insert(key, copy),
                Some(dv) if table(&dv).is_some() => {
                    coalesce_tables(&copy, &dv, true);
                    dg_map.insert(key, copy);
                }
                Some(_) => {}
            }
        } else if dg_map.get(&key).is_some_and(|dv| table(&dv).is_some()) {
            // A table in the destination is not replaced by a scalar.
        } else {
            dg_map.insert(key, val);
        }
    }
    dest_map.insert(GLOBAL_KEY, dg);
}

/// Merges a chart's own defaults into `dest` (user values win).
fn coalesce_own(chart: &ChartValues<'_>, dest: &Value, _prefix: &str, merge: bool) {
    let Some(dest_map) = table(dest) else { return };
    let defaults = if merge {
        deep_copy(&chart.defaults)
    } else {
        without_nils(&chart.defaults)
    };
    let Some(defaults_map) = table(&defaults) else {
        return;
    };
    for (key, val) in defaults_map.snapshot() {
        match dest_map.get(&key) {
            Some(Value::Nil) if !merge => {
                dest_map.entries.borrow_mut().remove(&key);
            }
            Some(value) => {
                if let (Some(_), Some(_)) = (table(&value), table(&val)) {
                    let is_child = chart.children.iter().any(|c| c.name == key);
                    coalesce_tables(&value, &val, merge || is_child);
                }
            }
            None => dest_map.insert(key, val),
        }
    }
}

/// Go's `coalesceTablesFullKey`: fills `dst` from `src`; `dst` wins.
pub fn coalesce_tables(dst: &Value, src: &Value, merge: bool) {
    let (Some(dst_map), Some(src_map)) = (table(dst), table(src)) else {
        return;
    };
    for (key, val) in src_map.snapshot() {
        match dst_map.get(&key) {
            // A user null deletes a key only where the defaults had a value; a null for a
            // key the defaults lack stays (verified: `{a: {x: null}}` over `a: {kk: 1}`
            // renders `{"a":{"kk":1,"x":null}}`).
            Some(Value::Nil) if !merge && !val.is_nil() => {
                dst_map.entries.borrow_mut().remove(&key);
            }
            Some(Value::Nil) => {}
            None => dst_map.insert(key, val),
            Some(dv) => {
                if table(&val).is_some() && table(&dv).is_some() {
                    coalesce_tables(&dv, &val, merge);
                }
            }
        }
    }
}

/// A deep copy without null entries in maps (Helm cleans nulls out of chart defaults).
pub fn without_nils(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::Map(Map::new(
            m.kind,
            m.entries
                .borrow()
                .iter()
                .filter(|(_, v)| !v.is_nil())
                .map(|(k, v)| (k.clone(), without_nils(v)))
                .collect(),
        )),
        other => deep_copy(other),
    }
}

/// `MergeTables`/`CoalesceTables` for import-values: `dst` wins, nulls kept (merge).
pub fn merge_tables(dst: &Value, src: &Value) {
    coalesce_tables(dst, src, true);
}

/// A value at a dotted path (`a.b.c`), like Helm's `Values.PathValue`.
pub fn path_value(values: &Value, path: &str) -> Option<Value> {
    let mut current = values.clone();
    for part in path.split('.') {
        let next = table(&current)?.get(part)?;
        current = next;
    }
    Some(current)
}

/// A table at a dotted path (`Values.Table`).
pub fn path_table(values: &Value, path: &str) -> Option<Value> {
    path_value(values, path).filter(|v| table(v).is_some())
}

/// Go's `pathToMap`: `a.b` and `v` → `{a: {b: v}}`; "." → `v` itself.
pub fn path_to_map(path: &str, v: Value) -> Value {
    if path == "." {
        return v;
    }
    let mut result = v;
    for part in path.split('.').filter(|p| !p.is_empty()).rev() {
        result = Value::map(BTreeMap::from([(part.to_string(), result)]));
    }
    result
}
