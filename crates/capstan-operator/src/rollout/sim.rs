//! A fleet simulator for the plan's tests: runs [`plan`] like the controller does (the status
//! written first, then the actions applied to the Clusters) and plays Cluster API and the addon
//! controller when a test says a Cluster became healthy.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::plan::{Action, Annotations, Observed, Plan, Target, plan};
use super::waves::{ClusterInfo, StackId};
use crate::api::rollout::{ClusterStackRolloutSpec, ClusterStackRolloutStatus, PreflightResult};

pub const V1: &str = "docker-ferrol-1-27-v1";
pub const V2: &str = "docker-ferrol-1-27-v2";
pub const V3: &str = "docker-ferrol-1-27-v3";

pub fn target(release: &str) -> Target {
    let kubernetes = match release {
        V1 => "v1.27.1",
        V2 => "v1.27.2",
        _ => "v1.27.3",
    };
    Target {
        release: release.into(),
        class: release.into(),
        kubernetes: Some(kubernetes.into()),
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
            now: 0,
            millis: 0,
            applied: Vec::new(),
            last: None,
        }
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
