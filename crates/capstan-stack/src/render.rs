//! Rendering a whole release for one Cluster, offline, the way the reference operator runs
//! `helm template` for it:
//!
//! | part | release name | namespace | Kubernetes version | values | CRDs |
//! |---|---|---|---|---|---|
//! | `cluster-class` | `<provider>-<name>-<k8sMajor>-<k8sMinor>` | the option (default: the Cluster's) | Helm's default | none | no |
//! | `cluster-addon` | `cluster-addon` | `kube-system` | `versions.kubernetes` | `cluster-addon-values.yaml` | included |
//! | `cluster-addon/<stage>` | `cluster-addon` | `kube-system` | `versions.kubernetes` | the stage's `overwrite.yaml` | included |
//!
//! User values ([`crate::user_values`]), when given, are layered over each addon part's values
//! like further `-f` files.
//!
//! Each part is Helm's `helm template` stream for its chart; [`labelled_stream`] joins them for
//! output, each document's `# Source:` header prefixed with the part.

use std::collections::BTreeMap;
use std::rc::Rc;

use capstan_chart::checks;
use capstan_chart::compiled::CompiledChart;
use capstan_chart::deps::DependencyResolver;
use capstan_chart::manifest::{self, Manifests, StreamOptions};
use capstan_chart::objects::KubeVersion;
use capstan_chart::render::RenderOptions as ChartOptions;
use capstan_chart::{Chart, coalesce};
use capstan_template::funcs::FuncEnv;

use super::addon_config::AddonConfig;
use super::release::{Release, ReleaseError};
use super::user_values::{UserValues, layer_parts};
use super::values::{ClusterObjects, ComputedValues, compute_values};

/// The namespace the addon charts are rendered into (as the reference operator does).
pub const ADDON_NAMESPACE: &str = "kube-system";
/// The Helm release name of the addon charts.
pub const ADDON_RELEASE_NAME: &str = "cluster-addon";

/// Options of a whole-release render.
#[derive(Clone)]
pub struct RenderOptions {
    /// Namespace of the ClusterClass part; `None`: the Cluster's namespace, else `default`.
    pub namespace: Option<String>,
    /// Randomness and time for template functions.
    pub env: Rc<FuncEnv>,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            namespace: None,
            env: Rc::new(FuncEnv::system()),
        }
    }
}

/// One rendered part of a release.
#[derive(Debug, Clone)]
pub struct Part {
    /// `cluster-class`, `cluster-addon`, or `cluster-addon/<stage>`.
    pub name: String,
    /// The chart's name (Chart.yaml).
    pub chart: String,
    pub release_name: String,
    pub namespace: String,
    /// The Kubernetes version the chart saw (`.Capabilities.KubeVersion`).
    pub kube_version: String,
    /// The runtime values, when the part has a values template.
    pub values: Option<ComputedValues>,
    /// The engine output, template path → text (what `helm template` renders before
    /// splitting).
    pub rendered: BTreeMap<String, String>,
    pub manifests: Manifests,
    /// The `helm template` stream of this part alone.
    pub stream: String,
}

/// A release that could not be rendered; names the release, the part and the chart.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Release(#[from] ReleaseError),
    #[error("release {release}: {part} (chart {chart}): {message}")]
    Part {
        release: String,
        part: String,
        chart: String,
        message: String,
    },
}

/// What to render for one part.
pub struct PartInput<'a> {
    pub name: String,
    pub chart: &'a CompiledChart,
    pub release_name: String,
    pub namespace: String,
    pub kube_version: KubeVersion,
    pub values: Option<ComputedValues>,
    pub include_crds: bool,
}

/// Renders every part of `release` for the Cluster in `objects`: the ClusterClass chart,
/// then the addon chart or each stage of the addon (in order of first appearance in
/// `clusteraddon.yaml`). To render a release for many Clusters, compile it once
/// ([`CompiledRelease`]).
pub fn render_release(
    release: &Release,
    objects: &ClusterObjects,
    opts: &RenderOptions,
) -> Result<Vec<Part>, RenderError> {
    CompiledRelease::new(release)?.render(objects, opts)
}

/// [`render_release`] with the charts' missing dependencies completed by `resolver` first.
pub fn render_release_with(
    release: &Release,
    objects: &ClusterObjects,
    opts: &RenderOptions,
    resolver: &dyn DependencyResolver,
) -> Result<Vec<Part>, RenderError> {
    CompiledRelease::with_resolver(release, Some(resolver))?.render(objects, opts)
}

/// A release with every chart loaded and compiled: renders it for any number of Clusters,
/// from any thread (`Send + Sync`, like [`CompiledChart`]).
pub struct CompiledRelease {
    tag: String,
    addon_version: String,
    addon_config: Option<AddonConfig>,
    /// `versions.kubernetes` of the metadata, as written (`v1.27.3`).
    kubernetes: String,
    class_release_name: String,
    class: CompiledChart,
    /// `versions.kubernetes` of the metadata, or why it is not a version.
    kube_version: Result<KubeVersion, String>,
    addons: Vec<CompiledAddon>,
    /// The Cluster API version the values templates are written for (the metadata's
    /// `capstan.valuesTemplateAPIVersion`, `v1beta1` by default).
    values_template_api: super::capi::CapiVersion,
}

