#!/usr/bin/env bash
# Zones added and removed by `lode reload` (a hosting company's daily work):
# a server started with one zone; ZONES more (default 20,000, each taking
# TSIG updates; SIGNED=1: each signed, keys made at the reload) added by one
# reload, an update to one of them, then all removed by another reload.
# Prints each reload's wall time, the server's resident memory, threads and
# open files after it. CYCLES (default 1) repeats the adding, the update and
# the removing, to see whether memory comes back each time.
#
#   ZONES=20000 [SIGNED=1] [CYCLES=3] WORK=/var/tmp/lode-reload bash scripts/bench-reload-zones.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-reload}
zones=${ZONES:-20000}
port=15395
cargo build --release --bin lode >/dev/null
LODE=$PWD/target/release/lode
rm -rf "$work"
mkdir -p "$work/zones"
secret=c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=
signing=
[ "${SIGNED:-0}" = 1 ] && signing='dnssec-signing = true'
base_config() {
    cat <<EOF
journal-dir = "$work/journal"
control = "$work/ctl.sock"
listen = ["127.0.0.1:$port"]
zonefile-sync = -1
[[key]]
id = "k"
algorithm = "hmac-sha256"
secret = "$secret"
[[acl]]
id = "up"
key = ["k"]
action = ["update", "transfer"]
[[zone]]
name = "z0.test."
file = "$work/zones/z0.test.zone"
acl = ["up"]
EOF
}
base_config > "$work/base.toml"
cp "$work/base.toml" "$work/full.toml"
for i in $(seq 0 "$zones"); do
    printf '$ORIGIN z%s.test.\n$TTL 300\n@ SOA ns hm 1 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\n' "$i" \
        > "$work/zones/z$i.test.zone"
    [ "$i" = 0 ] && continue
    printf '[[zone]]\nname = "z%s.test."\nfile = "%s/zones/z%s.test.zone"\nacl = ["up"]\n%s\n' \
        "$i" "$work" "$i" "$signing" >> "$work/full.toml"
done
cp "$work/base.toml" "$work/lode.toml"
"$LODE" serve --config "$work/lode.toml" > "$work/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    kdig +short +time=1 +retry=0 @127.0.0.1 -p $port z0.test SOA 2>/dev/null | grep -q . && break
    sleep 0.1
done
state() {
    printf 'resident %s MiB, %s threads, %s open files\n' \
        "$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)" \
        "$(awk '/Threads/ {print $2}' /proc/$pid/status)" "$(ls /proc/$pid/fd | wc -l)"
}
echo "started with 1 zone: $(state)"
reload() {
    local start end
    start=$(date +%s.%N)
    "$LODE" reload --control "$work/ctl.sock" > "$work/reload.txt"
    end=$(date +%s.%N)
    echo "$(echo "$end - $start" | bc) s"
}
for cycle in $(seq 1 "${CYCLES:-1}"); do
    [ "${CYCLES:-1}" = 1 ] || echo "cycle $cycle:"
    cp "$work/full.toml" "$work/lode.toml"
    echo "reload adding $zones zones${signing:+ (signed)}: $(reload); $(state)"
    last="z$zones.test."
    if [ -n "$signing" ]; then
        # The last zone signed (each is signed whole when its writer starts).
        kdig +dnssec @127.0.0.1 -p $port "$last" DNSKEY | grep -q 'DNSKEY' || echo "warning: $last not signed" >&2
    fi
    printf 'server 127.0.0.1 %s\nzone %s\nupdate add x.%s 300 A 192.0.2.9\nsend\n' $port "$last" "$last" |
        knsupdate -y "hmac-sha256:k:$secret"
    echo "update to $last: $(kdig +short @127.0.0.1 -p $port "x.$last" A)"
    cp "$work/base.toml" "$work/lode.toml"
    echo "reload removing them: $(reload); $(state)"
    kdig @127.0.0.1 -p $port "$last" SOA | grep -o 'status: [A-Z]*'
    sleep "${SETTLE:-10}"
    echo "${SETTLE:-10} s later: $(state)"
done
