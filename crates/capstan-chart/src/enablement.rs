//! Reusing dependency processing between renders of a compiled chart.
//!
//! Which subcharts a render enables depends on the user's values only through a few paths:
//! each dependency's `condition` paths, `tags` and `global`; whether it fails (`type mismatch`)
//! on the shape of the values at each subchart's path (a table or not). The rest of dependency
//! processing — aliases, `import-values`, the defaults of every chart — depends only on the
//! chart and that enablement. So a [`Processed`] tree, frozen, serves every later render whose
//! user values agree with it on those paths ([`Probes::key`]).

use std::collections::BTreeMap;

use crate::Chart;
use crate::coalesce::{ChartValues, GLOBAL_KEY, table};
use crate::dependencies::Processed;
use crate::metadata::Dependency;
use capstan_go::value::Value;
use capstan_go::value::frozen::Frozen;

/// The paths of user values that can change which subcharts are enabled.
#[derive(Debug, Clone)]
pub struct Probes {
    /// Paths whose value counts whole.
    paths: Vec<Vec<String>>,
    /// Paths (of subcharts) where only "a table" or the value that is not one counts.
    shapes: Vec<Vec<String>>,
}

/// The user values at the probes: renders with equal keys enable the same subcharts.
#[derive(Debug, Clone, PartialEq)]
pub struct Key(Vec<Option<Frozen>>);

impl Probes {
    /// `tags`, `global` and every condition path of every dependency in the chart tree
    /// (as dependency processing resolves them: prefixed with the parent's alias path).
    pub fn of(chart: &Chart) -> Probes {
        let mut paths = vec![vec!["tags".to_string()], vec![GLOBAL_KEY.to_string()]];
        let mut shapes = Vec::new();
        collect_conditions(chart, &[], &mut paths, &mut shapes);
        paths.sort();
        paths.dedup();
        shapes.sort();
        shapes.dedup();
        Probes { paths, shapes }
    }

    /// The user values at each probe and at each prefix of it. A table on the way only
    /// counts as "a table" (its other keys cannot change the value at the path); the value
    /// at the probe counts whole. `None` when the values hold something that cannot be
    /// frozen (never from values files).
    pub fn key(&self, user: &Value) -> Option<Key> {
        let mut parts = Vec::new();
        let probes = self
            .paths
            .iter()
            .map(|p| (p, true))
            .chain(self.shapes.iter().map(|p| (p, false)));
        for (path, whole) in probes {
            let mut current = Some(user.clone());
            for (depth, part) in path.iter().enumerate() {
                let next = current.as_ref().and_then(|v| table(v)).and_then(|m| m.get(part));
                let last = whole && depth + 1 == path.len();
                parts.push(match &next {
                    None => None,
                    Some(v) if !last && table(v).is_some() => Some(Frozen::Bool(true)),
                    Some(v) => Some(Frozen::freeze(v).ok()?),
                });
                current = next;
            }
        }
        Some(Key(parts))
    }
}

fn collect_conditions(
    chart: &Chart,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
    shapes: &mut Vec<Vec<String>>,
) {
    for dep in &chart.metadata.dependencies {
        for cond in dep.condition.trim().split(',').filter(|c| !c.is_empty()) {
            let mut path = prefix.to_vec();
            path.extend(cond.split('.').map(str::to_string));
            out.push(path);
        }
    }
    // Subcharts are known by their alias where one is declared, by their name otherwise;
    // collecting under every name a subchart may have is a superset, which is enough.
    for sub in &chart.dependencies {
        let names = chart
            .metadata
            .dependencies
            .iter()
            .filter(|d| d.name == sub.name() && !d.alias.is_empty())
            .map(|d| d.alias.clone())
            .chain([sub.name().to_string()]);
        for name in names.collect::<Vec<_>>() {
            let mut sub_prefix = prefix.to_vec();
            sub_prefix.push(name);
            shapes.push(sub_prefix.clone());
            collect_conditions(sub, &sub_prefix, out, shapes);
        }
    }
}

/// A [`Processed`] tree that can be kept across renders and threads.
#[derive(Debug, Clone)]
pub struct FrozenProcessed {
    tree: FrozenNode,
    dependencies: BTreeMap<String, Vec<Dependency>>,
}

#[derive(Debug, Clone)]
struct FrozenNode {
    /// Index of this node's chart in its parent chart's `dependencies`.
    index: usize,
    name: String,
    defaults: Frozen,
    children: Vec<FrozenNode>,
}

impl FrozenProcessed {
    /// `None` when a node's chart is not one of its parent's loaded subcharts, or its
    /// defaults hold a Go object; neither happens to trees built by dependency processing.
    pub fn freeze(processed: &Processed<'_>) -> Option<FrozenProcessed> {
        Some(FrozenProcessed {
            tree: freeze_node(&processed.tree, 0)?,
            dependencies: processed.dependencies.clone(),
        })
    }

    /// The tree again, over `chart` (the chart it was frozen from), with fresh values.
    pub fn thaw<'c>(&self, chart: &'c Chart) -> Option<Processed<'c>> {
        Some(Processed {
            tree: thaw_node(&self.tree, chart)?,
            dependencies: self.dependencies.clone(),
        })
    }
}

fn freeze_node(node: &ChartValues<'_>, index: usize) -> Option<FrozenNode> {
    let children = node
        .children
        .iter()
        .map(|child| {
            let index = node
                .chart
                .dependencies
                .iter()
                .position(|sub| std::ptr::eq(sub, child.chart))?;
            freeze_node(child, index)
        })
        .collect::<Option<_>>()?;
    Some(FrozenNode {
        index,
        name: node.name.clone(),
        defaults: Frozen::freeze(&node.defaults).ok()?,
        children,
    })
}

fn thaw_node<'c>(node: &FrozenNode, chart: &'c Chart) -> Option<ChartValues<'c>> {
    Some(ChartValues {
        chart,
        name: node.name.clone(),
        defaults: node.defaults.thaw(),
        children: node
            .children
            .iter()
            .map(|child| thaw_node(child, chart.dependencies.get(child.index)?))
            .collect::<Option<_>>()?,
    })
}
