#!/usr/bin/env bash
# Kills `capstan releases pull` (SIGKILL) at random points of a slowed download from the fake
# GitHub N times (default 20) and checks after each kill that no release in the cache reads as
# complete unless it is byte-identical to the source; a final pull must complete.
# CI runs the same test with 5 kills. CAPSTAN_PULL_SEED=S repeats a run's kill points.
set -euo pipefail
cd "$(dirname "$0")/.."
export CAPSTAN_PULL_KILLS="${1:-20}"
exec cargo test --test it pull_crash:: -- --nocapture
