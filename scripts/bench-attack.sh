#!/bin/sh
# The "under attack" measurements in one command: `lode-bench attack`
# with Lode, Knot DNS and NSD side by side on the 500k ENUM set, each server pinned
# on CPU 0 with one worker, the tester (and the TCP abuse) on CPU 1:
#   1. overload: per server and mix (good names; good + 4× and + 24× random
#      non-existing names), the zero-loss rate R0, then fixed steps at 1.5 and 2 × R0:
#      answered q/s ÷ R0, wrong RCODEs (target: Lode ≥ 0.95 × R0 at 2 × R0);
#   2. CPU per answer with RRL, and RRL + cookies (valid server cookies in every
#      query), ÷ both off — Lode and Knot (target: Lode ≤ 1.05);
#   3. UDP zero-loss rate with a TCP abuse mix (10,000 idle connections attempted,
#      50 slow senders, 20 pipelined floods) ÷ without (target: Lode ≥ 0.95).
#
#   scripts/bench-attack.sh [--quick|--smoke] [OUT_DIR]
#
#   OUT_DIR  results folder (default results/attack-DATE): attack.md, attack.json,
#            logs/ (one per server start), progress.log
#   --quick  100k records, 1 s steps, coarse searches, one round (~4-5 min)
#   --smoke  20k records, 0.5 s steps, 2000 idle connections (~2.5 min; the harness only)
#
# About 20-25 min with the defaults on the 2-core development machine; stopped after
# LIMIT seconds (default 2700; the report written so far stays). Run as root (apt-get
# installs knot, nsd and dnsperf if missing). Nothing else may run meanwhile.
# Environment: BENCH (the lode-bench binary; default: cargo build --release), LODE (the
# lode binary it starts; default: the one beside BENCH), WORK (scratch folder, default a
# temp dir under /var/tmp, removed), LIMIT, EXTRA (more `lode-bench attack` arguments,
# e.g. `--tables 1` or `--servers lode,knot`).
set -eu

mode=""
out=""
for a in "$@"; do
    case "$a" in
        --quick|--smoke) mode="$a" ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        -*) echo "unknown option $a" >&2; exit 2 ;;
        *) out="$a" ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$root/results/attack-$(date -u +%Y-%m-%d)}
if [ "$(id -u)" != 0 ]; then
    echo "bench-attack: run as root (packages, pinning, 10,000 sockets)" >&2
    exit 2
fi
if pgrep -f 'lode-bench( |$)' >/dev/null; then
    echo "bench-attack: another lode-bench is running:" >&2
    pgrep -af 'lode-bench( |$)' >&2
    exit 2
fi
need=""
[ -x /usr/sbin/knotd ] || need="$need knot"
[ -x /usr/sbin/nsd ] || need="$need nsd"
[ -x /usr/bin/dnsperf ] || need="$need dnsperf"
command -v taskset >/dev/null || need="$need util-linux"
if [ -n "$need" ]; then
    echo "installing:$need"
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q $need >/dev/null
fi
if [ -z "${BENCH:-}" ]; then
    (cd "$root" && cargo build --release -q --bin lode --bin lode-bench)
    BENCH=$root/target/release/lode-bench
fi
LODE=${LODE:-$(dirname "$BENCH")/lode}
temp_work=0
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /var/tmp/lode-attack.XXXXXX)
    temp_work=1
fi
cleanup() {
    if [ "$temp_work" = 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
# The benchmark stops its servers itself on SIGINT/SIGTERM; wait for it.
trap 'cleanup; exit 130' INT TERM

case "$mode" in
    --quick) limit=${LIMIT:-900} ;;
    --smoke) limit=${LIMIT:-600} ;;
    *) limit=${LIMIT:-2700} ;;
esac

mkdir -p "$out"
start=$(date +%s)
echo "attack measurements into $out (scratch $WORK, at most $limit s); progress: tail -f $out/progress.log"
# shellcheck disable=SC2086 # mode and EXTRA are split on purpose
timeout -k 30 "$limit" "$BENCH" --lode "$LODE" attack --out "$out" --work "$WORK" --no-install \
    --servers lode,knot,nsd $mode ${EXTRA:-} 2>"$out/progress.log" || {
    rc=$?
    echo "lode-bench attack stopped (exit $rc); see $out/progress.log" >&2
    if [ -f "$out/attack.md" ]; then echo "the report so far: $out/attack.md" >&2; fi
    exit "$rc"
}
echo "done in $(( $(date +%s) - start )) s: $out/attack.md"