struct CompiledAddon {
    /// `cluster-addon` or `cluster-addon/<stage>`.
    part: String,
    chart: CompiledChart,
    values_template: Option<(String, String)>,
}

impl CompiledRelease {
    /// Compiles the release's charts as they are: a chart whose `charts/` lacks a declared
    /// dependency fails to render with Helm's message.
    pub fn new(release: &Release) -> Result<CompiledRelease, RenderError> {
        CompiledRelease::with_resolver(release, None)
    }

    /// Compiles the release's charts, each first given its missing dependencies by
    /// `resolver` (Helm's `--dependency-update`, the way the reference operator renders).
    pub fn with_resolver(
        release: &Release,
        resolver: Option<&dyn DependencyResolver>,
    ) -> Result<CompiledRelease, RenderError> {
        let tag = release.tag().to_string();
        let compile = |part: &str, chart: Chart| {
            let name = chart.name().to_string();
            let chart = match resolver {
                Some(r) => r.resolve(chart, None).map_err(|message| RenderError::Part {
                    release: tag.clone(),
                    part: part.to_string(),
                    chart: name.clone(),
                    message,
                })?,
                None => chart,
            };
            CompiledChart::new(chart).map_err(|e| RenderError::Part {
                release: tag.clone(),
                part: part.to_string(),
                chart: name,
                message: e.to_string(),
            })
        };
        let class = compile("cluster-class", release.cluster_class_chart()?)?;
        let mut addons = Vec::new();
        for addon in release.addon_charts()? {
            let part = match &addon.stage {
                None => "cluster-addon".to_string(),
                Some(stage) => format!("cluster-addon/{stage}"),
            };
            addons.push(CompiledAddon {
                chart: compile(&part, addon.chart)?,
                part,
                values_template: addon.values_template,
            });
        }
        let addon_config = match release.addon() {
            super::release::Addon::Staged { config, .. } => Some(config.clone()),
            super::release::Addon::Single { .. } => None,
        };
        Ok(CompiledRelease {
            addon_version: release.metadata().cluster_addon.to_string(),
            addon_config,
            kubernetes: release.metadata().kubernetes.clone(),
            class_release_name: release.tag().cluster_class_release_name(),
            tag,
            class,
            kube_version: KubeVersion::parse(&release.metadata().kubernetes).map_err(|e| e.to_string()),
            addons,
            values_template_api: release.metadata().values_template_api,
        })
    }

    /// The Cluster API version the release's values templates read the Cluster in.
    pub fn values_template_api(&self) -> super::capi::CapiVersion {
        self.values_template_api
    }

    /// The release tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// `versions.kubernetes` of the release's metadata (`v1.27.3`).
    pub fn kubernetes(&self) -> &str {
        &self.kubernetes
    }

    /// The ClusterClass part alone, into `namespace` (what the management cluster gets; it
    /// depends on no Cluster).
    pub fn render_class(&self, namespace: &str, env: &Rc<FuncEnv>) -> Result<Part, RenderError> {
        render_part(
            PartInput {
                name: "cluster-class".into(),
                chart: &self.class,
                release_name: self.class_release_name.clone(),
                namespace: namespace.to_string(),
                kube_version: KubeVersion::helm_default(),
                values: None,
                include_crds: false,
            },
            env,
        )
        .map_err(|message| RenderError::Part {
            release: self.tag.clone(),
            part: "cluster-class".into(),
            chart: self.class.chart().name().to_string(),
            message,
        })
    }

    /// The addon's version (`versions.components.clusterAddon`).
    pub fn addon_version(&self) -> &str {
        &self.addon_version
    }

    /// The stages of a multi-stage addon (`clusteraddon.yaml`); `None` for a single chart.
    pub fn addon_config(&self) -> Option<&AddonConfig> {
        self.addon_config.as_ref()
    }

    /// The runtime values of every addon part for the Cluster in `objects`, in part order
    /// (`None` for a part without a values template). Cheap next to a render: what a caller
    /// hashes to decide whether to render again.
    pub fn addon_values(
        &self,
        objects: &ClusterObjects,
    ) -> Result<Vec<(String, Option<ComputedValues>)>, RenderError> {
        self.addons
            .iter()
            .map(|addon| {
                let values = match &addon.values_template {
                    None => None,
                    Some((file, text)) => {
                        Some(
                            compute_values(text, file, objects).map_err(|e| RenderError::Part {
                                release: self.tag.clone(),
                                part: addon.part.clone(),
                                chart: addon.chart.chart().name().to_string(),
                                message: e.to_string(),
                            })?,
                        )
                    }
                };
                Ok((addon.part.clone(), values))
            })
            .collect()
    }

