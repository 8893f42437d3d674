//! The watch of one kind with one label selector, kept alive: capstan's own, leaner than
//! kube-runtime's `watcher` (issue 36 §1/§3). A drift watch keeps no objects, so it needs no
//! listing of them: it WATCHes from a resourceVersion it is given (where the apply left the
//! objects) and LISTs only to learn one when it has none (one page of one item: the list's
//! resourceVersion is all it reads), when the server says its resourceVersion expired (410
//! Gone), or when it is not a decimal number (resourceVersions are opaque by contract; only a
//! number is compared or trusted here). It follows the resourceVersion of every event and
//! bookmark, and watches again from it when a watch ends.
//!
//! Lean: each line of the watch is decoded as it arrives, metadata only (the request asks for
//! `PartialObjectMetadata`); a line split across chunks is buffered, and the buffer is released
//! once the line is complete, so an idle watch holds none.
//!
//! What to do after each outcome is [`after`] and [`next`] (pure); the loop is a thin shell.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Body as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{DynamicObject, ListParams, WatchParams};
use kube::core::PartialObjectMeta;
use serde::Deserialize;

/// What one request of the watch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// An object changed or went; its resourceVersion (`None` if the server sent none).
    Event(Option<String>),
    /// A bookmark: nothing changed up to this resourceVersion.
    Bookmark(String),
    /// The watch ended as the server ends every watch (its timeout).
    Ended,
    /// 410 Gone: the resourceVersion is older than the server keeps.
    Gone,
    /// Any other error (connection, timeout, server error, a line that does not decode).
    Failed,
    /// A listing answered, at this resourceVersion.
    Listed(String),
}

/// Where the watch stands between requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    /// The resourceVersion seen last, when it is a decimal number.
    pub version: Option<String>,
    /// Errors in a row (the backoff's exponent).
    pub failures: u32,
}

/// The next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Watch { from: String },
    List,
}

/// A resourceVersion this watcher compares and watches from: a decimal number.
pub fn usable(version: &str) -> Option<u64> {
    version.parse().ok()
}

/// The position after `outcome`.
pub fn after(position: &Position, outcome: &Outcome) -> Position {
    let follow = |version: &str| Position {
        version: usable(version).map(|_| version.to_string()),
        failures: 0,
    };
    match outcome {
        Outcome::Event(Some(version)) | Outcome::Bookmark(version) | Outcome::Listed(version) => {
            follow(version)
        }
        // An event without a resourceVersion cannot be followed: list to be sure.
        Outcome::Event(None) => Position::default(),
        Outcome::Ended => Position {
            failures: 0,
            ..position.clone()
        },
        Outcome::Gone => Position::default(),
        Outcome::Failed => Position {
            failures: position.failures.saturating_add(1),
            ..position.clone()
        },
    }
}

/// The request to send from `position` (after [`backoff`] of its failures).
pub fn next(position: &Position) -> Next {
    match &position.version {
        Some(from) if usable(from).is_some() => Next::Watch { from: from.clone() },
        _ => Next::List,
    }
}

/// The first retry after an error waits about this long, doubling per failure in a row...
const BACKOFF_BASE: Duration = Duration::from_secs(1);
/// ...up to this: a cluster down for long is tried every half minute or so, by each kind.
const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// How long to wait before the next request after `failures` errors in a row; `unit` (in
/// `[0, 1)`) places it between half and the whole of the exponential step, so the watches of
/// a cluster that failed together do not retry together.
pub fn backoff(failures: u32, unit: f64) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let step = BACKOFF_BASE
        .saturating_mul(1u32 << (failures - 1).min(16))
        .min(BACKOFF_CAP);
    step.mul_f64(0.5 + 0.5 * within_unit(unit))
}

