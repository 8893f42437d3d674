//! What a phase of the run costs: CPU seconds per process group and the machine's busy CPU
//! seconds (from `/proc`), and the workload API servers' request counters
//! (`apiserver_request_total` from their `/metrics`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use anyhow::Context as _;
use kube::Client;

/// Named groups of processes whose CPU time is reported together (e.g. "workload etcds").
#[derive(Default)]
pub struct Procs {
    groups: Vec<(String, Vec<u32>)>,
}

impl Procs {
    pub fn add(&mut self, group: &str, pid: u32) {
        match self.groups.iter_mut().find(|(name, _)| name == group) {
            Some((_, pids)) => pids.push(pid),
            None => self.groups.push((group.to_string(), vec![pid])),
        }
    }

    /// A group with no process (yet): its column is in every run's table, 0 where it has none.
    #[allow(dead_code)] // the rollout benchmark's optional workload API server; not the fleet's
    pub fn declare(&mut self, group: &str) {
        if !self.groups.iter().any(|(name, _)| name == group) {
            self.groups.push((group.to_string(), Vec::new()));
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.groups.iter().map(|(name, _)| name.clone()).collect()
    }

    /// CPU seconds used so far by each group (a process that is gone counts 0), and by the
    /// whole machine.
    pub fn snapshot(&self) -> CpuSnapshot {
        CpuSnapshot {
            groups: self
                .groups
                .iter()
                .map(|(_, pids)| pids.iter().filter_map(|&pid| process_cpu_seconds(pid)).sum())
                .collect(),
            machine: machine_busy_seconds().unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CpuSnapshot {
    /// In the order of [`Procs::names`].
    pub groups: Vec<f64>,
    pub machine: f64,
}

impl CpuSnapshot {
    pub fn since(&self, earlier: &CpuSnapshot) -> CpuSnapshot {
        CpuSnapshot {
            groups: self
                .groups
                .iter()
                .zip(&earlier.groups)
                .map(|(now, then)| (now - then).max(0.0))
                .collect(),
            machine: (self.machine - earlier.machine).max(0.0),
        }
    }
}

/// Clock ticks per second of `/proc` times (`getconf CLK_TCK`; 100 on Linux in practice).
fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// utime + stime of a process (its threads included), in seconds.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_process_ticks(&stat).map(|ticks| ticks as f64 / clock_ticks())
}

/// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line; the command name in
/// parentheses may contain spaces, so fields are counted after its closing parenthesis.
fn parse_process_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Busy CPU seconds of all cores since boot (`/proc/stat`: user, nice, system, irq,
/// softirq, steal; guest time is part of user).
fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let busy = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| v.get(i)).sum::<u64>();
    Some(busy as f64 / clock_ticks())
}

/// Peak resident set size (VmHWM) of a process, in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// Resident set size now (VmRSS) of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Requests the API servers served, by verb, and their open long-running requests (watches).
#[derive(Debug, Clone, Default)]
pub struct Requests {
    pub by_verb: BTreeMap<String, f64>,
    /// By verb and resource (`APPLY configmaps`), the breakdown of a phase.
    pub by_resource: BTreeMap<String, f64>,
    /// The API servers' seconds spent serving them, by verb and resource
    /// (`apiserver_request_duration_seconds_sum`; watches left out: they last as long as they
    /// are open).
    pub seconds_by_resource: BTreeMap<String, f64>,
    pub open_watches: f64,
}

/// `a - b` per key of `a`, never below zero when `floor`.
fn per_key(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, floor: bool) -> BTreeMap<String, f64> {
    a.iter()
        .map(|(key, n)| {
            let d = n - b.get(key).copied().unwrap_or(0.0);
            (key.clone(), if floor { d.max(0.0) } else { d })
        })
        .collect()
}

impl Requests {
    pub fn total(&self) -> f64 {
        self.by_verb.values().sum()
    }

    /// `self - earlier` per verb (open watches: the later value).
    pub fn since(&self, earlier: &Requests) -> Requests {
        Requests {
            by_verb: per_key(&self.by_verb, &earlier.by_verb, false),
            by_resource: per_key(&self.by_resource, &earlier.by_resource, false),
            seconds_by_resource: per_key(&self.seconds_by_resource, &earlier.seconds_by_resource, false),
            open_watches: self.open_watches,
        }
    }

    /// Scaled by `factor` (e.g. a per-second baseline times a phase's seconds).
    pub fn scaled(&self, factor: f64) -> Requests {
        let scale = |m: &BTreeMap<String, f64>| m.iter().map(|(k, n)| (k.clone(), n * factor)).collect();
        Requests {
            by_verb: scale(&self.by_verb),
            by_resource: scale(&self.by_resource),
            seconds_by_resource: scale(&self.seconds_by_resource),
            open_watches: self.open_watches,
        }
    }

    /// `self - baseline` per verb and in open watches, never below zero.
    pub fn minus(&self, baseline: &Requests) -> Requests {
        Requests {
            by_verb: per_key(&self.by_verb, &baseline.by_verb, true),
            by_resource: per_key(&self.by_resource, &baseline.by_resource, true),
            seconds_by_resource: per_key(&self.seconds_by_resource, &baseline.seconds_by_resource, true),
            open_watches: (self.open_watches - baseline.open_watches).max(0.0),
        }
    }

    fn add(&mut self, other: &Requests) {
        for (verb, n) in &other.by_verb {
            *self.by_verb.entry(verb.clone()).or_default() += n;
        }
        for (key, n) in &other.by_resource {
            *self.by_resource.entry(key.clone()).or_default() += n;
        }
        for (key, secs) in &other.seconds_by_resource {
            *self.seconds_by_resource.entry(key.clone()).or_default() += secs;
        }
        self.open_watches += other.open_watches;
    }
}

/// The request counters of all `servers`, summed.
pub async fn scrape(servers: &[Client]) -> anyhow::Result<Requests> {
    let mut sum = Requests::default();
    for (i, client) in servers.iter().enumerate() {
        let request = http::Request::get("/metrics").body(Vec::new())?;
        let text = tokio::time::timeout(std::time::Duration::from_secs(30), client.request_text(request))
            .await
            .with_context(|| format!("workload API server {i}: /metrics did not answer within 30 s"))?
            .with_context(|| format!("workload API server {i}: reading /metrics"))?;
        sum.add(&parse_metrics(&text));
    }
    Ok(sum)
}

/// `apiserver_request_total` by verb and resource, the seconds spent on them, and the open WATCHes of a Prometheus text exposition
/// (`apiserver_longrunning_gauge` up to Kubernetes 1.22, `apiserver_longrunning_requests`
/// after).
pub fn parse_metrics(text: &str) -> Requests {
    let mut out = Requests::default();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else { continue };
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let verb_and_resource = || {
            let verb = label(labels, "verb").unwrap_or("?");
            let resource = match (label(labels, "resource"), label(labels, "subresource")) {
                (Some(r), Some(sub)) if !sub.is_empty() => format!("{r}/{sub}"),
                (Some(r), _) if !r.is_empty() => r.to_string(),
                _ => "(no resource)".to_string(),
            };
            (verb, format!("{verb} {resource}"))
        };
        match name {
            "apiserver_request_total" => {
                let (verb, key) = verb_and_resource();
                *out.by_verb.entry(verb.to_string()).or_default() += value;
                *out.by_resource.entry(key).or_default() += value;
            }
            "apiserver_request_duration_seconds_sum" => {
                let (verb, key) = verb_and_resource();
                if verb != "WATCH" {
                    *out.seconds_by_resource.entry(key).or_default() += value;
                }
            }
            "apiserver_longrunning_gauge" | "apiserver_longrunning_requests"
                if label(labels, "verb") == Some("WATCH") =>
            {
                out.open_watches += value;
            }
            _ => {}
        }
    }
    out
}

/// The value of label `key` in `a="1",b="2"` (values of these metrics hold no quotes).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split("\",").find_map(|pair| {
        let (k, v) = pair.split_once("=\"")?;
        (k.trim_start_matches(',') == key).then(|| v.trim_end_matches(['"', '}']))
    })
}
