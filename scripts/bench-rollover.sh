#!/usr/bin/env bash
# A ZSK rollover of a large signed zone, Lode and Knot 3.2 side
# by side on one ENUM zone of RECORDS NAPTR records (default 500,000; one zone
# of the 5 M set), algorithm 13, NSEC:
#
# - each server (pinned to CPU 0, one UDP worker for Lode, udp-workers 1 for
#   Knot) signs the zone (first start), then `zone-key-rollover … zsk` with
#   propagation-delay 1 and dnskey-ttl 1, so that the new ZSK takes over 2 s
#   later and the zone's signatures are made again;
# - query latency at a fixed RATE (default 20,000 q/s, existing names, from
#   CPU 1, `lode-bench rate --rate`): a STEP-second step (default 30) before
#   the rollover (static) and one starting as the new ZSK takes over;
# - the re-signing: how long from `zone-key-rollover` until every signature
#   is by the new key (Lode: the log line "every signature is by the keys of
#   the moment"; Knot: the second "successfully signed" after it, the first
#   being the new key's publication), and the server's CPU seconds over that
#   time (/proc/PID/stat), queries of the step included.
#
#   bash scripts/bench-rollover.sh
#   RECORDS=100000 RATE=10000 bash scripts/bench-rollover.sh
#
# Environment: WORK (scratch, default /var/tmp/lode-rollover), RECORDS, RATE,
# STEP, PREFIX (default 16461), SERVERS (default "lode knot"), KNOT_JOURNAL
# (Knot's journal-max-usage, default 8G: a whole re-signing is one changeset;
# 5 M records need more) and KNOT_JOURNAL_DB (journal-db-max-size, default 20G).
# Output: a table on stdout; each server's log in WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-rollover}
records=${RECORDS:-500000}
rate=${RATE:-20000}
step=${STEP:-30}
servers=${SERVERS:-lode knot}
port=15394
export PATH="$PATH:/usr/sbin"
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=$PWD/target/release/lode
BENCH=$PWD/target/release/lode-bench
mkdir -p "$work"

set_dir="$work/set-$records"
if [ ! -f "$set_dir/lode.toml" ]; then
    "$BENCH" gen enum --records "$records" --zones 1 --out "$set_dir" --prefix "${PREFIX:-16461}" >/dev/null
fi
zone=$(grep '^name' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
file=$(grep '^file' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
case "$file" in /*) ;; *) file="$set_dir/$file" ;; esac
queries="$set_dir/queries-existing.txt"

# CPU seconds (user + system) of a process so far.
cpu_of() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$1/stat"
}

# Waits until the log $1 holds the pattern $2 (at most $3 seconds).
wait_log() {
    for _ in $(seq 1 $(($3 * 10))); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "timed out waiting for \"$2\" in $1" >&2
    return 1
}

# One fixed-rate step from CPU 1: "answered N % p50 A p99 B p99.9 C µs".
latency() {
    taskset -c 1 "$BENCH" rate --server 127.0.0.1:$port --queries "$queries" --rate "$rate" \
        --duration "$step" --repeat 1 --timeout 1000 --overload 2>&1 |
        tee -a "$work/rate.log" |
        awk '/overload/ { for (i = 1; i <= NF; i++) {
                 if ($i == "answered") a = $(i + 3);
                 if ($i == "p50") p50 = $(i + 1); if ($i == "p99") p99 = $(i + 1);
                 if ($i == "p99.9") p999 = $(i + 1) }
               printf "answered %s %% p50 %s p99 %s p99.9 %s µs\n", substr(a, 2), p50, p99, p999; exit }'
}

run_lode() {
    local d="$work/lode"
    rm -rf "$d"
    mkdir -p "$d"
    cat >"$d/lode.toml" <<EOF
journal-dir = "$d/journal"
control = "$d/lode.sock"
[[policy]]
id = "roll"
propagation-delay = 1
dnskey-ttl = 1
zsk-lifetime = 0
signing-threads = 2
[[zone]]
name = "$zone"
file = "$file"
dnssec-signing = true
dnssec-policy = "roll"
zonefile-sync = -1
EOF
    taskset -c 0 "$LODE" serve --config "$d/lode.toml" --listen 127.0.0.1:$port --workers 1 >"$d/log" 2>&1 &
    local pid=$!
    wait_log "$d/log" "signed whole" 600
    wait_log "$d/log" "serving 1 zone" 60
    "$LODE" zone-ksk-submitted "$zone" --control "$d/lode.sock" >/dev/null
    sleep 5
    local static
    static=$(latency)
    local start cpu0
    start=$(date +%s.%N)
    cpu0=$(cpu_of $pid)
    "$LODE" zone-key-rollover "$zone" zsk --control "$d/lode.sock" >/dev/null
    local during
    during=$(latency)
    wait_log "$d/log" "every signature is by the keys of the moment" 3600
    finish lode
}

run_knot() {
    local d="$work/knot"
    rm -rf "$d"
    mkdir -p "$d"
    cp "$file" "$d/zone"
    cat >"$d/knot.conf" <<EOF
server:
    rundir: "$d"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 2
database:
    storage: "$d"
    journal-db-max-size: ${KNOT_JOURNAL_DB:-20G}
policy:
  - id: roll
    propagation-delay: 1
    dnskey-ttl: 1
    zsk-lifetime: 0
    signing-threads: 2
template:
  - id: default
    storage: "$d"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: changes
    journal-max-usage: ${KNOT_JOURNAL:-8G}
zone:
  - domain: $zone
    file: "$d/zone"
    dnssec-signing: on
    dnssec-policy: roll
log:
  - target: "$d/log"
    any: info
EOF
    taskset -c 0 knotd -c "$d/knot.conf" >/dev/null 2>&1 &
    local pid=$!
    wait_log "$d/log" "DNSSEC, successfully signed" 900
    wait_log "$d/log" "control, binding" 60
    knotc -s "$d/knot.sock" zone-ksk-submitted "$zone" >/dev/null
    sleep 5
    local static
    static=$(latency)
    local signed_before
    signed_before=$(grep -c "DNSSEC, successfully signed" "$d/log")
    local start cpu0
    start=$(date +%s.%N)
    cpu0=$(cpu_of $pid)
    # Knot signs the zone whole when the new ZSK is published and again
    # when it takes over (2 s later here).
    knotc -s "$d/knot.sock" zone-key-rollover "$zone" zsk >/dev/null
    local during
    during=$(latency)
    for _ in $(seq 1 36000); do
        [ "$(grep -c "DNSSEC, successfully signed" "$d/log")" -ge $((signed_before + 2)) ] && break
        sleep 0.1
    done
    finish knot
}

# Stops the server $pid and reports the rollover of $1 (the caller's start,
# cpu0, static and during are read here: bash's locals are dynamic).
finish() {
    local took cpu
    took=$(echo "$(date +%s.%N) - $start" | bc)
    cpu=$(echo "$(cpu_of $pid) - $cpu0" | bc)
    kill $pid
    wait $pid 2>/dev/null || true
    report "$1" "$static" "$during" "$took" "$cpu"
}

report() {
    printf '%s\n  static: %s\n  during: %s\n  rollover to every signature by the new ZSK: %.1f s wall, %.1f server CPU s (the %s-second query step included)\n' \
        "$1" "$2" "$3" "$4" "$5" "$step"
}

echo "zone $zone, $records records, $rate q/s, steps of $step s"
for s in $servers; do
    "run_$s"
done
