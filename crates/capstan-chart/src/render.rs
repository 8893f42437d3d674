//! Rendering a chart like Helm v4.2.3's engine: every template of every enabled chart in one
//! template set named by full path, the built-in objects per chart, Helm's parse/execution
//! order, and `<no value>` removal per file.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::coalesce::{ChartValues, coalesce_values};
use crate::dependencies::{self, Processed};
use crate::enablement::{FrozenProcessed, Key, Probes};
use crate::metadata::{Dependency, Metadata};
use crate::objects::{Capabilities, Files, KubeVersion};
use crate::{Chart, checks, schema, values};
use capstan_go::value::{Map, MapKind, Value};
use capstan_template::exec::NO_VALUE;
use capstan_template::exec::SharedTrees;
use capstan_template::funcs::FuncEnv;
use capstan_template::{FuncMap, MissingKey, Templates};

/// Release and cluster facts a render sees (`helm template`'s flags).
#[derive(Clone)]
pub struct RenderOptions {
    pub release_name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_install: bool,
    pub is_upgrade: bool,
    pub kube_version: KubeVersion,
    pub api_versions: Vec<String>,
    /// `--strict`: missing map keys are errors.
    pub strict: bool,
    /// Refuse a chart whose `kubeVersion` excludes `kube_version`, as `helm template` does
    /// after validating the values and before rendering. Off: Helm's engine alone.
    pub check_kube_version: bool,
    pub env: Rc<FuncEnv>,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            release_name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_install: true,
            is_upgrade: false,
            kube_version: KubeVersion::helm_default(),
            api_versions: Vec::new(),
            strict: false,
            check_kube_version: false,
            env: Rc::new(FuncEnv::system()),
        }
    }
}

/// Why a render failed; the message is Helm's.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Values(#[from] values::ValuesError),
    /// Dependency processing failed (a values file, or values that cannot be coalesced).
    #[error(transparent)]
    Dependencies(#[from] dependencies::ProcessError),
    /// The values cannot be coalesced (`type mismatch on sub`).
    #[error(transparent)]
    Coalesce(#[from] crate::coalesce::CoalesceError),
    /// The values do not satisfy a `values.schema.json`.
    #[error(transparent)]
    Schema(#[from] schema::SchemaError),
    /// `helm template`'s refusal of the chart (`kubeVersion`).
    #[error(transparent)]
    Check(#[from] checks::CheckError),
    /// A template error, already in Helm's wording.
    #[error("{0}")]
    Template(String),
}

/// One template to render: its text and the top-level object of its chart.
struct Renderable<'c> {
    data: &'c [u8],
    dot: Map,
    base_path: String,
}

/// What renders of one chart can share, on every thread: the dependency processing of each
/// enablement of subcharts met so far (by the user values that decide it) and the parsed
/// template set of each. Kept by a [`crate::compiled::CompiledChart`].
pub struct RenderCache {
    probes: Probes,
    processed: Mutex<Vec<(Key, Arc<FrozenProcessed>)>>,
    sets: Mutex<HashMap<Vec<String>, SharedTrees>>,
}

/// More enablements than real charts ever see; past it a cache starts over.
const MAX_CACHED: usize = 64;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RenderCache {
    pub fn new(chart: &Chart) -> RenderCache {
        RenderCache {
            probes: Probes::of(chart),
            processed: Mutex::new(Vec::new()),
            sets: Mutex::new(HashMap::new()),
        }
    }

    /// Dependency processing for `user`, reused when an earlier render's values agreed on
    /// every path that decides the enabled subcharts.
    fn process<'c>(&self, chart: &'c Chart, user: &Value) -> Result<Processed<'c>, RenderError> {
        let Some(key) = self.probes.key(user) else {
            return Ok(dependencies::process(chart, user)?);
        };
        let hit = locked(&self.processed)
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, p)| Arc::clone(p));
        if let Some(processed) = hit.and_then(|p| p.thaw(chart)) {
            return Ok(processed);
        }
        let processed = dependencies::process(chart, user)?;
        if let Some(frozen) = FrozenProcessed::freeze(&processed) {
            let mut cached = locked(&self.processed);
            if cached.len() >= MAX_CACHED {
                cached.clear();
            }
            cached.push((key, Arc::new(frozen)));
        }
        Ok(processed)
    }

    fn set(&self, order: &[String]) -> Option<SharedTrees> {
        locked(&self.sets).get(order).cloned()
    }

    fn insert_set(&self, order: &[String], trees: SharedTrees) {
        let mut sets = locked(&self.sets);
        if sets.len() >= MAX_CACHED {
            sets.clear();
        }
        sets.insert(order.to_vec(), trees);
    }
}

