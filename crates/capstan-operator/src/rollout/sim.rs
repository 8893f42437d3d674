//! A fleet simulator for the plan's tests: runs [`plan`] like the controller does (the status
//! written first, then the actions applied to the Clusters) and plays Cluster API and the addon
//! controller when a test says a Cluster became healthy.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::path::Hop;
use super::plan::{Action, Annotations, Observed, Plan, Target, plan};
use super::waves::{ClusterInfo, StackId};
use crate::api::rollout::{ClusterStackRolloutSpec, ClusterStackRolloutStatus, PreflightResult};

pub const V1: &str = "docker-ferrol-1-27-v1";
pub const V2: &str = "docker-ferrol-1-27-v2";
pub const V3: &str = "docker-ferrol-1-27-v3";

/// The release `docker-ferrol-1-M-vN` (also its class) with Kubernetes `v1.M.N`.
pub fn target(release: &str) -> Target {
    let (stack, version) = release.rsplit_once("-v").unwrap_or((release, "3"));
    let minor = stack.rsplit('-').next().unwrap_or("27");
    let patch: String = version.chars().take_while(char::is_ascii_digit).collect();
    Target {
        release: release.into(),
        class: release.into(),
        kubernetes: Some(format!("v1.{minor}.{patch}")),
    }
}

/// ClusterStack `ferrol-1-M` of stack `docker-ferrol-1-M`, its newest ready release `vN`
/// (`None`: none ready).
pub fn hop(minor: u32, newest_ready: Option<u32>) -> Hop {
    let stack = format!("docker-ferrol-1-{minor}");
    Hop {
        name: format!("ferrol-1-{minor}"),
        stack: StackId::parse(&stack).expect("stack"),
        newest_ready: newest_ready.map(|v| target(&format!("{stack}-v{v}"))),
    }
}

/// A Cluster of `tenant-a` on `class`, healthy there.
pub fn cluster(name: &str, class: &str, labels: &[(&str, &str)]) -> ClusterInfo {
    let mut c = super::waves::tests::cluster(name, class, labels);
    c.version = target(class).kubernetes;
    become_healthy(&mut c);
    c
}

/// What Cluster API and the addon controller report once `c` runs its class.
pub fn become_healthy(c: &mut ClusterInfo) {
    c.ready = true;
    c.topology_reconciled = true;
    c.control_plane_version = c.version.clone();
    c.addon_applied = c.class.clone();
    c.addon_ready = true;
}

pub struct Sim {
    pub spec: ClusterStackRolloutSpec,
    pub stack: StackId,
    pub status: ClusterStackRolloutStatus,
    pub clusters: Vec<ClusterInfo>,
    /// What `spec.version` resolves to now.
    pub target: Option<Target>,
    pub approve: Option<String>,
    pub resume: Option<String>,
    pub force: Option<String>,
    /// Each Cluster's pre-flight as gathered (`namespace/name`).
    pub preflight: BTreeMap<String, Vec<PreflightResult>>,
    /// [`Observed::preflight_required`] (off unless a test turns it on).
    pub preflight_required: bool,
    /// The namespace's ClusterStacks (paths across stacks).
    pub stacks: Vec<Hop>,
    /// Seconds since the start.
    pub now: i64,
    /// Milliseconds past `now` (an operator's clock is not on a second).
    pub millis: i64,
    /// Every action applied, in order.
    pub applied: Vec<Action>,
    pub last: Option<Plan>,
}

impl Sim {
    pub fn new(spec: ClusterStackRolloutSpec, clusters: Vec<ClusterInfo>) -> Sim {
        Sim {
            spec,
            stack: StackId::parse("docker-ferrol-1-27").expect("stack"),
            status: ClusterStackRolloutStatus::default(),
            clusters,
            target: Some(target(V2)),
            approve: None,
            resume: None,
            force: None,
            preflight: BTreeMap::new(),
            preflight_required: false,
            stacks: Vec::new(),
            now: 0,
            millis: 0,
            applied: Vec::new(),
            last: None,
        }
    }

