//! A chart compiled once and rendered many times — the operator renders the same addon
//! charts for every cluster, with different values each time, where Helm would re-read and
//! re-parse the chart on every render.

use std::collections::BTreeMap;

use crate::render::{self, RenderCache, RenderError, RenderOptions};
use crate::{Chart, values};
use capstan_go::value::Value;

/// A loaded chart with its values decoded and its templates parsed, ready to render.
///
/// `Send + Sync`: share one with `Arc` and render it from any number of threads at once.
/// What is shared is immutable — the chart's files, the decoded `values.yaml` of every
/// chart, and for each enablement of subcharts met so far its dependency processing and
/// parse trees (see [`crate::enablement`]); everything a render
/// changes (values, built-in objects, the function environment of `RenderOptions`) is
/// created inside the render, on its thread.
pub struct CompiledChart {
    chart: Chart,
    cache: RenderCache,
}

impl CompiledChart {
    /// Decodes the `values.yaml` of the chart and its subcharts and parses the templates
    /// its default values enable. A template that does not parse is reported by the render
    /// that needs it, as Helm reports it.
    pub fn new(chart: Chart) -> Result<CompiledChart, RenderError> {
        decode_values(&chart)?;
        let compiled = CompiledChart {
            cache: RenderCache::new(&chart),
            chart,
        };
        let _ = render::prepare(&compiled.chart, &Value::empty_map(), &compiled.cache);
        Ok(compiled)
    }

    pub fn chart(&self) -> &Chart {
        &self.chart
    }

    /// Renders the chart like [`render::render`]: `{template path → output}` for every
    /// non-partial template of the chart and its enabled subcharts.
    pub fn render(
        &self,
        user_values: &Value,
        opts: &RenderOptions,
    ) -> Result<BTreeMap<String, String>, RenderError> {
        render::render_with(&self.chart, user_values, opts, Some(&self.cache))
    }
}

/// Decodes (and keeps) the defaults of `chart` and every subchart.
fn decode_values(chart: &Chart) -> Result<(), values::ValuesError> {
    values::chart_defaults(chart)?;
    chart.dependencies.iter().try_for_each(decode_values)
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<CompiledChart>();
};
