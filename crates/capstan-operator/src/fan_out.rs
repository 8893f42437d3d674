//! One watch of a kind for the whole process, its events handed to every controller that
//! needs them (issue 36 §3). The Cluster, ClusterAddon and rollout controllers each watched
//! the Clusters into a store of their own, and two of them the ClusterAddons: three copies of
//! every Cluster and two of every ClusterAddon, the largest part of the operator's memory
//! after the workload connections. Now the one watch fills the one store (the caller reflects
//! it before it gets here) and each consumer sees an event only after the store has it, as a
//! reconcile woken by it expects.

use std::future::Future;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::watcher::Event;
use tokio::sync::mpsc;

use crate::watch::Events;

/// A watch and the consumers taken from it before it runs.
pub struct FanOut<K> {
    /// What is watched, for the log (`Clusters`).
    what: &'static str,
    events: Events<K>,
    consumers: Vec<mpsc::UnboundedSender<Event<K>>>,
}

impl<K: Clone + Send + 'static> FanOut<K> {
    pub fn new(what: &'static str, events: Events<K>) -> FanOut<K> {
        FanOut {
            what,
            events,
            consumers: Vec::new(),
        }
    }

    /// Every event of the watch from its start, as its own stream. The watch's errors are
    /// not passed on: the watch retries with its backoff and [`FanOut::run`] logs them.
    /// Unbounded: a consumer is a controller that takes its events into its queue at once,
    /// and a bound would let one slow consumer stop the store and every other one.
    pub fn consumer(&mut self) -> Events<K> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.consumers.push(sender);
        futures::stream::unfold(receiver, |mut receiver| async move {
            let event = receiver.recv().await?;
            Some((Ok(event), receiver))
        })
        .boxed()
    }

    /// Whether any consumer was taken.
    pub fn consumed(&self) -> bool {
        !self.consumers.is_empty()
    }

    /// Drives the watch until `stop`: each event to every consumer still listening.
    pub fn run(self, stop: impl Future<Output = ()> + Send + 'static) -> BoxFuture<'static, ()> {
        let FanOut {
            what,
            mut events,
            mut consumers,
        } = self;
        async move {
            let forward = async {
                while let Some(event) = events.next().await {
                    match event {
                        Ok(event) => hand_out(&mut consumers, event),
                        Err(error) => tracing::warn!(%error, "watching the {what}"),
                    }
                }
            };
            tokio::select! {
                () = forward => {}
                () = stop => {}
            }
        }
        .boxed()
    }
}

/// `event` to each consumer (the last one gets it without a copy); a consumer that is gone
/// (its controller stopped) is dropped.
fn hand_out<K: Clone>(consumers: &mut Vec<mpsc::UnboundedSender<Event<K>>>, event: Event<K>) {
    consumers.retain(|consumer| !consumer.is_closed());
    let Some((last, others)) = consumers.split_last() else {
        return;
    };
    for consumer in others {
        let _ = consumer.send(event.clone());
    }
    let _ = last.send(event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use kube::runtime::watcher;

    fn applied(events: &[Event<u32>]) -> Vec<u32> {
        events
            .iter()
            .filter_map(|event| match event {
                Event::Apply(n) | Event::InitApply(n) => Some(*n),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn every_consumer_sees_every_event_in_order_and_errors_stay_with_the_watch() {
        let source: Vec<Result<Event<u32>, watcher::Error>> = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(1)),
            Ok(Event::InitDone),
            Err(watcher::Error::NoResourceVersion),
            Ok(Event::Apply(2)),
            Ok(Event::Delete(1)),
        ];
        let mut fan_out = FanOut::new("numbers", stream::iter(source).boxed());
        let first = fan_out.consumer();
        let second = fan_out.consumer();
        fan_out.run(futures::future::pending()).await;
        for consumer in [first, second] {
            let seen: Vec<Event<u32>> = consumer.map(|e| e.expect("no error passed on")).collect().await;
            assert_eq!(seen.len(), 5);
            assert_eq!(applied(&seen), [1, 2]);
            assert!(matches!(seen[4], Event::Delete(1)));
        }
    }

    #[tokio::test]
    async fn a_consumer_that_is_gone_does_not_hold_up_the_others() {
        let source = stream::iter((0..3).map(|n| Ok(Event::Apply(n))));
        let mut fan_out = FanOut::new("numbers", source.boxed());
        drop(fan_out.consumer());
        let kept = fan_out.consumer();
        fan_out.run(futures::future::pending()).await;
        let seen: Vec<Event<u32>> = kept.map(|e| e.expect("event")).collect().await;
        assert_eq!(applied(&seen), [0, 1, 2]);
    }

    #[tokio::test]
    async fn stop_ends_a_watch_that_never_ends() {
        let mut fan_out = FanOut::<u32>::new("numbers", stream::pending().boxed());
        let _consumer = fan_out.consumer();
        let stopped = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            fan_out.run(futures::future::ready(())),
        )
        .await;
        assert!(stopped.is_ok(), "run went on after stop");
    }
}