/// The shortest and longest `timeoutSeconds` of a watch. kube-runtime asks 290 s, so each
/// watch is renewed every five minutes — 7.4 renewal requests per Cluster during the
/// benchmark's switch, and two a minute per Cluster idle. Renewing finds no dead connection
/// that the HTTP/2 pings of `capstan_apply::client` would not find within 45 s, and a watch
/// that ends early resumes from its resourceVersion; so a watch here lasts as long as the
/// API server itself lets a watch without a timeout last (`--min-request-timeout`, 1,800 s by
/// default, randomized up to twice that), spread over the range so the watches of a fleet
/// started together are not renewed together.
pub const WATCH_TIMEOUT: (u32, u32) = (1800, 3600);

/// The watch's `timeoutSeconds` for `unit` in `[0, 1)`.
pub fn watch_timeout(unit: f64) -> u32 {
    let (low, high) = WATCH_TIMEOUT;
    low + ((high - low) as f64 * within_unit(unit)) as u32
}

/// `unit` clamped to `[0, 1]`; the middle when it is not a number.
fn within_unit(unit: f64) -> f64 {
    if unit.is_finite() {
        unit.clamp(0.0, 1.0)
    } else {
        0.5
    }
}

/// How long past its `timeoutSeconds` a watch may stay open before it is ended here: a server
/// that never ends it cannot hold the watcher.
const WATCH_GRACE: Duration = Duration::from_secs(60);
/// How long a listing may take, its body included (the client's timeout covers only the
/// answer's start).
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// What the watcher hands out.
#[derive(Debug)]
pub enum Seen {
    /// The watch follows a resourceVersion: from now on every change is an event. `again`: it
    /// had to list after it had a history (expired, or unusable), so changes in the gap are
    /// unseen.
    Following {
        again: bool,
    },
    Changed(PartialObjectMeta<DynamicObject>),
    Deleted(PartialObjectMeta<DynamicObject>),
    /// An error; the watcher retries after a backoff.
    Failed(String),
}

/// The resourceVersion a watch saw last (a usable one), shared with its owner: a watch
/// started again for more inventories starts from here.
#[derive(Debug, Default)]
pub struct LastSeen(Mutex<Option<String>>);

impl LastSeen {
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, version: Option<&str>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = version.map(str::to_string);
    }
}

/// One kind's watch: its URL (all namespaces or one) and label selector.
pub struct Watcher {
    pub client: Client,
    /// The resource's URL path (`/apis/apps/v1/deployments`, or within a namespace).
    pub url: String,
    pub selector: String,
}

impl Watcher {
    /// Keeps the watch alive for good (until its task is aborted), from `from` when given,
    /// handing out what it sees to `on`; `seen` follows its resourceVersion.
    pub async fn run(self, from: Option<String>, seen: Arc<LastSeen>, mut on: impl FnMut(Seen)) {
        let mut position = Position {
            version: from.filter(|v| usable(v).is_some()),
            failures: 0,
        };
        // A history exists when the watch starts from the apply's resourceVersion, or after
        // its first listing: listing again then leaves a gap unseen.
        let mut history = position.version.is_some();
        loop {
            tokio::time::sleep(backoff(position.failures, crate::jitter::random_unit())).await;
            match next(&position) {
                Next::List => {
                    // Boxed, as the request below: a watch task lives as long as its watch,
                    // and its size is that of its largest state — sending a request takes
                    // kube's client stack, following a stream does not.
                    let outcome = Box::pin(self.list()).await;
                    position = after(&position, &outcome);
                    match outcome {
                        Outcome::Listed(_) if position.version.is_some() => {
                            on(Seen::Following { again: history });
                            history = true;
                        }
                        Outcome::Listed(version) => {
                            // Not a number: nothing to watch from. Wait as after an error.
                            position.failures = position.failures.saturating_add(1);
                            on(Seen::Failed(format!("unusable resourceVersion {version:?}")));
                        }
                        _ => on(Seen::Failed("listing failed".into())),
                    }
                }
                Next::Watch { from } => {
                    let outcome = self.watch(&from, &mut position, &seen, &mut on).await;
                    if outcome == Outcome::Failed {
                        on(Seen::Failed("watch failed".into()));
                    }
                    position = after(&position, &outcome);
                }
            }
            seen.set(position.version.as_deref());
        }
    }

