#!/bin/sh
# The fleet measurements of issue 9 §5 in one command: `lode-bench fleet` with a
# primary and secondaries each in its own network namespace (10.53.0.0/24 on bridge
# lodefl0, made and removed by the benchmark; needs root), the same TSIG key for
# updates, transfers and NOTIFYs:
#   1. propagation (update acknowledged → answered by every secondary), 1000 updates
#      at 10/s and at 1000/s: Lode → 3 Lode; Knot → 3 Knot (the reference); Lode →
#      Lode, Knot, NSD, BIND (mixed, for information);
#   2. ixfr-load (BIND study §6.3.3): zero-loss query rate of a Lode, a Knot and a
#      BIND secondary of a Lode primary taking 0, 4, 8, 10, 32 and 1000 updates/s
#      (1M-record zone, 10 s steps, one binary search per cell);
#   3. axfr of the 20M ENUM zone: Lode → Knot and Lode → Lode, Knot → Knot; a
#      draining client first (the primary's send rate alone); peak memory.
#
#   scripts/bench-fleet.sh [OUT]
#
#   OUT  results folder (default results/fleet-DATE): one sub-folder per run with
#        fleet-EXPERIMENT.md and .json; all.md (the tables, concatenated); progress.log
#
# About 50 min on the 2-core development machine (propagation ~7 min, ixfr-load
# ~25 min, axfr ~20 min with 20M records twice: ~2 GB of zone files in WORK and up
# to ~10 GB of memory). Nothing else may run meanwhile (`pgrep -f lode-bench`).
# Environment: BENCH (the lode-bench binary; default: cargo build --release), LODE (the
# lode binary it starts; default: the one beside BENCH), WORK (scratch folder,
# default a temp dir under /var/tmp, removed), RECORDS (axfr size, default
# 20000000), EXTRA (more `lode-bench fleet` arguments for every run), SMOKE=1 (tiny
# parameters to check the harness: 50 updates at 10/s, 100k records, 3 s steps; ~4 min).
set -eu

case "${1:-}" in
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/results/fleet-$(date -u +%Y-%m-%d)}
if [ "$(id -u)" != 0 ]; then
    echo "bench-fleet: network namespaces need root" >&2
    exit 2
fi
if pgrep -f 'lode-bench( |$)' >/dev/null; then
    echo "bench-fleet: another lode-bench is running:" >&2
    pgrep -af 'lode-bench( |$)' >&2
    exit 2
fi
if [ -z "${BENCH:-}" ]; then
    (cd "$root" && cargo build --release -q --bin lode --bin lode-bench)
    BENCH=$root/target/release/lode-bench
fi
LODE=${LODE:-$(dirname "$BENCH")/lode}
temp_work=0
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /var/tmp/lode-fleet.XXXXXX)
    temp_work=1
fi
cleanup() {
    if [ "$temp_work" = 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
mkdir -p "$out"
log=$out/progress.log
: >"$out/all.md"

# run NAME ARGS...: one `lode-bench fleet` into OUT/NAME, its scratch in WORK/NAME.
run() {
    name=$1
    shift
    echo "== $name: lode-bench fleet $*" | tee -a "$log"
    # shellcheck disable=SC2086
    "$BENCH" --lode "$LODE" fleet "$@" --out "$out/$name" --work "$WORK/$name" ${EXTRA:-} 2>&1 | tee -a "$log"
    cat "$out/$name"/fleet-*.md >>"$out/all.md"
    echo >>"$out/all.md"
    rm -rf "${WORK:?}/$name"
}

if [ "${SMOKE:-0}" = 1 ]; then
    prop="--rates 10 --updates 50 --records 10000"
    ixfr="--rates 0,10 --records 100000 --step 3 --high 40000 --resolution 10000"
    records=100000
else
    prop="--rates 10,1000 --updates 1000"
    ixfr="--rates 0,4,8,10,32,1000 --records 1000000 --step 10 --high 100000"
    records=${RECORDS:-20000000}
fi

# shellcheck disable=SC2086
{
run propagation-lode --experiment propagation --primary lode --secondaries lode,lode,lode $prop
run propagation-knot --experiment propagation --primary knot --secondaries knot,knot,knot $prop
run propagation-mixed --experiment propagation --primary lode --secondaries lode,knot,nsd,bind $prop
run ixfr-load --experiment ixfr-load --primary lode --secondaries lode,knot,bind $ixfr
run axfr-lode --experiment axfr --primary lode --secondaries knot,lode --records "$records"
run axfr-knot --experiment axfr --primary knot --secondaries knot --records "$records"
}

echo "done: $out/all.md" | tee -a "$log"
