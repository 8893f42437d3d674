//! Values a user gives for a release's addon charts, on top of the values the release computes
//! from the Cluster (its `cluster-addon-values.yaml` or a stage's `overwrite.yaml`).
//!
//! Each source is a Helm values file (YAML, a map at the top; an empty text is an empty map).
//! The layers are merged the way `helm template -f computed.yaml -f first.yaml -f second.yaml`
//! merges its files ([`capstan_chart::values::merge_files`]): later layers win key by key,
//! tables merge, a scalar or list replaces, and a `null` deletes the chart default it meets.
//! Every addon part (the single chart, or each stage's chart) gets the same user values; a
//! chart ignores the keys it does not use.

use capstan_chart::values as chart_values;
use capstan_template::Value;

use super::values::ComputedValues;

/// One source of user values, e.g. `ClusterStack tenant/ferrol spec.addonValues`.
#[derive(Debug, Clone)]
pub struct UserValues {
    /// Where the values come from, as errors and the layered text name it.
    pub source: String,
    /// The YAML text as the user wrote it.
    pub text: String,
    /// `text` read as a Helm values file.
    pub values: Value,
}

/// User values that are not a Helm values file; names where they come from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: not a YAML map of Helm values: {problem}")]
pub struct UserValuesError {
    pub source_name: String,
    pub problem: String,
}

impl UserValues {
    /// Reads `text` (from `source`) as a Helm values file: YAML whose documents are maps.
    pub fn parse(source: &str, text: &str) -> Result<UserValues, UserValuesError> {
        let values = chart_values::parse(text, source).map_err(|e| UserValuesError {
            source_name: source.to_string(),
            problem: e.msg,
        })?;
        Ok(UserValues {
            source: source.to_string(),
            text: text.to_string(),
            values,
        })
    }
}

/// A part's computed values with the `user` layers over them, in order (the last wins).
/// Without user layers the computed values are returned as they are. Otherwise the text is
/// the computed text followed by one YAML document per layer (headed by a comment naming
/// its source), which read as one values file gives the same values.
pub fn layer(computed: Option<ComputedValues>, user: &[UserValues]) -> Option<ComputedValues> {
    if user.is_empty() {
        return computed;
    }
    let mut text = String::new();
    let mut files = Vec::with_capacity(user.len() + 1);
    if let Some(computed) = computed {
        text.push_str(&computed.text);
        files.push(computed.values);
    }
    for layer in user {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("---\n# ");
        text.push_str(&layer.source.replace('\n', " "));
        text.push('\n');
        text.push_str(&layer.text);
        files.push(layer.values.clone());
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Some(ComputedValues {
        text,
        values: chart_values::merge_files(&files),
    })
}

/// [`layer`] for every addon part (as [`crate::render::CompiledRelease::addon_values`] lists
/// them).
pub fn layer_parts(
    parts: Vec<(String, Option<ComputedValues>)>,
    user: &[UserValues],
) -> Vec<(String, Option<ComputedValues>)> {
    parts
        .into_iter()
        .map(|(part, computed)| (part, layer(computed, user)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computed(text: &str) -> ComputedValues {
        ComputedValues {
            text: text.to_string(),
            values: chart_values::parse(text, "computed").expect("computed values parse"),
        }
    }

    fn json(v: &Value) -> String {
        capstan_encoding::json::marshal(v).expect("encodable")
    }

    /// (computed text, user layers in order) → the merged values.
    #[test]
    fn layers_merge_over_the_computed_values_in_order() {
        let cases: [(Option<&str>, &[&str], &str); 6] = [
            // A user key is added; a computed one is overridden; tables merge.
            (
                Some("ms:\n  labels:\n    domain: a\n"),
                &["ms:\n  labels:\n    team: x\n  replicas: 2\n"],
                r#"{"ms":{"labels":{"domain":"a","team":"x"},"replicas":2}}"#,
            ),
            // The later layer (the Cluster's) wins over the earlier (the ClusterStack's).
            (Some("a: 1\n"), &["a: 2\nb: 2\n", "b: 3\n"], r#"{"a":2,"b":3}"#),
            // A null stays (for the chart's coalescing to delete the default it meets).
            (Some("a: 1\nb: 1\n"), &["a: null\n"], r#"{"a":null,"b":1}"#),
            // A part without a values template gets the user values alone.
            (None, &["x: 1\n"], r#"{"x":1}"#),
            // An empty layer changes nothing.
            (Some("a: 1\n"), &["", "# only a comment\n"], r#"{"a":1}"#),
            // A list is replaced whole.
            (Some("l: [1, 2]\n"), &["l: [3]\n"], r#"{"l":[3]}"#),
        ];
        for (base, layers, want) in cases {
            let user: Vec<UserValues> = layers
                .iter()
                .enumerate()
                .map(|(i, t)| UserValues::parse(&format!("layer {i}"), t).expect("layer parses"))
                .collect();
            let merged = layer(base.map(computed), &user).expect("values");
            assert_eq!(json(&merged.values), want, "{base:?} + {layers:?}");
            // The text read as one values file gives the same values.
            let reread = chart_values::parse(&merged.text, "merged").expect("merged text parses");
            assert_eq!(json(&reread), want, "text:\n{}", merged.text);
        }
    }

    #[test]
    fn without_user_values_nothing_changes() {
        let base = computed("a: 1");
        let same = layer(Some(base.clone()), &[]).expect("values");
        assert_eq!(same.text, "a: 1");
        assert!(layer(None, &[]).is_none());
    }

    #[test]
    fn the_text_names_each_source() {
        let user = [UserValues::parse("ClusterStack ns/s spec.addonValues", "x: 1").expect("parses")];
        let merged = layer(Some(computed("a: 1")), &user).expect("values");
        assert_eq!(
            merged.text,
            "a: 1\n---\n# ClusterStack ns/s spec.addonValues\nx: 1\n"
        );
    }

    #[test]
    fn values_that_are_not_a_map_are_refused_naming_the_source() {
        let err = UserValues::parse("Cluster ns/c annotation x", "- a\n- b\n").expect_err("a list");
        assert_eq!(err.source_name, "Cluster ns/c annotation x");
        assert!(
            err.to_string()
                .starts_with("Cluster ns/c annotation x: not a YAML map of Helm values: "),
            "{err}"
        );
        assert!(err.problem.contains("cannot unmarshal array"), "{err}");
        let err = UserValues::parse("f", "a: [\n").expect_err("broken YAML");
        assert!(err.problem.contains("line"), "{err}");
        let err = UserValues::parse("f", "just text").expect_err("a scalar");
        assert!(err.problem.contains("cannot unmarshal string"), "{err}");
    }
}
