//! A registry that remembers what was registered in it: `prometheus-client` leaves a family
//! without samples out of its output, and the book's metrics reference (`capstan docs`) lists
//! every series the operator can serve, sampled yet or not.

use prometheus_client::collector::Collector;
use prometheus_client::registry::{Metric, Registry};

/// One registered series: its name with the registry's prefix, its help text, its type
/// (`counter`, `gauge`, `histogram`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    pub name: String,
    pub help: String,
    pub kind: String,
}

/// [`Registry`] plus the list of what was registered in it (collectors excluded: they declare
/// their series as they encode them).
#[derive(Debug)]
pub struct Declaring {
    pub registry: Registry,
    prefix: String,
    pub declared: Vec<Declared>,
}

impl Declaring {
    pub fn with_prefix(prefix: &str) -> Declaring {
        Declaring {
            registry: Registry::with_prefix(prefix),
            prefix: prefix.to_string(),
            declared: Vec::new(),
        }
    }

    pub fn register(&mut self, name: &str, help: &str, metric: impl Metric) {
        let kind = metric.metric_type().as_str().to_string();
        self.declared.push(Declared {
            name: format!("{}_{name}", self.prefix),
            help: help.to_string(),
            kind,
        });
        self.registry.register(name, help, metric);
    }

    pub fn register_collector(&mut self, collector: Box<dyn Collector>) {
        self.registry.register_collector(collector);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;

    #[test]
    fn a_family_without_samples_is_declared_though_not_encoded() {
        let mut registry = Declaring::with_prefix("p");
        registry.register(
            "things",
            "Things seen",
            Family::<Vec<(String, String)>, Counter>::default(),
        );
        assert_eq!(
            registry.declared,
            [Declared {
                name: "p_things".into(),
                help: "Things seen".into(),
                kind: "counter".into()
            }]
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry.registry).unwrap();
        assert!(!text.contains("p_things"), "{text}");
    }
}
