//! Kubernetes Events (`events.k8s.io/v1`) about capstan's objects. An Event that repeats one
//! already published — same object, related object, type, reason, action *and* message —
//! within [`SERIES_WINDOW`] becomes a series of it (`series.count`), as client-go's recorder
//! does; one with another message is an Event of its own. (kube-runtime's recorder keys its
//! series without the message, so a ClusterAddon's second "applied (14 objects)" counted as a
//! repeat of the first "applied (15 objects)", which kept its old text.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as KubeEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};

pub use kube::runtime::events::{Event, EventType, Reporter};

/// How long an Event is remembered to count its repeats; a repeat after that is a new Event.
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_secs(6 * 60);

/// What makes two Events the same: everything but the time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeriesKey {
    regarding: [Option<String>; 5],
    related: Option<[Option<String>; 5]>,
    warning: bool,
    reason: String,
    action: String,
    note: Option<String>,
}

fn reference_key(r: &ObjectReference) -> [Option<String>; 5] {
    [
        r.api_version.clone(),
        r.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
        r.uid.clone(),
    ]
}

impl SeriesKey {
    pub fn of(event: &Event, regarding: &ObjectReference) -> SeriesKey {
        SeriesKey {
            regarding: reference_key(regarding),
            related: event.secondary.as_ref().map(reference_key),
            warning: event.type_ == EventType::Warning,
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
        }
    }
}

/// What to send for an Event: a new Event, or the published one with its series counted on.
#[derive(Clone, Debug, PartialEq)]
pub enum Publish {
    Create,
    /// The Event's name and its series after this repeat.
    Repeat {
        name: String,
        count: i32,
    },
}

/// Whether `last` (the Event published for the same key, with its series count so far and when
/// it was last seen) is repeated at `now` or a new Event is due.
pub fn publish_decision(last: Option<(String, i32, Timestamp)>, now: Timestamp) -> Publish {
    match last {
        Some((name, count, seen)) if now.duration_since(seen) < SERIES_WINDOW => Publish::Repeat {
            name,
            // The first repeat makes a series of two.
            count: count.max(1) + 1,
        },
        _ => Publish::Create,
    }
}

/// One published Event as remembered: its name, series count (1 before a repeat) and when it
/// was last seen.
#[derive(Clone, Debug)]
struct Published {
    event: KubeEvent,
    count: i32,
    seen: Timestamp,
}

/// Publishes Events, counting repeats into series. Cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    published: Arc<Mutex<HashMap<SeriesKey, Published>>>,
}

impl Recorder {
    pub fn new(client: Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            published: Arc::default(),
        }
    }

    /// Publishes `event` about `regarding` (in its namespace, else `default`): a new Event, or
    /// a repeat of the same one counted in its series.
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = SeriesKey::of(event, regarding);
        // Not held across the request: one slow Event must not hold up every other.
        let last = {
            let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
            published.retain(|_, p| now.duration_since(p.seen) < SERIES_WINDOW);
            published.get(&key).cloned()
        };
        let decision = publish_decision(last.as_ref().map(|p| (p.event.name_any(), p.count, p.seen)), now);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), namespace);
        let (event, count) = match (decision, last) {
            (Publish::Repeat { name, count }, Some(last)) => {
                let series = EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                };
                let patch = serde_json::json!({"series": &series});
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {
                        let mut event = last.event;
                        event.series = Some(series);
                        (event, count)
                    }
                    // Deleted meanwhile (by its TTL or a user): published anew.
                    Err(e) if crate::kube_error::is_not_found(&e) => {
                        let new = self.new_event(event, regarding, namespace, now);
                        (api.create(&PostParams::default(), &new).await?, 1)
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => {
                let new = self.new_event(event, regarding, namespace, now);
                (api.create(&PostParams::default(), &new).await?, 1)
            }
        };
        self.published.lock().unwrap_or_else(|p| p.into_inner()).insert(
            key,
            Published {
                event,
                count,
                seen: now,
            },
        );
        Ok(())
    }

    fn new_event(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        namespace: &str,
        now: Timestamp,
    ) -> KubeEvent {
        let name = regarding.name.as_deref().unwrap_or(&self.reporter.controller);
        KubeEvent {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_string(),
            ),
            reason: Some(event.reason.clone()),
            action: Some(event.action.clone()),
            note: event.note.clone(),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            ..KubeEvent::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).expect("time")
    }

    /// The Event published before: its name, series count and when it was seen (seconds).
    type Last = Option<(&'static str, i32, i64)>;

    #[test]
    fn repeats_within_the_window_count_on() {
        #[rustfmt::skip]
        let table: &[(Last, i64, Publish)] = &[
            (None, 0, Publish::Create),
            (Some(("a.1", 1, 0)), 10, Publish::Repeat { name: "a.1".into(), count: 2 }),
            (Some(("a.1", 2, 0)), 10, Publish::Repeat { name: "a.1".into(), count: 3 }),
            (Some(("a.1", 7, 0)), 359, Publish::Repeat { name: "a.1".into(), count: 8 }),
            (Some(("a.1", 7, 0)), 360, Publish::Create),
        ];
        for (last, now, want) in table {
            let last = last.map(|(name, count, seen)| (name.to_string(), count, at(seen)));
            assert_eq!(
                &publish_decision(last.clone(), at(*now)),
                want,
                "{last:?} at {now}"
            );
        }
    }

    #[test]
    fn events_with_another_message_are_other_events() {
        let object = ObjectReference {
            kind: Some("ClusterAddon".into()),
            namespace: Some("t".into()),
            name: Some("cluster-addon-c1".into()),
            ..ObjectReference::default()
        };
        let event = |note: &str| Event {
            type_: EventType::Normal,
            reason: "Ready".into(),
            note: Some(note.into()),
            action: "Apply".into(),
            secondary: None,
        };
        let first = SeriesKey::of(&event("15 objects"), &object);
        assert_eq!(first, SeriesKey::of(&event("15 objects"), &object));
        assert_ne!(first, SeriesKey::of(&event("14 objects"), &object));
        let other = ObjectReference {
            name: Some("cluster-addon-c2".into()),
            ..object.clone()
        };
        assert_ne!(first, SeriesKey::of(&event("15 objects"), &other));
    }
}
