//! Integration tests, one binary for the crate (each file a module).

mod apply_common;
mod apply_drift;
mod apply_guards;
mod apply_restart;
mod apply_stack;
mod cluster_stacks;
mod example_stack;
mod fake_github;
mod git_source;
mod helm_checks;
mod install_chart;
mod install_cli;
mod operator_addon_restart;
mod operator_addons;
mod operator_common;
mod operator_defaults;
mod operator_e2e;
mod operator_hooks;
mod operator_provider;
mod operator_restart;
mod operator_stages;
mod pull_crash;
mod release_archives;
mod releases_cli;
mod render_lookup;
mod stack_cli;
