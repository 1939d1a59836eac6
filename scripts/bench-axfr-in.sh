#!/usr/bin/env bash
# A secondary taking a whole zone by AXFR: its peak memory
# while it takes the zone, against its resident size once it serves it.
#
# A Lode primary serves one ENUM zone of RECORDS NAPTR records (default
# 20,000,000) on 127.0.0.1; a secondary (LODE_BIN, default this tree's
# release build; another build to compare) transfers it at start. Printed:
# the time from the secondary's start until it serves the primary's serial,
# its peak (VmHWM) and its resident size then (VmRSS), and their ratio.
#
#   bash scripts/bench-axfr-in.sh
#   RECORDS=5000000 PREFIX=1646 LODE_BIN=/tmp/lode-old bash scripts/bench-axfr-in.sh
#
# Environment: WORK (scratch, default /var/tmp/lode-axfr-in), RECORDS,
# PREFIX (E.164 prefix of the generated zone, default 164), LODE_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-axfr-in}
records=${RECORDS:-20000000}
pport=15395
sport=15396
export PATH="$PATH:/usr/sbin"
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=$PWD/target/release/lode
SECONDARY=${LODE_BIN:-$LODE}
BENCH=$PWD/target/release/lode-bench
mkdir -p "$work"

set_dir="$work/set-$records"
if [ ! -f "$set_dir/lode.toml" ]; then
    "$BENCH" gen enum --records "$records" --zones 1 --out "$set_dir" --prefix "${PREFIX:-164}" >/dev/null
fi
zone=$(grep '^name' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
file=$(grep '^file' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
case "$file" in /*) ;; *) file="$set_dir/$file" ;; esac

# The serial a server on port $1 answers for $zone (empty if none).
serial_at() {
    { kdig @127.0.0.1 -p "$1" "$zone" SOA +short +timeout=1 +retry=0 2>/dev/null || true; } | awk '$3 ~ /^[0-9]+$/ {print $3}' | head -1
}

pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT

rm -rf "$work/primary" "$work/secondary"
mkdir -p "$work/primary" "$work/secondary"
cat > "$work/primary/lode.toml" <<EOF
listen = ["127.0.0.1:$pport"]
control = ""
[[acl]]
id = "xfr"
action = ["transfer"]
[[zone]]
name = "$zone"
file = "$file"
acl = ["xfr"]
EOF
"$LODE" serve --config "$work/primary/lode.toml" --workers 1 > "$work/primary/serve.log" 2>&1 &
pids+=($!)
want=""
for _ in $(seq 1 3600); do
    want=$(serial_at $pport)
    [ -n "$want" ] && break
    sleep 0.5
done
[ -n "$want" ] || { echo "the primary did not serve $zone" >&2; exit 1; }
echo "primary: $zone serial $want ($records records)"

cat > "$work/secondary/lode.toml" <<EOF
listen = ["127.0.0.1:$sport"]
journal-dir = "$work/secondary/journal"
control = ""
[[remote]]
id = "primary"
address = ["127.0.0.1@$pport"]
[[zone]]
name = "$zone"
master = ["primary"]
EOF
start=$(date +%s.%N)
"$SECONDARY" serve --config "$work/secondary/lode.toml" --workers 1 > "$work/secondary/serve.log" 2>&1 &
spid=$!
pids+=($spid)
got=""
for _ in $(seq 1 36000); do
    got=$(serial_at $sport)
    [ "$got" = "$want" ] && break
    kill -0 $spid 2>/dev/null || break
    sleep 0.1
done
end=$(date +%s.%N)
[ "$got" = "$want" ] || { echo "the secondary did not take serial $want" >&2; exit 1; }
peak=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/$spid/status)
rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' /proc/$spid/status)
printf 'secondary %s: serving serial %s after %.1f s; peak %s MiB, resident %s MiB, peak / resident %.2f\n' \
    "$SECONDARY" "$got" "$(echo "$end - $start" | bc)" "$peak" "$rss" "$(echo "$peak / $rss" | bc -l)"
grep -m1 "whole zone" "$work/secondary/serve.log" | sed 's/^[^ ]* *//' | cut -c1-200 || true
