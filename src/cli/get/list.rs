//! `capstan get KIND`: one list of a kind through the API server, printed, then followed with
//! `-w`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use kube::api::ListParams;

use super::args::{Format, ListArgs};
use super::kinds::{Kind, Scope};
use super::print::{Listed, Printer};
use super::rows::Layout;
use super::select;
use super::table::colour_stdout;
use super::watch;

pub(super) async fn run_list<K: Kind>(
    target: &crate::cli::kube::Target,
    args: &ListArgs,
) -> anyhow::Result<ExitCode> {
    let mut params = ListParams::default();
    let namespace = (!args.all_namespaces).then_some(target.namespace.as_str());
    let mut by_cluster = None;
    match &args.selector {
        Some(selector) if K::BY_CLUSTER => {
            by_cluster = Some(select::ByCluster::list(&target.client, namespace, selector).await?)
        }
        Some(selector) => params = params.labels(selector),
        None => {}
    }
    let scope = Scope {
        client: &target.client,
        namespace,
        params,
        by_cluster,
    };
    let where_ = match scope.namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in any namespace".to_string(),
    };
    let objects = scope
        .api::<K::Object>()
        .list(&scope.params)
        .await
        .with_context(|| {
            let labels = args
                .selector
                .as_ref()
                .map(|s| format!(" with labels {s:?}"))
                .unwrap_or_default();
            format!("listing {} {where_}{labels} on {}", K::PLURAL, target.server)
        })?
        .items
        .into_iter()
        .filter(|o| scope.by_cluster.as_ref().is_none_or(|by| K::selected(o, by)))
        .collect::<Vec<_>>();
    let extra = K::extra(&scope).await?;
    let mut rows: Vec<Listed<K>> = objects
        .iter()
        .map(|o| Listed::of(o, &extra))
        .filter(|r| args.names.is_empty() || r.names(&args.names))
        .collect();
    rows.sort_by_key(|r| K::sort_key(&r.row));
    let missing: Vec<&String> = args
        .names
        .iter()
        .filter(|name| !rows.iter().any(|r| r.names(&[name.to_string()])))
        .collect();
    let printer = Printer {
        layout: Layout {
            namespaces: args.all_namespaces,
            wide: args.output == Some(Format::Wide),
        },
        format: args.output,
        events: args.output_watch_events,
        colour: colour_stdout(),
    };
    let widths = if rows.is_empty() && args.output.is_none_or(|f| f == Format::Wide) {
        if args.names.is_empty() {
            eprintln!("No {} found {where_}.", K::PLURAL);
        }
        Vec::new()
    } else {
        printer.list::<K>(&rows, args.no_headers)?
    };
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|n| format!("{n:?}")).collect();
        bail!(
            "{} {} not found {where_}",
            if missing.len() == 1 {
                <K::Object as kube::Resource>::kind(&())
            } else {
                K::PLURAL.into()
            },
            names.join(", ")
        );
    }
    if args.watch {
        watch::watch::<K>(&scope, extra, &rows, &args.names, &printer, &widths).await?;
    }
    let not_ready = rows.iter().filter(|r| !K::ready(&r.row)).count();
    if args.fail_not_ready && not_ready > 0 {
        eprintln!("{not_ready} of {} {} not ready", rows.len(), K::PLURAL);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