/// Renders `chart` with the user's `values`: `{template path → output}` for every non-partial
/// template of the chart and its enabled subcharts, NOTES.txt and empty outputs included.
/// Parses every template; to render a chart many times, use a `CompiledChart`.
pub fn render(
    chart: &Chart,
    user_values: &Value,
    opts: &RenderOptions,
) -> Result<BTreeMap<String, String>, RenderError> {
    render_with(chart, user_values, opts, None)
}

/// [`render`], reusing from `cache` what earlier renders of the same chart prepared, and
/// adding to it.
pub fn render_with(
    chart: &Chart,
    user_values: &Value,
    opts: &RenderOptions,
    cache: Option<&RenderCache>,
) -> Result<BTreeMap<String, String>, RenderError> {
    let processed = match cache {
        Some(cache) => cache.process(chart, user_values)?,
        None => dependencies::process(chart, user_values)?,
    };
    let values = coalesce_values(&processed.tree, user_values, false)?.into_values();
    schema::validate(&processed.tree, &values)?;
    if opts.check_kube_version {
        checks::check_kube_version(chart, &opts.kube_version)?;
    }
    let renderables = renderables(chart, &processed, &values, opts);
    let order = helm_order(renderables.keys());
    let set = template_set(&renderables, &order, opts, cache)?;

    let mut out = BTreeMap::new();
    for name in &order {
        if base_name(name).starts_with('_') {
            continue;
        }
        let r = &renderables[name.as_str()];
        r.dot.insert(
            "Template",
            Value::Map(Map::new(
                MapKind::Values,
                BTreeMap::from([
                    ("Name".to_string(), Value::from(name.as_str())),
                    ("BasePath".to_string(), Value::from(r.base_path.as_str())),
                ]),
            )),
        );
        let text = set
            .execute(name, &Value::Map(r.dot.clone()))
            .map_err(|e| RenderError::Template(e.helm_message()))?;
        // Most outputs hold no `<no value>`: keep them instead of copying.
        let text = if text.contains(NO_VALUE) {
            text.replace(NO_VALUE, "")
        } else {
            text
        };
        out.insert(name.clone(), text);
    }
    Ok(out)
}

/// Processes dependencies and parses the templates for `user_values` into `cache`, without
/// rendering.
pub fn prepare(chart: &Chart, user_values: &Value, cache: &RenderCache) -> Result<(), RenderError> {
    let opts = RenderOptions::default();
    let processed = cache.process(chart, user_values)?;
    let values = coalesce_values(&processed.tree, user_values, false)?.into_values();
    let renderables = renderables(chart, &processed, &values, &opts);
    let order = helm_order(renderables.keys());
    template_set(&renderables, &order, &opts, Some(cache)).map(drop)
}

fn renderables<'c>(
    chart: &'c Chart,
    processed: &Processed<'c>,
    values: &Value,
    opts: &RenderOptions,
) -> BTreeMap<String, Renderable<'c>> {
    let caps = Value::Object(Rc::new(Capabilities::new(
        opts.kube_version.clone(),
        &opts.api_versions,
    )));
    let release = release_object(opts);
    let mut renderables = BTreeMap::new();
    collect(
        processed,
        &processed.tree,
        chart.name(),
        values,
        &caps,
        &release,
        true,
        &mut renderables,
    );
    renderables
}

/// The template set of a render: parsed here in Helm's order, or taken from `parsed` when
/// an earlier render enabled the same templates.
fn template_set(
    renderables: &BTreeMap<String, Renderable<'_>>,
    order: &[String],
    opts: &RenderOptions,
    cache: Option<&RenderCache>,
) -> Result<Templates, RenderError> {
    let funcs = FuncMap::helm_shared(&opts.env);
    let mut set = match cache.and_then(|c| c.set(order)) {
        Some(shared) => Templates::from_shared(funcs, shared),
        None => {
            let mut set = Templates::with_funcs(funcs);
            for name in order {
                let text = String::from_utf8_lossy(renderables[name.as_str()].data);
                set.parse(name, &text)
                    .map_err(|e| RenderError::Template(e.helm_message()))?;
            }
            if let Some(c) = cache {
                c.insert_set(order, set.shared());
            }
            set
        }
    };
    set.set_missing_key(if opts.strict {
        MissingKey::Error
    } else {
        MissingKey::Zero
    });
    Ok(set)
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Helm's order: more path separators first; at equal depth, reverse lexicographic.
pub fn helm_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut names: Vec<String> = names.cloned().collect();
    names.sort_by(|a, b| {
        let (da, db) = (a.matches('/').count(), b.matches('/').count());
        db.cmp(&da).then_with(|| b.cmp(a))
    });
    names
}

