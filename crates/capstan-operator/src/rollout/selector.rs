//! Kubernetes label selectors (`matchLabels`, `matchExpressions`) over a Cluster's labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Operators a `matchExpressions` entry may use.
pub const OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];

/// Whether `labels` satisfy `selector`: every `matchLabels` entry and every expression. An
/// empty selector matches everything; an expression with an unknown operator matches nothing
/// (the webhook refuses it, see [`check`]).
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_match = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let listed = |v: &String| e.values.iter().flatten().any(|x| x == v);
        match e.operator.as_str() {
            "In" => value.is_some_and(listed),
            "NotIn" => !value.is_some_and(listed),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// `None` (no selector) matches everything.
pub fn matches_opt(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    selector.is_none_or(|s| matches(s, labels))
}

/// What is wrong with `selector`, as Kubernetes checks it: a known operator; values for
/// `In`/`NotIn` and none for `Exists`/`DoesNotExist`.
pub fn check(selector: &LabelSelector) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, e) in selector.match_expressions.iter().flatten().enumerate() {
        let values = e.values.as_ref().map_or(0, Vec::len);
        let at = format!("matchExpressions[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" if values == 0 => {
                problems.push(format!("{at}: operator {} needs values", e.operator));
            }
            "Exists" | "DoesNotExist" if values > 0 => {
                problems.push(format!("{at}: operator {} takes no values", e.operator));
            }
            op if !OPERATORS.contains(&op) => problems.push(format!(
                "{at}: unknown operator {op:?} (one of {})",
                OPERATORS.join(", ")
            )),
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: operator.into(),
                values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
            }]),
            match_labels: None,
        }
    }

    #[test]
    fn selectors_match_as_kubernetes_does() {
        let ring_canary = labels(&[("ring", "canary")]);
        let none = labels(&[]);
        let by_label = LabelSelector {
            match_labels: Some(labels(&[("ring", "canary")])),
            match_expressions: None,
        };
        let rows: [(&str, LabelSelector, &BTreeMap<String, String>, bool); 10] = [
            ("empty matches all", LabelSelector::default(), &none, true),
            ("matchLabels equal", by_label.clone(), &ring_canary, true),
            ("matchLabels missing", by_label, &none, false),
            (
                "In",
                expression("ring", "In", &["canary", "beta"]),
                &ring_canary,
                true,
            ),
            ("In absent", expression("ring", "In", &["canary"]), &none, false),
            (
                "NotIn absent",
                expression("ring", "NotIn", &["canary"]),
                &none,
                true,
            ),
            (
                "NotIn listed",
                expression("ring", "NotIn", &["canary"]),
                &ring_canary,
                false,
            ),
            ("Exists", expression("ring", "Exists", &[]), &ring_canary, true),
            (
                "DoesNotExist",
                expression("ring", "DoesNotExist", &[]),
                &ring_canary,
                false,
            ),
            (
                "unknown operator",
                expression("ring", "Like", &[]),
                &ring_canary,
                false,
            ),
        ];
        for (name, selector, labels, expected) in rows {
            assert_eq!(matches(&selector, labels), expected, "{name}");
        }
    }

    #[test]
    fn check_names_the_broken_expression() {
        assert!(check(&expression("a", "In", &["x"])).is_empty());
        assert_eq!(
            check(&expression("a", "In", &[])),
            ["matchExpressions[0]: operator In needs values"]
        );
        assert_eq!(
            check(&expression("a", "Exists", &["x"])),
            ["matchExpressions[0]: operator Exists takes no values"]
        );
        assert_eq!(check(&expression("a", "Like", &[])).len(), 1);
    }
}
