//! Coalescing values like Helm v4.2.3: values coming from above (the user's at the root) over
//! a chart's defaults, level by level, each subchart's values taken from its parent's table
//! under the subchart's name (alias), globals flowing down.
//!
//! Two modes share one walk. *Coalesce* (rendering, and deciding conditions) treats nulls as
//! deletions: a null coming from above deletes the key; a chart's table copied where nothing
//! came from above loses every nested null (so defaults below survive); a chart's table for a
//! subchart merged into a table that did come from above keeps its nulls, which then delete
//! the subchart's defaults. *Merge* (dependency processing, which folds every chart's values
//! over its subcharts' defaults) keeps every null.
//!
//! Maps are shared by reference where Helm's walk shares them (globals are copied one level
//! deep), so a render sees the same values even where Helm's sharing shows through.

use std::collections::BTreeMap;

use crate::Chart;
use capstan_go::fmt::sprintf;
use capstan_go::value::{Map, MapKind, Value};

pub const GLOBAL_KEY: &str = "global";

/// Values that cannot be coalesced: where a subchart needs a table, the values hold
/// something else (`sub: null`, `sub: 1`). The message is Helm's.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CoalesceError(pub String);

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
        Value::List(l) => Value::List(capstan_go::value::List {
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

/// A chart together with its default values, as the coalescing walk needs it.
pub struct ChartValues<'c> {
    pub chart: &'c Chart,
    /// The name the chart is known by in its parent (alias or name).
    pub name: String,
    pub defaults: Value,
    pub children: Vec<ChartValues<'c>>,
}

/// Helm's `CoalesceValues` (`merge` false) and `MergeValues` (`merge` true): a copy of
/// `incoming` with the chart tree's defaults coalesced under it.
pub fn coalesce_values(
    chart: &ChartValues<'_>,
    incoming: &Value,
    merge: bool,
) -> Result<Value, CoalesceError> {
    let dest = match table(incoming) {
        Some(_) => deep_copy(incoming),
        None => new_table(),
    };
    let Some(dest_map) = table(&dest) else {
        return Ok(dest);
    };
    coalesce(chart, dest_map, "", merge)?;
    Ok(dest)
}

fn coalesce(chart: &ChartValues<'_>, dest: &Map, prefix: &str, merge: bool) -> Result<(), CoalesceError> {
    coalesce_own(chart, dest, merge);
    coalesce_children(chart, dest, prefix, merge)
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Each subchart's table in `dest` (made when missing) gets the parent's globals, then the
/// subchart's own defaults and its subcharts.
fn coalesce_children(
    chart: &ChartValues<'_>,
    dest: &Map,
    prefix: &str,
    merge: bool,
) -> Result<(), CoalesceError> {
    for sub in &chart.children {
        let sub_dest = match dest.get(&sub.name) {
            None => {
                let t = new_table();
                dest.insert(sub.name.clone(), t.clone());
                t
            }
            Some(v) if table(&v).is_some() => v,
            Some(other) => {
                return Err(CoalesceError(sprintf(
                    "type mismatch on %s: %t",
                    &[Value::from(sub.name.as_str()), other],
                )));
            }
        };
        let Some(sub_map) = table(&sub_dest) else {
            continue;
        };
        let sub_prefix = concat_prefix(prefix, &chart.chart.metadata.name);
        coalesce_globals(sub_map, dest);
        coalesce(sub, sub_map, &sub_prefix, merge)?;
    }
    Ok(())
}

/// The parent's globals into the subchart's (parent keys winning). Tables are copied one
/// level deep, as Helm does: deeper tables stay shared with the parent's globals.
fn coalesce_globals(dest: &Map, src: &Map) {
    let dg = match dest.get(GLOBAL_KEY) {
        None => new_table(),
        Some(v) if table(&v).is_some() => v,
        Some(_) => return,
    };
    let sg = match src.get(GLOBAL_KEY) {
        None => new_table(),
        Some(v) if table(&v).is_some() => v,
        Some(_) => return,
    };
    let (Some(dg_map), Some(sg_map)) = (table(&dg), table(&sg)) else {
        return;
    };
    for (key, val) in sg_map.snapshot() {
        if let Some(val_map) = table(&val) {
            let copy = Value::Map(Map::new(val_map.kind, val_map.entries.borrow().clone()));
            match dg_map.get(&key) {
                None => dg_map.insert(key, copy),
                Some(existing) => {
                    if let (Some(copy_map), Some(existing_map)) = (table(&copy), table(&existing)) {
                        coalesce_tables(copy_map, existing_map, true);
                        dg_map.insert(key, copy);
                    }
                }
            }
        } else if dg_map.get(&key).is_some_and(|dv| table(&dv).is_some()) {
            // A table in the destination is not replaced by a scalar.
        } else {
            dg_map.insert(key, val);
        }
    }
    dest.insert(GLOBAL_KEY, dg);
}

/// A chart's own defaults into `dest`, where what came from above wins.
fn coalesce_own(chart: &ChartValues<'_>, dest: &Map, merge: bool) {
    let defaults = deep_copy(&chart.defaults);
    let Some(defaults_map) = table(&defaults) else {
        return;
    };
    for (key, val) in defaults_map.snapshot() {
        match dest.get(&key) {
            Some(Value::Nil) if !merge => {
                dest.entries.borrow_mut().remove(&key);
            }
            Some(incoming) => {
                let (Some(incoming_map), Some(val_map)) = (table(&incoming), table(&val)) else {
                    // A scalar or list from above wins; so does a table over a chart's scalar.
                    continue;
                };
                // A chart's table for one of its subcharts keeps its nulls: they are meant
                // to delete the subchart's defaults.
                let keep_nulls = merge || chart.children.iter().any(|c| c.name == key);
                if !keep_nulls {
                    clean_nils(val_map);
                }
                coalesce_tables(incoming_map, val_map, keep_nulls);
            }
            None => {
                if !merge {
                    if val.is_nil() {
                        continue;
                    }
                    if let Some(val_map) = table(&val) {
                        clean_nils(val_map);
                    }
                }
                dest.insert(key, val);
            }
        }
    }
}

/// Helm's table coalescing: fills `dst` from `src`, `dst` winning. A null in `dst` deletes
/// the key when not merging and `src` had a value there; otherwise it stays. `src` is
/// changed too (it takes `dst`'s nulls), as in Helm, where that shows through shared maps.
fn coalesce_tables(dst: &Map, src: &Map, merge: bool) {
    let src_had_value: Vec<String> = src
        .entries
        .borrow()
        .iter()
        .filter(|(_, v)| !v.is_nil())
        .map(|(k, _)| k.clone())
        .collect();
    for (key, val) in dst.snapshot() {
        if val.is_nil() {
            src.insert(key, Value::Nil);
        }
    }
    for (key, val) in src.snapshot() {
        match dst.get(&key) {
            Some(Value::Nil) if !merge && src_had_value.contains(&key) => {
                dst.entries.borrow_mut().remove(&key);
            }
            None => dst.insert(key, val),
            Some(dv) => {
                if let (Some(val_map), Some(dv_map)) = (table(&val), table(&dv)) {
                    coalesce_tables(dv_map, val_map, merge);
                }
                // Otherwise `dst` keeps what it has (a table is never replaced by a
                // non-table, nor the other way round).
            }
        }
    }
}

/// Removes every null from a table and the tables inside it (not inside lists).
fn clean_nils(m: &Map) {
    let mut entries = m.entries.borrow_mut();
    entries.retain(|_, v| !v.is_nil());
    for v in entries.values() {
        if let Some(sub) = table(v) {
            clean_nils(sub);
        }
    }
}

/// A deep copy without null entries in maps.
pub fn without_nils(v: &Value) -> Value {
    let copy = deep_copy(v);
    if let Some(m) = table(&copy) {
        clean_nils(m);
    }
    copy
}

/// Helm's `MergeTables`: `src` fills `dst`, `dst` wins, nulls kept.
pub fn merge_tables(dst: &Value, src: &Value) {
    if let (Some(dst_map), Some(src_map)) = (table(dst), table(src)) {
        coalesce_tables(dst_map, src_map, true);
    }
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

/// Go's `pathToMap`: `a.b` and `v` → `{a: {b: v}}`; "." → `v` itself. Every segment counts,
/// empty ones too (`a..b`).
pub fn path_to_map(path: &str, v: Value) -> Value {
    if path == "." {
        return v;
    }
    let mut result = v;
    for part in path.split('.').rev() {
        result = Value::map(BTreeMap::from([(part.to_string(), result)]));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json(&serde_json::from_str(text).expect("valid JSON"))
    }

    fn to_json(v: &Value) -> String {
        capstan_encoding::json::marshal(v).expect("encodable")
    }

    /// `coalesce_tables` as a table of (dst, src, merge) → dst afterwards.
    #[test]
    fn table_coalescing_follows_helms_null_rules() {
        let cases = [
            // dst wins; src fills.
            (r#"{"a":1}"#, r#"{"a":2,"b":3}"#, false, r#"{"a":1,"b":3}"#),
            // A null from above deletes a key src holds; it stays where src has none.
            (r#"{"a":null,"c":null}"#, r#"{"a":2}"#, false, r#"{"c":null}"#),
            // Merging keeps nulls.
            (r#"{"a":null}"#, r#"{"a":2}"#, true, r#"{"a":null}"#),
            // A null in src is copied where dst lacks the key.
            (r#"{}"#, r#"{"a":null}"#, false, r#"{"a":null}"#),
            // Tables merge; a table is not replaced by a scalar nor a scalar by a table.
            (
                r#"{"t":{"x":1},"s":1}"#,
                r#"{"t":{"y":2},"s":{"z":1}}"#,
                false,
                r#"{"s":1,"t":{"x":1,"y":2}}"#,
            ),
            (r#"{"t":{"x":1}}"#, r#"{"t":5}"#, false, r#"{"t":{"x":1}}"#),
        ];
        for (dst, src, merge, want) in cases {
            let d = json(dst);
            let s = json(src);
            coalesce_tables(table(&d).unwrap(), table(&s).unwrap(), merge);
            assert_eq!(to_json(&d), want, "{dst} <- {src} (merge {merge})");
        }
    }

    #[test]
    fn nulls_are_cleaned_from_nested_tables_but_not_lists() {
        let v = json(r#"{"a":null,"b":{"c":null,"d":[null]}}"#);
        assert_eq!(to_json(&without_nils(&v)), r#"{"b":{"d":[null]}}"#);
    }

    #[test]
    fn path_to_map_keeps_empty_segments() {
        assert_eq!(to_json(&path_to_map("a..b", json("1"))), r#"{"a":{"":{"b":1}}}"#);
        assert_eq!(to_json(&path_to_map(".", json("1"))), "1");
    }
}
