#!/usr/bin/env bash
# The large-set figures of the query comparison, which `lode-bench compare` does not take:
# target 5 (100 M records in one machine) and target 6 (zone text parse rate on
# the cores, start of the 20 M set from snapshots).
#
#   scripts/bench-big.sh [OUT]      (default OUT: results/big-DATE)
#
# Steps (each bounded in time; ~10 min here; needs ~10 GB of disk under WORK
# and ~4 GB of memory):
#   1. lode-bench gen enum: 100 M numbers in 100 zones (1 M query lines per kind).
#   2. lode serve on them (1 UDP worker, pinned to CPU 0): start → first answer
#      for a name of the last zone, resident memory after the load (VmRSS) and
#      its peak (VmHWM), then RFC 8219 zero-loss searches from CPU 1 for
#      existing and NXDOMAIN names (5 s steps, 3 searches).
#   3. The 20 M set (4 zones, prefix 131): `lode check --syntax-only` (parse
#      only) and `lode check` (parse + build) on all cores, three times each.
#   4. `lode snapshot` of the 20 M set, then `lode serve --snapshot-dir`:
#      start → first answer in the last zone, three times.
# Writes OUT/big.md (tables with the commands) and OUT/big.log.
# Environment: BENCH (the lode-bench binary; default: cargo build --release),
# LODE (the lode binary; default: the one beside BENCH), WORK (scratch folder,
# default a temp dir, removed at the end), RECORDS (default 100000000).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/results/big-$(date -u +%Y-%m-%d)}
mkdir -p "$out"
if [ -z "${BENCH:-}" ]; then
    (cd "$root" && cargo build --release -q --bin lode --bin lode-bench)
    BENCH=$root/target/release/lode-bench
fi
LODE=${LODE:-$(dirname "$BENCH")/lode}
records=${RECORDS:-100000000}
temp_work=0
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /tmp/lode-big.XXXXXX)
    temp_work=1
fi
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ "$temp_work" = 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
command -v dig >/dev/null || apt-get install -y -q dnsutils >/dev/null