    /// One page of one object: the list's resourceVersion is all a drift watch needs.
    async fn list(&self) -> Outcome {
        let params = ListParams::default().labels(&self.selector).limit(1);
        let request = match kube::core::Request::new(&self.url).list_metadata(&params) {
            Ok(request) => request,
            Err(e) => {
                tracing::debug!(error = %e, "drift watch: list request");
                return Outcome::Failed;
            }
        };
        let answer = tokio::time::timeout(LIST_TIMEOUT, self.client.request::<ListHead>(request)).await;
        match answer {
            Ok(Ok(list)) => Outcome::Listed(list.metadata.resource_version.unwrap_or_default()),
            Ok(Err(e)) => {
                tracing::debug!(url = %self.url, error = %e, "drift watch: list failed");
                if status_code(&e) == Some(410) {
                    Outcome::Gone
                } else {
                    Outcome::Failed
                }
            }
            Err(_) => Outcome::Failed,
        }
    }

    /// One watch request from `from`, until it ends; hands out its events, follows their
    /// resourceVersions in `position` and `seen`.
    async fn watch(
        &self,
        from: &str,
        position: &mut Position,
        seen: &LastSeen,
        on: &mut impl FnMut(Seen),
    ) -> Outcome {
        let timeout = watch_timeout(crate::jitter::random_unit());
        let params = WatchParams::default().labels(&self.selector).timeout(timeout);
        let request = match kube::core::Request::new(&self.url).watch_metadata(&params, from) {
            Ok(request) => request.map(kube::client::Body::from),
            Err(e) => {
                tracing::debug!(error = %e, "drift watch: watch request");
                return Outcome::Failed;
            }
        };
        let limit = Duration::from_secs(timeout.into()) + WATCH_GRACE;
        let outcome = tokio::time::timeout(limit, async {
            let response = match Box::pin(self.client.send(request)).await {
                Ok(response) => response,
                Err(e) => {
                    tracing::debug!(url = %self.url, error = %e, "drift watch: watch failed");
                    return Outcome::Failed;
                }
            };
            match response.status().as_u16() {
                200 => {}
                410 => return Outcome::Gone,
                code => {
                    tracing::debug!(url = %self.url, code, "drift watch: watch refused");
                    return Outcome::Failed;
                }
            }
            on(Seen::Following { again: false });
            let mut body = response.into_body();
            let mut lines = Lines::default();
            let mut read_any = false;
            loop {
                let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
                let chunk = match frame {
                    // A watch the server ends before sending anything (not even a bookmark)
                    // is retried after a backoff, never in a tight loop.
                    None if !read_any => return Outcome::Failed,
                    None => return Outcome::Ended,
                    Some(Err(e)) => {
                        tracing::debug!(url = %self.url, error = %e, "drift watch: stream broke");
                        return Outcome::Failed;
                    }
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => data,
                        Err(_) => continue,
                    },
                };
                let mut ended = None;
                lines.feed(&chunk, |line| {
                    read_any = true;
                    if ended.is_some() {
                        return;
                    }
                    let (outcome, handed) = read_line(line);
                    match outcome {
                        Outcome::Event(_) | Outcome::Bookmark(_) => {
                            *position = after(position, &outcome);
                            seen.set(position.version.as_deref());
                            if let Some(handed) = handed {
                                on(handed);
                            }
                            if position.version.is_none() {
                                // Not followable: end here, list.
                                ended = Some(Outcome::Gone);
                            }
                        }
                        other => ended = Some(other),
                    }
                });
                if let Some(outcome) = ended {
                    return outcome;
                }
            }
        })
        .await;
        outcome.unwrap_or(Outcome::Ended)
    }
}

/// The HTTP status of a kube error, if the server answered one.
fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A metadata list's head; its items (unknown fields here) are skipped unread.
#[derive(Deserialize)]
struct ListHead {
    #[serde(default)]
    metadata: ListMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    resource_version: Option<String>,
}

/// One line of a watch: its type and object (an object's metadata, or a Status).
#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    object: LineObject,
}

