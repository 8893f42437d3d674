//! Dependency processing like Helm v4.2.3's `ProcessDependencies`: match `dependencies:` to
//! loaded subcharts (aliases make renamed copies), disable by `tags`/`condition` on the
//! values coalesced so far, then, bottom-up, replace each chart's defaults with its own values
//! merged over its subcharts' (nulls kept: a chart's null wins over the default under it)
//! together with its `import-values`.
//!
//! A chart that declares no dependencies is left as loaded, subcharts included: Helm
//! processes neither it nor anything below it (only `import-values` further down).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::coalesce::{
    ChartValues, CoalesceError, coalesce_values, deep_copy, merge_tables, new_table, path_table, path_to_map,
    path_value, table,
};
use crate::metadata::Dependency;
use crate::{Chart, values};
use capstan_go::fmt::sprintf;
use capstan_go::value::frozen::Frozen;
use capstan_go::value::{MapKind, Value};

/// Why dependency processing failed; the message is Helm's.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProcessError {
    #[error(transparent)]
    Values(#[from] values::ValuesError),
    #[error(transparent)]
    Coalesce(#[from] CoalesceError),
}

/// The chart tree with values ready to render: enabled subcharts only, processed defaults.
pub struct Processed<'c> {
    pub tree: ChartValues<'c>,
    /// Per chart path (`root`, `root/charts/sub`): the dependencies `.Chart.Dependencies` lists.
    pub dependencies: BTreeMap<String, Vec<Dependency>>,
}

/// Builds the processed tree for `chart` and the user's values.
pub fn process<'c>(chart: &'c Chart, user: &Value) -> Result<Processed<'c>, ProcessError> {
    let mut dependencies = BTreeMap::new();
    let mut tree = loaded(chart, chart.name().to_string())?;
    enable(&mut tree, user, "", chart.name(), &mut dependencies)?;
    import_values(&mut tree, chart.name(), &mut dependencies)?;
    Ok(Processed { tree, dependencies })
}

/// A chart as loaded: every subchart under its own name, defaults as written.
fn loaded(chart: &Chart, name: String) -> Result<ChartValues<'_>, values::ValuesError> {
    Ok(ChartValues {
        chart,
        name,
        defaults: values::chart_defaults(chart)?,
        children: chart
            .dependencies
            .iter()
            .map(|sub| loaded(sub, sub.name().to_string()))
            .collect::<Result<_, _>>()?,
    })
}

/// The subcharts a chart with declared dependencies has: loaded charts no requirement asks
/// for as they are, then one copy per requirement a loaded chart satisfies, named by the
/// alias where there is one.
fn matched_children<'c>(chart: &'c Chart) -> Result<Vec<ChartValues<'c>>, values::ValuesError> {
    let declared = &chart.metadata.dependencies;
    let mut children = Vec::new();
    for sub in &chart.dependencies {
        let requested = declared
            .iter()
            .any(|d| d.name == sub.name() && version_matches(&d.version, sub));
        if !requested {
            children.push(loaded(sub, sub.name().to_string())?);
        }
    }
    for dep in declared {
        if let Some(sub) = chart
            .dependencies
            .iter()
            .find(|c| c.name() == dep.name && version_matches(&dep.version, c))
        {
            let name = if dep.alias.is_empty() {
                dep.name.clone()
            } else {
                dep.alias.clone()
            };
            children.push(loaded(sub, name)?);
        }
    }
    Ok(children)
}

/// Whether a loaded chart satisfies a requirement's version range.
/// Helm's `IsCompatibleRange`: Masterminds constraint matching; anything unparsable is no match.
fn version_matches(range: &str, chart: &Chart) -> bool {
    capstan_template::funcs::semver::constraint_matches(range, &chart.metadata.version).unwrap_or(false)
}

/// Disables dependencies by tags and conditions on the values coalesced so far
/// (`incoming`: the user's at the root, the parent's coalesced values below), recursively,
/// pruning the tree.
fn enable(
    node: &mut ChartValues<'_>,
    incoming: &Value,
    path: &str,
    chart_path: &str,
    out: &mut BTreeMap<String, Vec<Dependency>>,
) -> Result<(), ProcessError> {
    if node.chart.metadata.dependencies.is_empty() {
        record_unprocessed(node, chart_path, out);
        return Ok(());
    }
    node.children = matched_children(node.chart)?;
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
    let cvals = coalesce_values(node, incoming, false)?;
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
        enable(child, &cvals, &sub_path, &sub_chart_path, out)?;
    }
    out.insert(chart_path.to_string(), deps);
    Ok(())
}

/// A chart Helm does not process (it declares no dependencies): its subcharts and theirs keep
/// their loaded names and their requirements as written.
fn record_unprocessed(node: &ChartValues<'_>, chart_path: &str, out: &mut BTreeMap<String, Vec<Dependency>>) {
    out.insert(chart_path.to_string(), node.chart.metadata.dependencies.clone());
    for child in &node.children {
        record_unprocessed(child, &format!("{chart_path}/charts/{}", child.name), out);
    }
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

/// Bottom-up: each chart's defaults become its own values merged over its subcharts' (nulls
/// kept), with its `import-values` merged under them.
fn import_values(
    node: &mut ChartValues<'_>,
    chart_path: &str,
    deps_out: &mut BTreeMap<String, Vec<Dependency>>,
) -> Result<(), CoalesceError> {
    for child in &mut node.children {
        let sub_path = format!("{chart_path}/charts/{}", child.name);
        import_values(child, &sub_path, deps_out)?;
    }
    let Some(deps) = deps_out.get_mut(chart_path) else {
        return Ok(());
    };
    if deps.is_empty() {
        return Ok(());
    }
    let merged = coalesce_values(node, &new_table(), true)?;
    let imported = new_table();
    for dep in deps.iter_mut() {
        let mut rewritten = Vec::new();
        for iv in &dep.import_values {
            let (child, parent) = match &iv.thaw() {
                Value::String(s) => (format!("exports.{s}"), ".".to_string()),
                v @ Value::Map(_) if table(v).is_some() => {
                    let field = |k: &str| {
                        let value = table(v).and_then(|m| m.get(k)).unwrap_or(Value::Nil);
                        sprintf("%v", &[value])
                    };
                    (field("child"), field("parent"))
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
            let Some(found) = path_table(&merged, &format!("{}.{child}", dep.name)) else {
                continue;
            };
            // The found table itself, not a copy: Helm merges it in place.
            let source = path_to_map(&parent, found);
            merge_tables(&imported, &source);
        }
        dep.import_values = rewritten;
    }
    let defaults = deep_copy(&merged);
    merge_tables(&defaults, &imported);
    node.defaults = defaults;
    Ok(())
}
