//! Dependency processing like Helm v4.2.3's `ProcessDependencies`: match `dependencies:` to
//! loaded subcharts (aliases make renamed copies), disable by `tags`/`condition`, then apply
//! `import-values` bottom-up, which replaces each chart's defaults with the merged tree of
//! its own and its subcharts' defaults.

use std::collections::BTreeMap;

use crate::chart::coalesce::{
    ChartValues, coalesce_values, deep_copy, merge_tables, new_table, path_table, path_to_map, path_value,
    table,
};
use crate::chart::metadata::Dependency;
use crate::chart::{Chart, values};
use crate::go::value::frozen::Frozen;
use crate::go::value::{MapKind, Value};
use std::sync::Arc;

/// The chart tree with values ready to render: enabled subcharts only, processed defaults.
pub struct Processed<'c> {
    pub tree: ChartValues<'c>,
    /// Per chart path (`root`, `root/charts/sub`): the dependencies `.Chart.Dependencies` lists.
    pub dependencies: BTreeMap<String, Vec<Dependency>>,
}

/// Builds the processed tree for `chart` and the user's values.
pub fn process<'c>(chart: &'c Chart, user: &Value) -> Result<Processed<'c>, values::ValuesError> {
    let mut dependencies = BTreeMap::new();
    let mut tree = build(chart, chart.name().to_string())?;
    enable(&mut tree, user, "", chart.name(), &mut dependencies);
    import_values(&mut tree, chart.name(), &mut dependencies);
    Ok(Processed { tree, dependencies })
}

/// The full tree with every declared dependency that is present (aliases as copies).
fn build(chart: &Chart, name: String) -> Result<ChartValues<'_>, values::ValuesError> {
    let defaults = values::chart_defaults(chart)?;
    let declared = &chart.metadata.dependencies;
    let mut children = Vec::new();
    // Loaded charts no requirement asks for are kept as they are.
    for sub in &chart.dependencies {
        let requested = declared
            .iter()
            .any(|d| d.name == sub.name() && version_matches(&d.version, sub));
        if !requested {
            children.push(build(sub, sub.name().to_string())?);
        }
    }
    for dep in declared {
        if let Some(sub) = chart
            .dependencies
            .iter()
            .find(|c| c.name() == dep.name && version_matches(&dep.version, c))
        {
            let alias = if dep.alias.is_empty() {
                dep.name.clone()
            } else {
                dep.alias.clone()
            };
            children.push(build(sub, alias)?);
        }
    }
    Ok(ChartValues {
        chart,
        name,
        defaults,
        children,
    })
}

/// Whether a loaded chart satisfies a requirement's version range.
/// Helm's `IsCompatibleRange`: Masterminds constraint matching; anything unparsable is no match.
fn version_matches(range: &str, chart: &Chart) -> bool {
    crate::template::funcs::semver::constraint_matches(range, &chart.metadata.version).unwrap_or(false)
}

/// Disables dependencies by tags and conditions, recursively, pruning the tree.
fn enable(
    node: &mut ChartValues<'_>,
    user: &Value,
    path: &str,
    chart_path: &str,
    out: &mut BTreeMap<String, Vec<Dependency>>,
) {
    let mut deps: Vec<Dependency> = node
        .chart
        .metadata
        .dependencies
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if !d.alias.is_empty() {
                d.name = d.alias.clone();
            }
            d.enabled = true;
            d
        })
        .collect();
    let cvals = coalesce_values(node, user, false);
    apply_tags(&mut deps, &cvals);
    apply_conditions(&mut deps, &cvals, path);
    let disabled: Vec<String> = deps
        .iter()
        .filter(|d| !d.enabled)
        .map(|d| d.name.clone())
        .collect();
    node.children.retain(|c| !disabled.contains(&c.name));
    deps.retain(|d| d.enabled);
    for child in &mut node.children {
        let sub_path = format!("{path}{}.", child.name);
        let sub_chart_path = format!("{chart_path}/charts/{}", child.name);
        enable(child, &cvals, &sub_path, &sub_chart_path, out);
    }
    out.insert(chart_path.to_string(), deps);
}

/// `tags`: disabled only if no listed tag is true and at least one is false.
fn apply_tags(deps: &mut [Dependency], cvals: &Value) {
    let Some(tags) = path_table(cvals, "tags") else {
        return;
    };
    let Some(tags) = table(&tags).map(|t| t.snapshot()) else {
        return;
    };
    for dep in deps {
        let (mut has_true, mut has_false) = (false, false);
        for tag in &dep.tags {
            match tags.iter().find(|(k, _)| k == tag).map(|(_, v)| v) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                _ => {}
            }
        }
        dep.enabled = has_true || !has_false;
    }
}

/// `condition`: the first comma-separated path that resolves to a bool decides.
fn apply_conditions(deps: &mut [Dependency], cvals: &Value, path: &str) {
    for dep in deps {
        for cond in dep.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(cvals, &format!("{path}{cond}")) {
                dep.enabled = b;
                break;
            }
        }
    }
}

/// `import-values`, bottom-up; rewrites each chart's defaults.
fn import_values(
    node: &mut ChartValues<'_>,
    chart_path: &str,
    deps_out: &mut BTreeMap<String, Vec<Dependency>>,
) {
    for child in &mut node.children {
        let sub_path = format!("{chart_path}/charts/{}", child.name);
        import_values(child, &sub_path, deps_out);
    }
    let Some(deps) = deps_out.get_mut(chart_path) else {
        return;
    };
    if node.chart.metadata.dependencies.is_empty() {
        return;
    }
    let cvals = coalesce_values(node, &new_table(), true);
    let imported = new_table();
    for dep in deps.iter_mut() {
        let mut rewritten = Vec::new();
        for iv in &dep.import_values {
            let (child, parent) = match &iv.thaw() {
                Value::String(s) => (format!("exports.{s}"), ".".to_string()),
                Value::Map(m) => {
                    let get = |k: &str| {
                        m.get(k)
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    };
                    (get("child"), get("parent"))
                }
                _ => continue,
            };
            rewritten.push(Frozen::Map {
                kind: MapKind::String,
                nil: false,
                entries: Arc::from(vec![
                    ("child".to_string(), Frozen::String(child.as_str().into())),
                    ("parent".to_string(), Frozen::String(parent.as_str().into())),
                ]),
            });
            if let Some(table) = path_table(&cvals, &format!("{}.{child}", dep.name)) {
                merge_tables(&imported, &path_to_map(&parent, deep_copy(&table)));
            }
        }
        dep.import_values = rewritten;
    }
    let merged = deep_copy(&cvals);
    merge_tables(&merged, &imported);
    node.defaults = merged;
}
