//! `capstan get -w`: after the list, each object's row again when it changes or goes, and the
//! rows whose other inputs change (a release's CLUSTERS when its ClusterAddons do).

use std::collections::BTreeMap;

use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::{WatchStreamExt, watcher};

use super::kinds::{Kind, Scope};
use super::print::{Listed, Printer};
use super::select;

/// Prints each object again when its row changes, and once more when it is deleted
/// (`DELETED` with `--output-watch-events`). The watch lists anew before it follows changes, so
/// a change between the first list and the watch shows as a row that differs from the one
/// printed; a row printed as it is again (a relist) is not repeated. `names`: only these
/// objects (all when empty).
pub(super) async fn watch<K: Kind>(
    scope: &Scope<'_>,
    mut extra: K::Extra,
    listed: &[Listed<K>],
    names: &[String],
    printer: &Printer,
    widths: &[usize],
) -> anyhow::Result<()> {
    let mut rows = Rows::<K> {
        printed: listed
            .iter()
            .map(|r| Ok((K::sort_key(&r.row), serde_json::to_string(&r.row)?)))
            .collect::<anyhow::Result<_>>()?,
        objects: BTreeMap::new(),
        names,
        by_cluster: scope.by_cluster.as_ref(),
        printer,
        widths,
    };
    let mut config = watcher::Config::default();
    if let Some(labels) = &scope.params.label_selector {
        config = config.labels(labels);
    }
    let mut events = watcher(scope.api::<K::Object>(), config)
        .default_backoff()
        .boxed();
    let mut extras = K::follow_extra(scope).unwrap_or_else(|| futures::stream::pending().boxed());
    loop {
        tokio::select! {
            event = events.next() => match event {
                None => return Ok(()),
                Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => rows.show(o, false, &extra)?,
                Some(Ok(watcher::Event::Delete(o))) => rows.show(o, true, &extra)?,
                Some(Ok(_)) => {}
                Some(Err(e)) => eprintln!("watching {}: {e} (retrying)", K::PLURAL),
            },
            Some(new) = extras.next() => {
                extra = new;
                let objects: Vec<K::Object> = rows.objects.values().cloned().collect();
                for object in objects {
                    rows.show(object, false, &extra)?;
                }
            }
        }
    }
}

/// What a watch has printed and the objects it knows.
struct Rows<'a, K: Kind> {
    /// Each row as last printed, by its key.
    printed: BTreeMap<(String, String), String>,
    /// The objects watched, by namespace and name.
    objects: BTreeMap<(String, String), K::Object>,
    names: &'a [String],
    /// ClusterAddons selected by their Clusters' labels, as listed before the watch began.
    by_cluster: Option<&'a select::ByCluster>,
    printer: &'a Printer,
    widths: &'a [usize],
}

impl<K: Kind> Rows<'_, K> {
    fn show(&mut self, object: K::Object, deleted: bool, extra: &K::Extra) -> anyhow::Result<()> {
        let listed = Listed::<K>::of(&object, extra);
        if !self.names.is_empty() && !listed.names(self.names) {
            return Ok(());
        }
        if self.by_cluster.is_some_and(|by| !K::selected(&object, by)) {
            return Ok(());
        }
        let id = (object.namespace().unwrap_or_default(), object.name_any());
        let key = K::sort_key(&listed.row);
        let text = serde_json::to_string(&listed.row)?;
        let event = if deleted {
            self.objects.remove(&id);
            self.printed.remove(&key);
            "DELETED"
        } else {
            self.objects.insert(id, object);
            match self.printed.insert(key, text.clone()) {
                Some(before) if before == text => return Ok(()),
                Some(_) => "MODIFIED",
                None => "ADDED",
            }
        };
        self.printer
            .change::<K>(&listed.row, &listed.name, event, self.widths)
    }
}
