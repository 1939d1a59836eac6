#!/usr/bin/env bash
# CPU per durable update: Lode serves a 500k-number ENUM set in
# 10 zones that take TSIG-signed updates, pinned to CPU 0; `lode-bench update
# --clients N` on CPU 1 adds single NAPTRs over TCP for DURATION seconds.
# Lode, then Knot DNS with the same zones and load. Prints for each
# updates/s, server CPU seconds (utime+stime from /proc) and µs of server
# CPU per durable update, and the disk's fdatasync/s in the journal folder
# (durable updates/s ÷ fdatasync/s).
#
#   bash scripts/bench-update-cpu.sh            # 64 clients, 10 s
#   CLIENTS=16 DURATION=20 bash scripts/bench-update-cpu.sh
#
# Environment: WORK (scratch, default /var/tmp/lode-update-cpu), CLIENTS, DURATION,
# ZONEFILE_SYNC (default -1, as the peer comparisons of lode-bench run Knot and Lode:
# zone files not written back), PERF=1 (perf record of the server into WORK/perf.data;
# PERF_CALLGRAPH=dwarf for call graphs through Rust frames),
# SIGNED=true (the zones signed by Lode: dnssec-signing, Knot's default policy;
# Knot is then not run), KNOT=0 (Lode only; by default Knot DNS follows with
# the same zones and load, for the ratio).
# LODE_BIN (another build of lode to measure, e.g. an older commit's).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-update-cpu}
clients=${CLIENTS:-64}
duration=${DURATION:-10}
port=15353
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=${LODE_BIN:-$PWD/target/release/lode}
BENCH=$PWD/target/release/lode-bench
key_name=bench-update.
secret=bG9kZS1iZW5jaC11cGRhdGUta2V5LTMyLWJ5dGVzISE=
mkdir -p "$work"
if [ ! -f "$work/set/lode.toml" ]; then
    "$BENCH" gen enum --records 500000 --zones 10 --out "$work/set" --prefix 16461 >/dev/null
fi
rm -rf "$work/journal"
mkdir -p "$work/journal"
{
    echo "listen = [\"127.0.0.1:$port\"]"
    echo "journal-dir = \"$work/journal\""
    echo 'control = ""'
    echo "zonefile-sync = ${ZONEFILE_SYNC:--1}"
    [ -n "${WORKERS:-}" ] && echo "background-workers = $WORKERS"
    echo "[[key]]"; echo "id = \"$key_name\""; echo 'algorithm = "hmac-sha256"'; echo "secret = \"$secret\""
    echo "[[acl]]"; echo 'id = "upd"'; echo "key = [\"$key_name\"]"; echo 'action = ["update"]'
    signing=""
    [ "${SIGNED:-false}" = true ] && signing='\ndnssec-signing = true'
    grep -v '^#' "$work/set/lode.toml" | sed "s/^file = .*/&\nacl = [\"upd\"]$signing/"
} > "$work/lode.toml"
zones=()
for z in $(grep '^name' "$work/set/lode.toml" | cut -d'"' -f2); do zones+=(--zone "$z"); done
tick=$(getconf CLK_TCK)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null || true' EXIT

# One server (pid) measured: the load from CPU 1, the server's CPU seconds
# from /proc before and after.
measure() {
    local label=$1 out=$2
    for _ in $(seq 1 300); do
        if dig +short +time=1 +tries=1 @127.0.0.1 -p $port 0.1.6.4.6.1.e164.arpa SOA | grep -q .; then break; fi
        sleep 0.2
    done
    local before after
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    if [ -n "${PERF:-}" ] && [ "$label" = Lode ]; then
        perf record -F 999 --call-graph "${PERF_CALLGRAPH:-fp}" -p "$pid" -o "$work/perf.data" -- sleep "$duration" >/dev/null 2>&1 &
    fi
    echo "== $label"
    taskset -c 1 "$BENCH" update --server 127.0.0.1:$port "${zones[@]}" --clients "$clients" \
        --duration "$duration" --tsig "hmac-sha256:$key_name:$secret" --fsync-dir "$out" \
        | tee "$work/update-$label.txt"
    after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    local updates cpu_s
    updates=$(grep -oE 'acknowledged [0-9]+' "$work/update-$label.txt" | head -1 | grep -oE '[0-9]+' || echo 0)
    cpu_s=$(echo "scale=3; ($after - $before) / $tick" | bc)
    echo "$label server CPU: ${cpu_s} s for ${updates} updates"
    if [ "${updates:-0}" -gt 0 ]; then
        echo "$label server CPU per durable update: $(echo "scale=1; $cpu_s * 1000000 / $updates" | bc) µs"
    fi
    kill $pid; wait $pid 2>/dev/null || true
    pid=
}

taskset -c 0 "$LODE" serve --config "$work/lode.toml" --workers 1 > "$work/serve.log" 2>&1 &
pid=$!
measure Lode "$work/journal"

# Knot DNS beside (KNOT=0 skips it): the same zones, key and ACL, its
# journal holding changes only, zone files not written back, one UDP and
# one TCP worker as Lode's --workers 1, pinned to the same CPU.
if [ "${KNOT:-1}" = 1 ] && [ "${SIGNED:-false}" != true ] && command -v knotd >/dev/null; then
    rm -rf "$work/knot"; mkdir -p "$work/knot"
    {
        echo "server:"; echo "    rundir: \"$work/knot\""; echo "    listen: 127.0.0.1@$port"
        echo "    udp-workers: 1"; echo "    tcp-workers: 1"
        echo "database:"; echo "    storage: \"$work/knot\""
        echo "key:"; echo "  - id: $key_name"; echo "    algorithm: hmac-sha256"; echo "    secret: $secret"
        echo "acl:"; echo "  - id: upd"; echo "    key: $key_name"; echo "    action: update"
        echo "template:"; echo "  - id: default"; echo "    storage: \"$work/set\""
        echo "    zonefile-sync: -1"; echo "    zonefile-load: whole"; echo "    journal-content: changes"
        echo "    acl: upd"
        echo "zone:"
        for z in $(grep '^name' "$work/set/lode.toml" | cut -d'"' -f2); do
            echo "  - domain: \"$z\""; echo "    file: \"${z}zone\""
        done
    } > "$work/knot.conf"
    taskset -c 0 knotd -c "$work/knot.conf" > "$work/knot.log" 2>&1 &
    pid=$!
    measure Knot "$work/knot"
fi
