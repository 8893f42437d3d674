//! One phase of the run (first apply, upgrade, idle, drift): its wall time, the CPU seconds
//! each process group spent in it and the requests the workload API servers served, less
//! their own idle traffic.

use std::time::{Duration, Instant};

use crate::measure::{CpuSnapshot, Procs, Requests, scrape};

pub struct Phase {
    name: &'static str,
    started: Instant,
    cpu: CpuSnapshot,
    requests: Requests,
}

pub struct PhaseCost {
    pub name: &'static str,
    pub wall: Duration,
    /// CPU seconds by process group (in the order of [`Procs::names`]) and of the machine.
    pub cpu: CpuSnapshot,
    pub requests: Requests,
}

impl Phase {
    pub async fn begin(name: &'static str, procs: &Procs, servers: &[kube::Client]) -> anyhow::Result<Phase> {
        let requests = scrape(servers).await?;
        Ok(Phase {
            name,
            started: Instant::now(),
            cpu: procs.snapshot(),
            requests,
        })
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends the phase; `baseline` is the servers' own requests per second.
    pub async fn end(
        self,
        procs: &Procs,
        servers: &[kube::Client],
        baseline: &Requests,
    ) -> anyhow::Result<PhaseCost> {
        let wall = self.started.elapsed();
        let cpu = procs.snapshot().since(&self.cpu);
        let requests = scrape(servers).await?.since(&self.requests);
        let requests = requests.minus(&baseline.scaled(wall.as_secs_f64()));
        eprintln!(
            "  {}: {:.1} s, {:.0} requests to the workload API servers",
            self.name,
            wall.as_secs_f64(),
            requests.total()
        );
        Ok(PhaseCost {
            name: self.name,
            wall,
            cpu,
            requests,
        })
    }
}

impl PhaseCost {
    /// `| phase | wall | <CPU s (cores) per group> | rest of the machine |`.
    pub fn cpu_cells(&self) -> String {
        let wall = self.wall.as_secs_f64().max(0.001);
        let cell = |secs: f64| format!("{secs:.1} s ({:.2})", secs / wall);
        let ours: f64 = self.cpu.groups.iter().sum();
        let mut row = format!("| {} | {:.1} s |", self.name, wall);
        for &secs in &self.cpu.groups {
            row.push_str(&format!(" {} |", cell(secs)));
        }
        row.push_str(&format!(" {} |", cell((self.cpu.machine - ours).max(0.0))));
        row
    }
}
