#!/usr/bin/env bash
# A long run of the fleet simulator (crates/control/src/sim/): seeds one
# after the other from FIRST, for SECONDS of wall time (default 3600), in the
# release build; prints the seeds run, the simulated hours, the faults
# injected, and every seed that broke an invariant with its last steps.
#
#   bash scripts/sim-soak.sh                 # an hour from seed 0
#   SECONDS_BUDGET=600 FIRST=1000000 bash scripts/sim-soak.sh
#   LODE_SIM_SEED=1234 bash scripts/sim-soak.sh   # replay one seed
set -euo pipefail
cd "$(dirname "$0")/.."
export LODE_SIM_FIRST="${FIRST:-0}"
export LODE_SIM_SECONDS="${SECONDS_BUDGET:-3600}"
# Enough seeds never to run out before the budget.
export LODE_SIM_SEEDS="${SEEDS:-1000000000}"
exec cargo test --release -p lode-control --test sim fleets_converge_under_faults -- --nocapture
