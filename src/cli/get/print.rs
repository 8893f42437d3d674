//! How a list and its changes are printed: a table, JSON, YAML or names, as `kubectl get`
//! prints them.

use anyhow::Context;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use super::args::Format;
use super::kinds::Kind;
use super::rows::Layout;
use super::table::Table;

/// A listed object's row and the object's name.
pub(super) struct Listed<K: Kind> {
    pub(super) row: K::Row,
    pub(super) name: String,
}

impl<K: Kind> Listed<K> {
    pub(super) fn of(object: &K::Object, extra: &K::Extra) -> Listed<K> {
        Listed {
            row: K::row(object, extra),
            name: object.name_any(),
        }
    }

    /// Whether this is one of `names` (by the object's name or the row's, e.g. the Cluster).
    pub(super) fn names(&self, names: &[String]) -> bool {
        names
            .iter()
            .any(|n| *n == self.name || *n == K::sort_key(&self.row).1)
    }
}

/// How a list and its changes are printed.
pub(super) struct Printer {
    pub(super) layout: Layout,
    pub(super) format: Option<Format>,
    /// `--output-watch-events`: each row says what happened to its object.
    pub(super) events: bool,
    pub(super) colour: bool,
}

impl Printer {
    /// The first list; returns the table's column widths (for the rows a watch prints).
    pub(super) fn list<K: Kind>(&self, rows: &[Listed<K>], no_headers: bool) -> anyhow::Result<Vec<usize>> {
        let plain: Vec<K::Row> = rows.iter().map(|r| r.row.clone()).collect();
        match self.format {
            Some(Format::Json | Format::Yaml | Format::Name) if self.events => {
                for r in rows {
                    self.change::<K>(&r.row, &r.name, "ADDED", &[])?;
                }
                Ok(Vec::new())
            }
            Some(Format::Json) => {
                print_json(K::LIST_KIND, &plain)?;
                Ok(Vec::new())
            }
            Some(Format::Yaml) => {
                print_yaml(K::LIST_KIND, &plain)?;
                Ok(Vec::new())
            }
            Some(Format::Name) => {
                for r in rows {
                    println!("{}", resource_name::<K>(&r.name));
                }
                Ok(Vec::new())
            }
            Some(Format::Wide) | None => {
                let mut table = K::table(&plain, self.layout, Timestamp::now());
                if self.events {
                    with_event(&mut table, "ADDED");
                }
                if no_headers {
                    print!("{}", table.render_rows(&[], self.colour));
                } else {
                    print!("{}", table.render(self.colour));
                }
                Ok(table.widths())
            }
        }
    }

    /// One object's row after a change (`event`: `ADDED`, `MODIFIED` or `DELETED`).
    pub(super) fn change<K: Kind>(
        &self,
        row: &K::Row,
        name: &str,
        event: &str,
        widths: &[usize],
    ) -> anyhow::Result<()> {
        match self.format {
            Some(Format::Json) if self.events => {
                println!(
                    "{}",
                    serde_json::to_string(&serde_json::json!({"type": event, "object": row}))?
                );
            }
            Some(Format::Json) => println!("{}", serde_json::to_string(row)?),
            Some(Format::Yaml) if self.events => {
                let json = serde_json::json!({"type": event, "object": row});
                print!("---\n{}", yaml(&json)?);
            }
            Some(Format::Yaml) => print!("---\n{}", yaml(&serde_json::to_value(row)?)?),
            Some(Format::Name) if self.events => println!("{event} {}", resource_name::<K>(name)),
            Some(Format::Name) => println!("{}", resource_name::<K>(name)),
            Some(Format::Wide) | None => {
                let mut table = K::table(std::slice::from_ref(row), self.layout, Timestamp::now());
                if self.events {
                    with_event(&mut table, event);
                }
                print!("{}", table.render_rows(widths, self.colour));
            }
        }
        std::io::Write::flush(&mut std::io::stdout()).context("writing to stdout")
    }
}

/// An EVENT column first (`--output-watch-events`).
pub(super) fn with_event(table: &mut Table, event: &str) {
    table.headers.insert(0, "EVENT");
    for row in &mut table.rows {
        row.insert(0, event.to_string());
    }
}

/// `KIND.GROUP/NAME` of an object of `K`, as `kubectl get -o name` prints it.
pub(super) fn resource_name<K: Kind>(name: &str) -> String {
    format!(
        "{}.{}/{name}",
        <K::Object as kube::Resource>::kind(&()).to_lowercase(),
        <K::Object as kube::Resource>::group(&())
    )
}

pub(super) fn list_json<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::json!({"kind": kind, "items": serde_json::to_value(items)?}))
}

pub(super) fn print_json<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(&list_json(kind, items)?)?);
    Ok(())
}

pub(super) fn print_yaml<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<()> {
    print!("{}", yaml(&list_json(kind, items)?)?);
    Ok(())
}

/// JSON as YAML (keys sorted, as `kubectl` prints).
pub(super) fn yaml(json: &serde_json::Value) -> anyhow::Result<String> {
    let value = capstan_encoding::json::unmarshal(&json.to_string()).context("re-reading the output")?;
    capstan_encoding::yaml_emit::marshal(&value).context("writing YAML")
}
