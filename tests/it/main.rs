//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod apply_common;
mod apply_drift;
mod apply_guards;
mod apply_restart;
mod apply_stack;
mod bench_stack;
mod chart_dependencies;
mod chart_provenance;
mod cluster_stacks;
mod example_stack;
mod fake_github;
mod get_cli;
mod git_source;
mod helm_checks;
mod install_chart;
mod install_cli;
mod module_cycles;
mod monitoring;
mod oci_source;
mod operator_addon_restart;
mod operator_addons;
mod operator_class_drift;
mod operator_class_namespace;
mod operator_common;
mod operator_defaults;
mod operator_drift_watch;
mod operator_e2e;
mod operator_hooks;
mod operator_oci;
mod operator_provider;
mod operator_restart;
mod operator_rollout;
mod operator_rollout_checks;
mod operator_rollout_diff;
mod operator_settings_cli;
mod operator_shards;
mod operator_stages;
mod operator_terminal;
mod operator_user_values;
mod operator_verify;
mod operator_watches;
mod operator_workload_cache;
mod pull_crash;
mod release_archives;
mod releases_cli;
mod releases_mirror;
mod render_lookup;
mod rollout_cli;
mod rollout_sim;
mod stack_cli;
mod verify_cosign;
mod verify_keyless;
mod webhook_rollout;