#[derive(Deserialize, Default)]
struct LineObject {
    #[serde(default)]
    metadata: ObjectMeta,
    /// A Status's code (an ERROR line).
    code: Option<u16>,
}

/// What one line of a watch is, and what it hands out.
fn read_line(line: &[u8]) -> (Outcome, Option<Seen>) {
    let line: Line = match serde_json::from_slice(line) {
        Ok(line) => line,
        Err(e) => {
            tracing::debug!(error = %e, "drift watch: a line does not decode");
            return (Outcome::Failed, None);
        }
    };
    let version = line.object.metadata.resource_version.clone();
    let meta = || PartialObjectMeta {
        types: None,
        metadata: line.object.metadata.clone(),
        _phantom: Default::default(),
    };
    match line.kind.as_str() {
        "ADDED" | "MODIFIED" => (Outcome::Event(version), Some(Seen::Changed(meta()))),
        "DELETED" => (Outcome::Event(version), Some(Seen::Deleted(meta()))),
        "BOOKMARK" => match version {
            Some(version) => (Outcome::Bookmark(version), None),
            None => (Outcome::Failed, None),
        },
        "ERROR" if line.object.code == Some(410) => (Outcome::Gone, None),
        _ => (Outcome::Failed, None),
    }
}

/// Splits a watch's chunks into lines, holding only the unfinished tail of the last chunk.
#[derive(Default)]
struct Lines {
    tail: Vec<u8>,
}

impl Lines {
    /// Hands each complete line of `chunk` (with the tail before it) to `line`; keeps the rest.
    fn feed(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let (head, after) = rest.split_at(end);
            if self.tail.is_empty() {
                if !head.is_empty() {
                    line(head);
                }
            } else {
                self.tail.extend_from_slice(head);
                line(&self.tail);
                // Released: an idle watch holds no buffer.
                self.tail = Vec::new();
            }
            rest = &after[1..];
        }
        self.tail.extend_from_slice(rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task of a watch lives as long as the watch (a fleet holds one per workload cluster
    /// and kind): the bytes it takes while it streams are kept once per watch.
    #[tokio::test]
    async fn a_watch_task_is_small() {
        let unused = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, tower::BoxError>("no server".into())
        });
        let watcher = Watcher {
            client: Client::new(unused, "default"),
            url: "/api/v1/configmaps".into(),
            selector: String::new(),
        };
        let run = watcher.run(None, Arc::default(), |_| {});
        let size = std::mem::size_of_val(&run);
        eprintln!("a watch task: {size} bytes");
        // 1,184 bytes in a debug build, 1,840 before its requests were boxed (the sending
        // state of kube's client held in every task for the watch's whole life).
        assert!(size <= 1_536, "a watch task takes {size} bytes");
    }

    fn at(version: Option<&str>, failures: u32) -> Position {
        Position {
            version: version.map(str::to_string),
            failures,
        }
    }

    #[test]
    fn what_comes_after_each_outcome() {
        let watch = |from: &str| Next::Watch { from: from.into() };
        let some = |v: &str| Some(v.to_string());
        #[rustfmt::skip]
        let table = [
            // (from, outcome, then, next)
            (at(Some("10"), 0), Outcome::Event(some("12")), at(Some("12"), 0), watch("12")),
            (at(Some("10"), 0), Outcome::Bookmark("15".into()), at(Some("15"), 0), watch("15")),
            // The watch ended (its timeout): again from where it was.
            (at(Some("15"), 0), Outcome::Ended, at(Some("15"), 0), watch("15")),
            // An error: again from where it was, after a backoff.
            (at(Some("15"), 2), Outcome::Failed, at(Some("15"), 3), watch("15")),
            // Expired: list.
            (at(Some("15"), 2), Outcome::Gone, at(None, 0), Next::List),
            // Nothing to start from: list; a failed listing lists again, backed off.
            (at(None, 0), Outcome::Failed, at(None, 1), Next::List),
            (at(None, 1), Outcome::Listed("20".into()), at(Some("20"), 0), watch("20")),
            // Opaque resourceVersions are not followed: list.
            (at(None, 0), Outcome::Listed("a1b2".into()), at(None, 0), Next::List),
            (at(Some("15"), 0), Outcome::Event(some("x")), at(None, 0), Next::List),
            (at(Some("15"), 0), Outcome::Event(None), at(None, 0), Next::List),
            (at(Some("15"), 0), Outcome::Bookmark("".into()), at(None, 0), Next::List),
        ];
        for (from, outcome, then, want) in table {
            let got = after(&from, &outcome);
            assert_eq!(got, then, "{from:?} {outcome:?}");
            assert_eq!(next(&got), want, "{from:?} {outcome:?}");
        }
        // A version given that is not a number is listed for.
        assert_eq!(next(&at(Some("abc"), 0)), Next::List);
    }