    /// A rollout across stacks to `docker-ferrol-1-29-v1` with `from: auto`; ClusterStacks of
    /// 1.27, 1.28 and 1.29 in the namespace, each with its `v1` ready.
    pub fn across(mut spec: ClusterStackRolloutSpec, clusters: Vec<ClusterInfo>) -> Sim {
        spec.cluster_stack = "ferrol-1-29".into();
        spec.from = Some(crate::api::rollout::FromStacks::Auto);
        let mut sim = Sim::new(spec, clusters);
        sim.stack = StackId::parse("docker-ferrol-1-29").expect("stack");
        sim.target = Some(target("docker-ferrol-1-29-v1"));
        sim.stacks = vec![hop(27, Some(1)), hop(28, Some(1)), hop(29, Some(1))];
        sim
    }

    pub fn time(&self) -> Time {
        Time(Timestamp::from_millisecond((1_800_000_000 + self.now) * 1000 + self.millis).expect("time"))
    }

    /// The plan for the current state, without applying it.
    pub fn decide(&self) -> Plan {
        let observed = Observed {
            spec: &self.spec,
            namespace: "tenant-a",
            stack: &self.stack,
            generation: Some(1),
            annotations: Annotations {
                approve: self.approve.as_deref(),
                resume: self.resume.as_deref(),
                force: self.force.as_deref(),
            },
            status: &self.status,
            target: self.target.clone(),
            clusters: &self.clusters,
            preflight: &self.preflight,
            preflight_required: self.preflight_required,
            stacks: &self.stacks,
            now: self.time(),
        };
        plan(&observed)
    }

    /// One reconcile: plan, write the status, apply every action.
    pub fn step(&mut self) -> Plan {
        let plan = self.decide();
        self.status = plan.status.clone();
        for action in plan.actions.clone() {
            self.apply(&action);
        }
        self.last = Some(plan.clone());
        plan
    }

    /// One reconcile whose operator dies after writing the status: no action takes effect.
    pub fn step_killed(&mut self) -> Plan {
        let plan = self.decide();
        self.status = plan.status.clone();
        plan
    }

    /// Applies one action as the API server and Cluster API would: the class (and version)
    /// change, and the Cluster is not healthy until [`Sim::heal`].
    pub fn apply(&mut self, action: &Action) {
        let (Action::Switch {
            cluster,
            class,
            version,
        }
        | Action::RollBack {
            cluster,
            class,
            version,
        }) = action;
        if let Some(c) = self.clusters.iter_mut().find(|c| &c.key() == cluster) {
            c.class = Some(class.clone());
            if let Some(v) = version {
                c.version = Some(v.clone());
            }
            c.ready = false;
            c.topology_reconciled = false;
        }
        self.applied.push(action.clone());
    }

    pub fn heal(&mut self, name: &str) {
        if let Some(c) = self.clusters.iter_mut().find(|c| c.name == name) {
            become_healthy(c);
        }
    }

    pub fn heal_all(&mut self) {
        for c in &mut self.clusters {
            become_healthy(c);
        }
    }

    pub fn advance(&mut self, seconds: i64) {
        self.now += seconds;
    }

    /// Moves the clock by `millis` milliseconds.
    pub fn advance_millis(&mut self, millis: i64) {
        let total = self.now * 1000 + self.millis + millis;
        self.now = total.div_euclid(1000);
        self.millis = total.rem_euclid(1000);
    }

    /// The Clusters switched (to the target) by the applied actions, in order.
    pub fn switched(&self) -> Vec<String> {
        self.applied
            .iter()
            .filter_map(|a| match a {
                Action::Switch { cluster, .. } => Some(cluster.clone()),
                Action::RollBack { .. } => None,
            })
            .collect()
    }

    /// How often each Cluster was switched.
    pub fn switch_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for c in self.switched() {
            *counts.entry(c).or_default() += 1;
        }
        counts
    }

    pub fn class_of(&self, name: &str) -> Option<String> {
        self.clusters
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.class.clone())
    }
}