log=$out/big.log
md=$out/big.md
: >"$log"
say() { echo "$*" | tee -a "$log"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
kib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
zone_args() { for f in "$1"/*.zone; do printf -- '-z %s=%s ' "$(basename "$f" .zone)" "$f"; done; }

# serve SET PORT [args...]: starts lode serve pinned to CPU 0; waits (≤ 900 s)
# until a name of the last zone answers; sets SERVE_S (seconds) and SERVE_PID.
serve() {
    local set=$1 port=$2
    shift 2
    local q
    q=$(tail -n 1 "$set/queries-existing.txt" | cut -d' ' -f1)
    local t0
    t0=$(now)
    # shellcheck disable=SC2046
    taskset -c 0 "$LODE" serve -l 127.0.0.1:"$port" --workers 1 --control "$WORK/ctl.$port" \
        "$@" $(zone_args "$set") >>"$log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    local deadline=$(($(date +%s) + 900))
    until dig @127.0.0.1 -p "$port" "$q" NAPTR +norec +time=1 +tries=1 2>/dev/null |
        grep -q 'status: NOERROR'; do
        if ! kill -0 "$pid" 2>/dev/null || [ "$(date +%s)" -gt "$deadline" ]; then
            say "server on port $port did not answer"
            exit 1
        fi
        sleep 0.05
    done
    SERVE_S=$(secs "$t0" "$(now)")
    SERVE_PID=$pid
}
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
# rate SET PORT KIND EXPECT: median zero-loss rate of 3 searches.
rate() {
    taskset -c 1 "$BENCH" rate --server 127.0.0.1:"$2" --queries "$1/queries-$3.txt" \
        --expect "$4" --duration 5 --repeat 3 --high 300000 --resolution 4000 2>>"$log" |
        tee -a "$log" | sed -n 's/^RFC 8219 result.*median \([0-9]*\) q\/s.*/\1/p'
}

{
    echo "# Large sets: 100 M records, parse rate, snapshot start"
    echo
    echo "Written by \`scripts/bench-big.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs,"
    echo "$(free -g | awk '/^Mem:/ { print $2 }') GiB of memory; Lode $(git -C "$root" rev-parse --short HEAD)."
    echo
} >"$md"

# 1-2. 100 M records.
big=$WORK/enum-big
say "generating $records numbers in $big"
t0=$(now)
"$BENCH" gen enum --records "$records" --zones 100 --queries 1000000 --out "$big" >>"$log" 2>&1
gen_s=$(secs "$t0" "$(now)")
text_mb=$(du -sm --apparent-size "$big" | cut -f1)
say "generated in $gen_s s ($text_mb MB)"
serve "$big" 15990
load_s=$SERVE_S
pid=$SERVE_PID
rss=$(status_kib "$pid" VmRSS)
hwm=$(status_kib "$pid" VmHWM)
say "100M: first answer after $load_s s, VmRSS $rss KiB, VmHWM $hwm KiB"
exist=$(rate "$big" 15990 existing noerror)
nx=$(rate "$big" 15990 nxdomain nxdomain)
say "100M: zero-loss existing $exist q/s, nxdomain $nx q/s"
stop "$pid"
{
    echo "## Target 5: $records ENUM records"
    echo
    echo "| step | command | result |"
    echo "|---|---|---|"
    echo "| generate | \`lode-bench gen enum --records $records --zones 100 --queries 1000000 --out DIR\` | $gen_s s, $text_mb MiB of zone text |"
    echo "| load and serve | \`taskset -c 0 lode serve --workers 1 -z ZONE=FILE ×100\` | first answer in the last zone after **$load_s s**; resident $(kib "$rss") MiB after the load (peak $(kib "$hwm") MiB); **$(awk -v k="$rss" -v n="$records" 'BEGIN { printf "%.1f", k * 1024 / n }') bytes/record** including the binary |"
    echo "| zero-loss rate, existing | \`taskset -c 1 lode-bench rate --queries DIR/queries-existing.txt --expect noerror --duration 5 --repeat 3\` | median **$exist q/s** |"
    echo "| zero-loss rate, NXDOMAIN | same with \`queries-nxdomain.txt --expect nxdomain\` | median **$nx q/s** |"
    echo
} >>"$md"
rm -rf "$big"

# 3. Parse rate on the 20 M set.
set20=$WORK/enum20m
"$BENCH" gen enum --records 20000000 --zones 4 --prefix 131 --out "$set20" >>"$log" 2>&1
mb20=$(du -sm --apparent-size "$set20"/*.zone | awk '{ s += $1 } END { print s }')
parse_rates=()
build_rates=()
for _ in 1 2 3; do
    t0=$(now)
    "$LODE" check --quiet --syntax-only "$set20"/*.zone >>"$log" 2>&1
    s=$(secs "$t0" "$(now)")
    parse_rates+=("$(awk -v m="$mb20" -v s="$s" 'BEGIN { printf "%.0f", m / s }') MiB/s ($s s)")
    t0=$(now)
    "$LODE" check --quiet "$set20"/*.zone >>"$log" 2>&1
    s=$(secs "$t0" "$(now)")
    build_rates+=("$(awk -v m="$mb20" -v s="$s" 'BEGIN { printf "%.0f", m / s }') MiB/s ($s s)")
done
say "20M parse only: ${parse_rates[*]}; parse+build: ${build_rates[*]}"

# 4. Snapshots.
snaps=$WORK/snap20m
t0=$(now)
"$LODE" snapshot $(zone_args "$set20") --out "$snaps" >>"$log" 2>&1
snap_s=$(secs "$t0" "$(now)")
snap_mb=$(du -sm --apparent-size "$snaps" | cut -f1)
starts=()
for _ in 1 2 3; do
    serve "$set20" 15991 --snapshot-dir "$snaps"
    s=$SERVE_S
    pid=$SERVE_PID
    rss=$(status_kib "$pid" VmRSS)
    starts+=("$s s")
    stop "$pid"
done
serve "$set20" 15992
text_s=$SERVE_S
pid=$SERVE_PID
stop "$pid"
say "20M snapshot written in $snap_s s ($snap_mb MB); starts ${starts[*]}; from text $text_s s"
{
    echo "## Target 6: start and reload, 20 M set ($mb20 MiB of zone text in 4 files)"
    echo
    echo "| step | command | result |"
    echo "|---|---|---|"
    echo "| parse only, all cores | \`lode check --quiet --syntax-only DIR/*.zone\` | ${parse_rates[*]} |"
    echo "| parse and build, all cores | \`lode check --quiet DIR/*.zone\` | ${build_rates[*]} |"
    echo "| start from text | \`taskset -c 0 lode serve --workers 1 -z …\` → first answer in the last zone | $text_s s (one CPU) |"
    echo "| write snapshots | \`lode snapshot -z … --out SNAP\` | $snap_s s (load + write), $snap_mb MiB |"
    echo "| start from snapshots | \`taskset -c 0 lode serve --workers 1 --snapshot-dir SNAP -z …\` → first answer in the last zone | **${starts[*]}**; resident $(kib "$rss") MiB |"
    echo
    echo "The server's start is pinned to one CPU like the query tests (the loader threads share it);"
    echo "\`lode check\` uses every CPU."
} >>"$md"
say "wrote $md"