/// Builds the top-level object of `node`'s chart and registers its templates; returns it
/// for the parent's `.Subcharts`.
#[allow(clippy::too_many_arguments)]
fn collect<'c>(
    processed: &Processed<'c>,
    node: &ChartValues<'c>,
    full_path: &str,
    values: &Value,
    caps: &Value,
    release: &Value,
    is_root: bool,
    out: &mut BTreeMap<String, Renderable<'c>>,
) -> Map {
    let dot = Map::new(MapKind::Values, BTreeMap::new());
    let deps = processed.dependencies.get(full_path).cloned().unwrap_or_default();
    dot.insert(
        "Chart",
        chart_object(&node.chart.metadata, &node.name, &deps, is_root),
    );
    dot.insert(
        "Files",
        Value::Object(Rc::new(Files::new(node.chart.files_map()))),
    );
    dot.insert("Release", release.clone());
    dot.insert("Capabilities", caps.clone());
    dot.insert("Values", values.clone());

    let subcharts = Map::new(MapKind::Any, BTreeMap::new());
    for child in &node.children {
        let child_values = match values.as_map().and_then(|m| m.get(&child.name)) {
            Some(Value::Map(m)) => Value::Map(m).into_values(),
            _ => Value::Map(Map::new(MapKind::Values, BTreeMap::new())),
        };
        let child_path = format!("{full_path}/charts/{}", child.name);
        let child_dot = collect(
            processed,
            child,
            &child_path,
            &child_values,
            caps,
            release,
            false,
            out,
        );
        subcharts.insert(child.name.clone(), Value::Map(child_dot));
    }
    dot.insert("Subcharts", Value::Map(subcharts));

    let is_library = node.chart.metadata.chart_type == "library";
    for t in &node.chart.templates {
        if is_library && !base_name(&t.name).starts_with('_') {
            continue;
        }
        out.insert(
            format!("{full_path}/{}", t.name),
            Renderable {
                data: &t.data,
                dot: dot.clone(),
                base_path: format!("{full_path}/templates"),
            },
        );
    }
    dot
}

fn release_object(opts: &RenderOptions) -> Value {
    Value::map(BTreeMap::from([
        ("Name".to_string(), Value::from(opts.release_name.as_str())),
        ("Namespace".to_string(), Value::from(opts.namespace.as_str())),
        ("IsInstall".to_string(), Value::Bool(opts.is_install)),
        ("IsUpgrade".to_string(), Value::Bool(opts.is_upgrade)),
        ("Revision".to_string(), Value::Int(opts.revision)),
        ("Service".to_string(), Value::from("Helm")),
    ]))
}

fn strings(items: &[String]) -> Value {
    Value::list(items.iter().map(|s| Value::from(s.as_str())).collect())
}

/// `.Chart`: Helm v4 converts the metadata struct to a map with Go field names.
fn chart_object(m: &Metadata, name: &str, deps: &[Dependency], is_root: bool) -> Value {
    let s = |v: &str| Value::from(v);
    let maintainers = m
        .maintainers
        .iter()
        .map(|mt| {
            Value::map(BTreeMap::from([
                ("Name".to_string(), s(&mt.name)),
                ("Email".to_string(), s(&mt.email)),
                ("URL".to_string(), s(&mt.url)),
            ]))
        })
        .collect();
    let dependencies = deps
        .iter()
        .map(|d| {
            Value::map(BTreeMap::from([
                ("Name".to_string(), s(&d.name)),
                ("Version".to_string(), s(&d.version)),
                ("Repository".to_string(), s(&d.repository)),
                ("Condition".to_string(), s(&d.condition)),
                ("Tags".to_string(), strings(&d.tags)),
                ("Enabled".to_string(), Value::Bool(d.enabled)),
                (
                    "ImportValues".to_string(),
                    Value::list(d.import_values.iter().map(|v| v.thaw()).collect()),
                ),
                ("Alias".to_string(), s(&d.alias)),
            ]))
        })
        .collect();
    let annotations = match &m.annotations {
        Some(a) => Value::Map(Map::new(
            MapKind::String,
            a.iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect(),
        )),
        None => Value::nil_map(MapKind::String),
    };
    Value::map(BTreeMap::from([
        ("Name".to_string(), s(name)),
        ("Home".to_string(), s(&m.home)),
        ("Sources".to_string(), strings(&m.sources)),
        ("Version".to_string(), s(&m.version)),
        ("Description".to_string(), s(&m.description)),
        ("Keywords".to_string(), strings(&m.keywords)),
        ("Maintainers".to_string(), Value::list(maintainers)),
        ("Icon".to_string(), s(&m.icon)),
        ("APIVersion".to_string(), s(&m.api_version)),
        ("Condition".to_string(), s(&m.condition)),
        ("Tags".to_string(), s(&m.tags)),
        ("AppVersion".to_string(), s(&m.app_version)),
        ("Deprecated".to_string(), Value::Bool(m.deprecated)),
        ("Annotations".to_string(), annotations),
        ("KubeVersion".to_string(), s(&m.kube_version)),
        ("Dependencies".to_string(), Value::list(dependencies)),
        ("Type".to_string(), s(&m.chart_type)),
        ("IsRoot".to_string(), Value::Bool(is_root)),
    ]))
}
