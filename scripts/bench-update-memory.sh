#!/usr/bin/env bash
# Memory per record after 1 M changes to the 5 M ENUM set and the
# compactions they trigger, against a fresh load of the same final contents;
# and the peak while it ran.
#
#   bash scripts/bench-update-memory.sh [--records N] [--out DIR]
#   LODE_BIN=path/to/lode bash scripts/bench-update-memory.sh …   (another build)
#
# One zone of N numbers (default 5,000,000) is generated with `lode-bench gen enum`
# and served by a release `lode serve` with updates allowed (journal in the
# run folder, zonefile-sync -1). `lode update` then sends, 500 records per
# message over 2 pipelined connections: N/15 new numbers (adds), N/15 deletions,
# and N/15 changes (each a deletion of the old NAPTR and an addition of a new
# one) — a third each of N/5 = 1 M changes. Afterwards the server's resident
# memory (VmRSS) and its peak (VmHWM) are read from /proc, the zone is written
# out (lode zone-flush), and a second server loads that file fresh for the
# comparison. Bounded: every step has a time limit; servers are stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."

records=5000000
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --records) records=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--records N] [--out DIR]" >&2; exit 2 ;;
    esac
done
out=${out:-results/update-memory-$(date +%F)}
mkdir -p "$out"
work=$(mktemp -d /tmp/lode-upd-mem.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

build=(cargo build --release --bin lode --bin lode-bench)
"${build[@]}" >/dev/null 2>&1 || "${build[@]}"
# LODE_BIN: another lode binary (an older commit, an allocator trial build).
lode=${LODE_BIN:-target/release/lode}
bench=target/release/lode-bench
zone=2.1.2.1.e164.arpa.
port=15395

echo "== generating $records numbers"
timeout 600 $bench gen enum --records "$records" --zones 1 --out "$work/set" --queries 1000 >/dev/null
zfile="$work/set/${zone}zone"
key=$(head -c 32 /dev/urandom | base64)
echo "hmac-sha256:k.:$key" >"$work/key"
cat >"$work/lode.toml" <<EOF
listen = ["127.0.0.1:$port"]
journal-dir = "$work/journal"
control = "$work/lode.sock"
zonefile-sync = -1
[[key]]
id = "k."
algorithm = "hmac-sha256"
secret = "$key"
[[acl]]
id = "up"
address = ["127.0.0.1"]
key = ["k."]
action = ["update"]
[[zone]]
name = "$zone"
file = "$zfile"
acl = ["up"]
EOF

kib() { awk -v f="$2" '$1 == f":" {print $2}' "/proc/$1/status"; }
wait_serving() { # pid log
    for _ in $(seq 1 600); do
        grep -q "serving " "$2" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || { cat "$2"; return 1; }
        sleep 0.5
    done
    return 1
}

echo "== loading"
$lode serve --config "$work/lode.toml" >"$work/serve.log" 2>&1 &
pid=$!; pids+=("$pid")
wait_serving "$pid" "$work/serve.log"
rss_loaded=$(kib "$pid" VmRSS)
# The peak from here on (the load's own peak is measured by the query comparison).
echo 5 >"/proc/$pid/clear_refs"

third=$((records / 15))
python3 - "$records" "$third" "$work" <<'PY'
import sys
n, third, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def uri(i, tag=""): return f"sip:+1212{i:07d}{tag}@example.net"
def naptr(i, tag=""):
    return f'100 10 "u" "E2U+sip" "!^.*$!{uri(i, tag)}!" .'
def owner(i):
    digits = f"{i:07d}"
    return ".".join(reversed(digits))
with open(f"{work}/adds.csv", "w") as f:
    for i in range(n, n + third):
        f.write(f"+1212{i:07d}, {uri(i)}\n")
with open(f"{work}/deletes.zone", "w") as f:
    for i in range(0, third):
        f.write(f"{owner(i)} 3600 IN NAPTR {naptr(i)}\n")
with open(f"{work}/change-old.zone", "w") as f:
    for i in range(third, 2 * third):
        f.write(f"{owner(i)} 3600 IN NAPTR {naptr(i)}\n")
with open(f"{work}/change-new.zone", "w") as f:
    for i in range(third, 2 * third):
        f.write(f"{owner(i)} 3600 IN NAPTR {naptr(i, 'x')}\n")
PY

upd() { timeout 900 $lode update -q -s 127.0.0.1:$port -k "$work/key" -z $zone -b 500 -w 16 -c 2 "$@"; }
start=$(date +%s.%N)
echo "== $third adds";             upd --enum-apex e164.arpa "$work/adds.csv"
echo "== $third deletions";        upd --delete "$work/deletes.zone"
echo "== $third changes (old out)"; upd --delete "$work/change-old.zone"
echo "== $third changes (new in)";  upd --add "$work/change-new.zone"
secs=$(echo "$(date +%s.%N) - $start" | bc)
# The zone goes quiet: 5 s without updates, the writer folds what is left of
# the delta into a new base. Wait past that, then for the compaction.
sleep 8
# (Every compaction started has ended: a compaction can start right after
# another ends, so the log's last line alone does not say.)
for _ in $(seq 1 180); do
    started=$(grep -c "compacting " "$work/serve.log" || true)
    ended=$(grep -c "compacted \|compaction failed\|does not apply to its result" "$work/serve.log" || true)
    [ "$started" -le "$ended" ] && break
    sleep 1
done
sleep 1
rss_after=$(kib "$pid" VmRSS)
hwm=$(kib "$pid" VmHWM)
$lode zone-flush --control "$work/lode.sock" $zone >/dev/null 2>&1 || true
timeout 600 $lode zone-flush --control "$work/lode.sock" $zone
kill "$pid"; wait "$pid" 2>/dev/null || true
compactions=$(grep -c "compacted " "$work/serve.log" || true)
final_records=$(grep -c NAPTR "$zfile" || true)

echo "== fresh load of the final contents"
cat >"$work/fresh.toml" <<EOF
listen = ["127.0.0.1:$port"]
control = ""
[[zone]]
name = "$zone"
file = "$zfile"
EOF
$lode serve --config "$work/fresh.toml" >"$work/fresh.log" 2>&1 &
pid2=$!; pids+=("$pid2")
wait_serving "$pid2" "$work/fresh.log"
rss_fresh=$(kib "$pid2" VmRSS)
kill "$pid2"; wait "$pid2" 2>/dev/null || true

per() { echo "scale=2; $1 * 1024 / $final_records" | bc; }
{
    echo "# Memory after $((3 * third)) updates of ${records} records"
    echo
    echo "Command: \`${LODE_BIN:+LODE_BIN=$LODE_BIN }bash scripts/bench-update-memory.sh --records $records\` ($(date -u +%FT%TZ), $(nproc) cores)"
    echo
    echo "| | resident KiB | bytes per record |"
    echo "|---|---:|---:|"
    echo "| loaded, before the updates ($records records) | $rss_loaded | $(echo "scale=2; $rss_loaded * 1024 / $records" | bc) |"
    echo "| after the updates and compaction | $rss_after | $(per "$rss_after") |"
    echo "| fresh load of the same contents | $rss_fresh | $(per "$rss_fresh") |"
    echo "| peak (VmHWM) during the updates and compactions | $hwm | |"
    echo
    echo "After / fresh: $(echo "scale=3; $rss_after / $rss_fresh" | bc). Updates: $((4 * third)) record operations"
    echo "in $secs s; $compactions compactions. Final records (NAPTR): $final_records."
} | tee "$out/README.md"
cp "$work/serve.log" "$out/serve.log"
