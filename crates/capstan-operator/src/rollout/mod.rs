//! Rollouts (`ClusterStackRollout`) as pure decisions: which Cluster goes in which wave
//! ([`waves`]), whether a Cluster is healthy on the target ([`health`]), and what to do next
//! ([`plan`]) from the spec, the Clusters, the recorded status and the time. No I/O: the
//! controller observes, calls [`plan::plan`], writes the new status and only then acts, so a
//! killed operator resumes from what it recorded. `capstan rollout plan` uses [`waves::assign`]
//! offline.

pub mod cron;
pub mod health;
pub mod path;
pub mod plan;
pub mod preflight;
pub mod selector;
pub mod waves;
pub mod windows;

pub use path::{Hop, sources};
pub use plan::{Action, Annotations, Observed, Plan, Target, plan};
pub use waves::{Assignment, ClusterInfo, StackId, assign_across};

#[cfg(test)]
mod plan_gate_tests;
#[cfg(test)]
mod plan_path_tests;
#[cfg(test)]
mod plan_props;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod sim;
