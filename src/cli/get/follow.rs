//! A stream of every object of a kind, anew after each change: what `capstan get -w` follows
//! besides the listed objects (a release's CLUSTERS when its ClusterAddons change).

use std::collections::BTreeMap;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

/// Every object of `api`, anew after each change (the first time once the first list is
/// complete). A failed watch request is reported and retried with kube's backoff.
pub(super) fn follow_all<T>(api: Api<T>, plural: &'static str) -> BoxStream<'static, Vec<T>>
where
    T: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let mut known: BTreeMap<(String, String), T> = BTreeMap::new();
    let mut listing: BTreeMap<(String, String), T> = BTreeMap::new();
    let key = |o: &T| (o.namespace().unwrap_or_default(), o.name_any());
    watcher(api, watcher::Config::default())
        .default_backoff()
        .filter_map(move |event| {
            let changed = match event {
                Ok(watcher::Event::Init) => {
                    listing.clear();
                    false
                }
                Ok(watcher::Event::InitApply(o)) => {
                    listing.insert(key(&o), o);
                    false
                }
                Ok(watcher::Event::InitDone) => {
                    known = std::mem::take(&mut listing);
                    true
                }
                Ok(watcher::Event::Apply(o)) => {
                    known.insert(key(&o), o);
                    true
                }
                Ok(watcher::Event::Delete(o)) => known.remove(&key(&o)).is_some(),
                Err(e) => {
                    eprintln!("watching {plural}: {e} (retrying)");
                    false
                }
            };
            let all = changed.then(|| known.values().cloned().collect());
            futures::future::ready(all)
        })
        .boxed()
}