    /// The addon parts rendered with `values` from [`CompiledRelease::addon_values`], for
    /// `kube_version` (a live cluster's, as `helm install` sees it), else the release's
    /// `versions.kubernetes`.
    pub fn render_addons(
        &self,
        values: Vec<(String, Option<ComputedValues>)>,
        kube_version: Option<KubeVersion>,
        env: &Rc<FuncEnv>,
    ) -> Result<Vec<Part>, RenderError> {
        let part_error = |part: &str, chart: &str, message: String| RenderError::Part {
            release: self.tag.clone(),
            part: part.to_string(),
            chart: chart.to_string(),
            message,
        };
        let kube_version = match kube_version {
            Some(version) => version,
            None => self.kube_version.clone().map_err(|e| {
                part_error(
                    "cluster-addon",
                    "-",
                    format!("metadata.yaml: versions.kubernetes: {e}"),
                )
            })?,
        };
        let mut parts = Vec::new();
        for (addon, (_, values)) in self.addons.iter().zip(values) {
            let chart_name = addon.chart.chart().name();
            parts.push(
                render_part(
                    PartInput {
                        name: addon.part.clone(),
                        chart: &addon.chart,
                        release_name: ADDON_RELEASE_NAME.into(),
                        namespace: ADDON_NAMESPACE.into(),
                        kube_version: kube_version.clone(),
                        values,
                        include_crds: true,
                    },
                    env,
                )
                .map_err(|m| part_error(&addon.part, chart_name, m))?,
            );
        }
        Ok(parts)
    }

    /// Every part of the release for the Cluster in `objects`.
    pub fn render(&self, objects: &ClusterObjects, opts: &RenderOptions) -> Result<Vec<Part>, RenderError> {
        self.render_with_user_values(objects, opts, &[])
    }

    /// [`CompiledRelease::render`] with `user` values layered over every addon part's computed
    /// values ([`crate::user_values::layer`]), as the operator renders a Cluster's addons.
    pub fn render_with_user_values(
        &self,
        objects: &ClusterObjects,
        opts: &RenderOptions,
        user: &[UserValues],
    ) -> Result<Vec<Part>, RenderError> {
        let namespace = opts
            .namespace
            .clone()
            .or_else(|| objects.cluster_namespace())
            .unwrap_or_else(|| "default".to_string());
        let mut parts = vec![self.render_class(&namespace, &opts.env)?];
        let values = layer_parts(self.addon_values(objects)?, user);
        parts.extend(self.render_addons(values, None, &opts.env)?);
        Ok(parts)
    }
}

/// Renders one chart like `helm template` with the part's settings; the error is Helm's
/// message.
pub fn render_part(input: PartInput<'_>, env: &Rc<FuncEnv>) -> Result<Part, String> {
    let compiled = input.chart;
    let chart = compiled.chart();
    // Helm's order: dependencies, release name; the values schema and then the chart's
    // kubeVersion inside the render.
    checks::check_dependencies(chart).map_err(|e| e.to_string())?;
    checks::check_release_name(&input.release_name).map_err(|e| e.to_string())?;
    let values = match &input.values {
        Some(v) => v.values.clone(),
        None => coalesce::new_table(),
    };
    let opts = ChartOptions {
        release_name: input.release_name.clone(),
        namespace: input.namespace.clone(),
        kube_version: input.kube_version.clone(),
        check_kube_version: true,
        env: env.clone(),
        ..ChartOptions::default()
    };
    let rendered = compiled.render(&values, &opts).map_err(|e| e.to_string())?;
    let manifests = manifest::build(chart, &rendered).map_err(|e| e.to_string())?;
    let stream = manifest::stream(
        chart,
        &manifests,
        &StreamOptions {
            include_crds: input.include_crds,
            ..StreamOptions::default()
        },
    );
    Ok(Part {
        name: input.name,
        chart: chart.name().to_string(),
        release_name: input.release_name,
        namespace: input.namespace,
        kube_version: input.kube_version.normalized.clone(),
        values: input.values,
        rendered,
        manifests,
        stream,
    })
}

/// All parts as one stream: each document's `# Source: <template>` header becomes
/// `# Source: <part>/<template>` (e.g. `cluster-addon/cni/CNI/charts/cilium/templates/x.yaml`).
pub fn labelled_stream(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        out.push_str(&label_sources(&part.stream, &part.name));
    }
    out
}

/// Prefixes the `# Source:` header that follows each `---` line of `stream` with `part/`.
pub fn label_sources(stream: &str, part: &str) -> String {
    let mut out = String::with_capacity(stream.len() + 64);
    let mut after_separator = false;
    for line in stream.split_inclusive('\n') {
        match line.strip_prefix("# Source: ") {
            Some(rest) if after_separator => {
                out.push_str("# Source: ");
                out.push_str(part);
                out.push('/');
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
        after_separator = line.trim_end() == "---";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_only_headers() {
        let s = "---\n# Source: c/templates/a.yaml\nkind: A\n# Source: not a header\n---\n# Source: c/crds/b.yaml\nkind: B\n";
        assert_eq!(
            label_sources(s, "cluster-addon/cni"),
            "---\n# Source: cluster-addon/cni/c/templates/a.yaml\nkind: A\n# Source: not a header\n---\n# Source: cluster-addon/cni/c/crds/b.yaml\nkind: B\n"
        );
    }
}