    #[test]
    fn errors_back_off_exponentially_with_jitter_up_to_a_cap() {
        assert_eq!(backoff(0, 0.9), Duration::ZERO);
        assert_eq!(backoff(1, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(1, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(3, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(30, 1.0), BACKOFF_CAP);
        assert_eq!(backoff(u32::MAX, 0.0), BACKOFF_CAP / 2);
        assert_eq!(backoff(2, f64::NAN), Duration::from_millis(1500));
    }

    #[test]
    fn watch_timeouts_spread_over_their_range() {
        let (low, high) = WATCH_TIMEOUT;
        assert_eq!(watch_timeout(0.0), low);
        assert!(watch_timeout(0.999) < high);
        assert_eq!(watch_timeout(0.5), (low + high) / 2);
        assert_eq!(watch_timeout(f64::INFINITY), (low + high) / 2);
    }

    #[test]
    fn lines_are_read_as_they_complete_and_an_idle_reader_holds_no_buffer() {
        let mut lines = Lines::default();
        let mut got: Vec<String> = Vec::new();
        let feed = |lines: &mut Lines, got: &mut Vec<String>, chunk: &str| {
            lines.feed(chunk.as_bytes(), |l| {
                got.push(String::from_utf8_lossy(l).into_owned())
            });
        };
        feed(&mut lines, &mut got, "{\"a\":1}\n{\"b\"");
        assert_eq!(lines.tail, b"{\"b\"");
        feed(&mut lines, &mut got, ":2");
        feed(&mut lines, &mut got, "}\n\n{\"c\":3}\n");
        assert_eq!(lines.tail.capacity(), 0, "released after the line completed");
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }

    #[test]
    fn a_line_is_an_event_a_bookmark_or_the_end() {
        let object = |kind: &str| {
            format!(
                r#"{{"type":"{kind}","object":{{"kind":"PartialObjectMetadata","metadata":{{"name":"web","namespace":"ns","resourceVersion":"77","labels":{{"x":"y"}},"managedFields":[{{"manager":"kubectl","operation":"Update","time":"2026-01-01T00:00:00Z","fieldsV1":{{"f:spec":{{}}}}}}]}}}}}}"#
            )
        };
        let (outcome, seen) = read_line(object("MODIFIED").as_bytes());
        assert_eq!(outcome, Outcome::Event(Some("77".into())));
        let Some(Seen::Changed(meta)) = seen else {
            panic!("not a change");
        };
        assert_eq!(meta.metadata.name.as_deref(), Some("web"));
        assert_eq!(meta.metadata.managed_fields.map(|m| m.len()), Some(1));
        let (outcome, seen) = read_line(object("DELETED").as_bytes());
        assert_eq!(outcome, Outcome::Event(Some("77".into())));
        assert!(matches!(seen, Some(Seen::Deleted(_))));
        let bookmark = br#"{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","metadata":{"resourceVersion":"90"}}}"#;
        assert_eq!(read_line(bookmark).0, Outcome::Bookmark("90".into()));
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410}}"#;
        assert_eq!(read_line(gone).0, Outcome::Gone);
        let other = br#"{"type":"ERROR","object":{"kind":"Status","code":500}}"#;
        assert_eq!(read_line(other).0, Outcome::Failed);
        assert_eq!(read_line(b"not json").0, Outcome::Failed);
    }
}
