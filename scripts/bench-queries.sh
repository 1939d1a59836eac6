#!/bin/sh
# Lode against its peers on one core: `lode-bench compare` with the echo,
# Lode, Knot DNS and NSD interleaved on seed 000's 500k ENUM set (fixed-rate CPU
# per answer for existing, NXDOMAIN and outside names; zero-loss rates), Lode on the
# 20M set in the same rounds (flatness), load time and memory of Lode, Knot and NSD
# on the 5M set, and Lode's memory with shared NAPTR RRsets.
#
#   scripts/bench-queries.sh [--all] [--quick] [OUT]
#
#   OUT      results folder (default results/queries-DATE); report.md, report.json,
#            plots and server logs go there (a partial report after every round)
#   --all    also BIND 9 and PowerDNS on the 500k set (~+10 min)
#   --quick  one round of 1 s steps, 2M instead of 20M, to see the tables fill (~3 min)
#
# About 30 min on the 2-core machine with the defaults (3 rounds, 5 s steps); the
# comparison is stopped after LIMIT seconds (default 2100, 2700 with --all) and
# keeps its last complete round. Environment: BENCH (the lode-bench binary; default:
# cargo build --release), LODE (the lode binary it starts; default: the one beside BENCH),
# WORK (scratch folder, default a temp dir, removed), LIMIT, SHARED (K, default 100),
# CPU_RATE (q/s, default 50000), EXTRA (more `lode-bench compare` arguments).
set -eu

all=0
quick=0
out=""
for a in "$@"; do
    case "$a" in
        --all) all=1 ;;
        --quick) quick=1 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        -*) echo "unknown option $a" >&2; exit 2 ;;
        *) out="$a" ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$root/results/queries-$(date -u +%Y-%m-%d)}
if [ -z "${BENCH:-}" ]; then
    (cd "$root" && cargo build --release -q --bin lode --bin lode-bench)
    BENCH=$root/target/release/lode-bench
fi
LODE=${LODE:-$(dirname "$BENCH")/lode}
# ~30 min for the defaults; BIND and PowerDNS add ~10 min.
limit=${LIMIT:-$((2100 + 600 * all))}
temp_work=0
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /tmp/lode-queries.XXXXXX)
    temp_work=1
fi
cleanup() {
    if [ "$temp_work" = 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

servers=echo,lode,knot,nsd
if [ "$all" = 1 ]; then servers=$servers,bind,powerdns; fi
if [ "$quick" = 1 ]; then
    set -- --runs 1 --step 1 --cpu-step 1 --resolution 8000 --flat-records 2000000 \
        --memory-records 1000000
else
    set -- --runs 3 --step 5 --cpu-step 5 --resolution 4000 --flat-records 20000000 \
        --memory-records 5000000
fi

mkdir -p "$out"
start=$(date +%s)
echo "query measurements into $out (scratch $WORK, at most $limit s); progress: tail -f $out/progress.log"
# shellcheck disable=SC2086 # EXTRA is split on purpose
timeout -k 30 "$limit" "$BENCH" --lode "$LODE" compare --out "$out" --work "$WORK" \
    --servers "$servers" --records 500000 --no-clients \
    --cpu-rate "${CPU_RATE:-50000}" \
    --flat-servers lode --memory-servers lode,knot,nsd --shared-naptr "${SHARED:-100}" \
    "$@" ${EXTRA:-} 2>"$out/progress.log" || {
    rc=$?
    echo "lode-bench compare stopped (exit $rc); see $out/progress.log" >&2
    if [ -f "$out/report.md" ]; then echo "the last complete round's report: $out/report.md" >&2; fi
    exit "$rc"
}
echo "done in $(( $(date +%s) - start )) s: $out/report.md"
