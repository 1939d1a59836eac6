#!/usr/bin/env bash
# Many small zones that take updates: N zones of 6 records,
# each with a TSIG update ACL, served by Lode and by Knot DNS (Debian's knotd)
# on the same machine, one after the other. For each: seconds from start
# until every zone answers its SOA, resident memory, threads and open files
# then, and durable updates/s of single-record updates to random zones
# (nsupdate-free: `lode-bench update --clients 16` over the zones, Knot and
# Lode alike) with the same count of journal syncs allowed.
#
#   bash scripts/bench-many-zones.sh               # 20,000 zones
#   ZONES=100000 bash scripts/bench-many-zones.sh
#   SIGNED=1 ZONES=100000 bash scripts/bench-many-zones.sh
#   CATALOG=1 ZONES=100000 bash scripts/bench-many-zones.sh
#
# CATALOG=1: the zones as members of a catalog (RFC 9432) instead: a Lode
# producer (not measured) serves them and generates the catalog; Lode and
# then Knot are started as consumers with only the catalog zone configured
# (`catalog-role = interpret`, the members secondaries of the producer), and
# timed until 200 members spread over the set and the last one answer (they
# arrive one transfer at a time). No updates (the members are secondaries).
#
# Environment: ZONES, WORK (scratch, default /var/tmp/lode-many-zones),
# LIMIT (seconds a server may take to answer every zone, default 600),
# KNOT=0 (no Knot), NSD=1 (NSD 4.6 too: memory as PSS summed over its
# processes, no updates), SIGNED=1 (every zone signed by the server, Knot's default policy:
# ECDSA P-256 keys made at first load, NSEC; the sampled zones must then
# answer their SOA with its RRSIG, and each update is signed).
set -euo pipefail
catalog=${CATALOG:-0}
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
zones=${ZONES:-20000}
signed=${SIGNED:-0}
work=${WORK:-/var/tmp/lode-many-zones}
limit=${LIMIT:-600}
port=15421
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=$PWD/target/release/lode
BENCH=$PWD/target/release/lode-bench
command -v knotd >/dev/null || { echo "knotd is needed (apt-get install knot)" >&2; exit 1; }
key=many-zones.
secret=bG9kZS1tYW55LXpvbmVzLWtleS0zMi1ieXRlcyEhISE=
rm -rf "$work"; mkdir -p "$work/zones"
python3 - "$zones" "$work" "$port" "$key" "$secret" "$signed" <<'PY'
import sys
n, d, port, key, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
signed = sys.argv[6] == "1"
lode = [f'listen = ["127.0.0.1:{port}"]', f'journal-dir = "{d}/lode-journal"', 'control = ""',
        'zonefile-sync = -1', '[[key]]', f'id = "{key}"', 'algorithm = "hmac-sha256"', f'secret = "{secret}"',
        '[[acl]]', 'id = "upd"', f'key = ["{key}"]', 'action = ["update"]']
knot = ['server:', f'    rundir: "{d}/knot"', f'    listen: 127.0.0.1@{port}',
        'database:', f'    storage: "{d}/knot"', 'key:', f'  - id: {key}', '    algorithm: hmac-sha256',
        f'    secret: {secret}', 'acl:', '  - id: upd', f'    key: {key}', '    action: update',
        'template:', '  - id: default', f'    storage: "{d}/zones"', '    zonefile-sync: -1',
        '    journal-content: changes', '    acl: upd'] + (['    dnssec-signing: on'] if signed else []) + ['zone:']
if signed:
    lode.insert(4, f'kasp-db = "{d}/lode-keys"')
with open(f"{d}/names.txt", "w") as names:
    for i in range(n):
        z = f"z{i}.many.test."
        with open(f"{d}/zones/z{i}.zone", "w") as f:
            f.write(f"$ORIGIN {z}\n$TTL 3600\n@ SOA ns1 host 1 3600 600 86400 300\n@ NS ns1\n@ NS ns2\n"
                    "ns1 A 192.0.2.1\nns2 A 192.0.2.2\nwww A 192.0.2.80\n")
        lode += ['[[zone]]', f'name = "{z}"', f'file = "{d}/zones/z{i}.zone"', 'acl = ["upd"]']
        if signed:
            lode.append('dnssec-signing = true')
        knot += [f'  - domain: "{z}"', f'    file: "z{i}.zone"']
        names.write(z + "\n")
open(f"{d}/lode.toml", "w").write("\n".join(lode) + "\n")
open(f"{d}/knot.conf", "w").write("\n".join(knot) + "\n")
PY
mkdir -p "$work/knot" "$work/lode-journal"

# Seconds until every zone answers its SOA: until the last zone configured
# answers (both servers answer only once every zone is loaded), then a sample
# of 200 zones spread over the set must answer too (not counted in the time).
wait_all() {
    local start=$1
    local last="z$((zones - 1)).many.test."
    while ! dig +short +time=1 +tries=1 @127.0.0.1 -p $port "$last" SOA | grep -q host; do
        if [ $(( $(date +%s) - ${start%.*} )) -gt "$limit" ]; then echo "timeout"; return 1; fi
        sleep 0.05
    done
    local took
    took=$(echo "$(date +%s.%N) - $start" | bc)
    local step=$(( zones / 200 > 0 ? zones / 200 : 1 ))
    local want=host
    [ "$signed" = 1 ] && want="^SOA 13 "
    for i in $(seq 0 $step $((zones - 1))); do
        if ! dig +short +dnssec +time=2 +tries=3 @127.0.0.1 -p $port "z$i.many.test." SOA | grep -q "$want"; then
            echo "z$i.many.test. silent${signed/1/ or unsigned}"; return 1
        fi
    done
    printf '%.1f' "$took"
}

# Catalog members arrive one transfer at a time: seconds until the last
# member and 200 spread over the set all answer (one dig for all of those
# still silent, every 0.1 s).
wait_members() {
    local start=$1
    local step=$(( zones / 200 > 0 ? zones / 200 : 1 ))
    local pending="" i n args answered still
    for i in $(seq 0 $step $((zones - 1))) $((zones - 1)); do pending="$pending z$i.many.test."; done
    while [ -n "$pending" ]; do
        if [ $(( $(date +%s) - ${start%.*} )) -gt "$limit" ]; then echo "timeout ($(echo $pending | wc -w) silent)"; return 1; fi
        args=()
        for n in $pending; do args+=("$n" SOA); done
        answered=$(dig +noall +answer +time=1 +tries=1 @127.0.0.1 -p $port "${args[@]}" 2>/dev/null | awk '$4 == "SOA" {print $1}')
        still=""
        for n in $pending; do grep -qxF "$n" <<< "$answered" || still="$still $n"; done
        pending=$still
        [ -n "$pending" ] && sleep 0.1
    done
    printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)"
}

measure() {
    local label=$1 pid=$2 start=$3
    local took
    if [ "$catalog" = 1 ]; then took=$(wait_members "$start"); else took=$(wait_all "$start"); fi
    local rss threads fds
    case "$label" in
    NSD*)
        # NSD is a main process and forked children sharing its memory:
        # summed over them, memory as PSS (shared pages counted once).
        local procs="$pid" frontier="$pid" next p
        while [ -n "$frontier" ]; do
            next=""
            for p in $frontier; do next="$next $(pgrep -P "$p" | tr '\n' ' ')"; done
            frontier=$(echo $next)
            procs="$procs $frontier"
        done
        rss=0 threads=0 fds=0
        for p in $procs; do
            rss=$(( rss + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup") ))
            threads=$(( threads + $(awk '/Threads/ {print $2}' "/proc/$p/status") ))
            fds=$(( fds + $(ls "/proc/$p/fd" | wc -l) ))
        done
        rss=$(( rss / 1024 ))
        printf '| %s | %s | %s s | %s MiB (PSS, %s processes) | %s | %s | – (takes no updates) |\n' \
            "$label" "$zones" "$took" "$rss" "$(echo $procs | wc -w)" "$threads" "$fds"
        return
        ;;
    esac
    rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$pid/status")
    threads=$(awk '/Threads/ {print $2}' "/proc/$pid/status")
    fds=$(ls "/proc/$pid/fd" | wc -l)
    if [ "$catalog" = 1 ]; then
        printf '| %s (catalog consumer) | %s | %s s | %s MiB | %s | %s | – (secondaries) |\n' "$label" "$zones" "$took" "$rss" "$threads" "$fds"
        return
    fi
    local zargs=()
    for i in $(seq 0 $(( zones / 1000 > 0 ? zones / 1000 : 1 )) $((zones - 1))); do zargs+=(--zone "z$i.many.test."); done
    local upd
    upd=$("$BENCH" update --server 127.0.0.1:$port "${zargs[@]}" --clients 16 --duration 10 \
        --tsig "hmac-sha256:$key:$secret" --first 100000 2>&1 | grep -oE 'durable updates: [0-9]+/s' | grep -oE '[0-9]+' || echo "-")
    printf '| %s | %s | %s s | %s MiB | %s | %s | %s |\n' "$label" "$zones" "$took" "$rss" "$threads" "$fds" "$upd"
}

[ "$signed" = 1 ] && echo "Every zone signed by the server (SIGNED=1)."
if [ "$catalog" = 1 ]; then
    # The producer: Lode on the next port with every zone and the catalog.
    pport=$((port + 1))
    {
        echo "listen = [\"127.0.0.1:$pport\"]"
        echo "journal-dir = \"$work/producer-journal\""
        echo 'control = ""'
        echo '[[key]]'; echo "id = \"$key\""; echo 'algorithm = "hmac-sha256"'; echo "secret = \"$secret\""
        echo '[[acl]]'; echo 'id = "xfr"'; echo "key = [\"$key\"]"; echo 'action = ["transfer"]'
        echo '[[zone]]'; echo 'name = "catalog.many.test."'; echo 'catalog-role = "generate"'; echo 'acl = ["xfr"]'
        while read -r z; do
            echo '[[zone]]'; echo "name = \"$z\""; echo "file = \"$work/zones/${z%%.*}.zone\""
            echo 'acl = ["xfr"]'; echo 'catalog-zone = "catalog.many.test."'
        done < "$work/names.txt"
    } > "$work/producer.toml"
    "$LODE" serve --config "$work/producer.toml" > "$work/producer.log" 2>&1 &
    producer=$!
    trap 'kill $producer 2>/dev/null || true' EXIT
    pstart=$(date +%s)
    # A catalog answers only TCP queries from those it lets transfer it.
    until dig +tcp +short +time=1 +tries=1 -y "hmac-sha256:$key:$secret" @127.0.0.1 -p $pport catalog.many.test. SOA | grep -q .; do
        [ $(( $(date +%s) - pstart )) -gt "$limit" ] && { echo "the producer did not start" >&2; exit 1; }
        sleep 0.2
    done
    echo "Producer (Lode, port $pport) serving $zones zones and their catalog after $(( $(date +%s) - pstart )) s."
    # The consumers: the catalog zone only.
    cat > "$work/lode.toml" <<EOF
listen = ["127.0.0.1:$port"]
journal-dir = "${CONSUMER_JOURNAL:-$work/lode-journal}"
control = ""
zonefile-sync = -1
${WORKERS:+background-workers = $WORKERS}
[[key]]
id = "$key"
algorithm = "hmac-sha256"
secret = "$secret"
[[remote]]
id = "producer"
address = ["127.0.0.1@$pport"]
key = "$key"
[[template]]
id = "members"
master = ["producer"]
[[zone]]
name = "catalog.many.test."
master = ["producer"]
catalog-role = "interpret"
catalog-template = ["members"]
EOF
    cat > "$work/knot.conf" <<EOF
server:
    rundir: "$work/knot"
    listen: 127.0.0.1@$port
database:
    storage: "$work/knot"
key:
  - id: $key
    algorithm: hmac-sha256
    secret: $secret
remote:
  - id: producer
    address: 127.0.0.1@$pport
    key: $key
template:
  - id: default
    storage: "$work/knot"
    zonefile-sync: -1
    zonefile-load: none
    journal-content: changes
  - id: members
    storage: "$work/knot"
    master: producer
    zonefile-sync: -1
    zonefile-load: none
    journal-content: changes
zone:
  - domain: catalog.many.test.
    master: producer
    catalog-role: interpret
    catalog-template: members
EOF
fi
echo "| server | zones | all answering after | resident | threads | open files | durable updates/s (16 clients, $(( zones / 1000 > 0 ? 1000 : zones )) zones) |"
echo "|---|---|---|---|---|---|---|"
start=$(date +%s.%N)
"$LODE" serve --config "$work/lode.toml" > "$work/lode.log" 2>&1 &
pid=$!
measure "Lode $(git rev-parse --short HEAD)" $pid "$start" || true
kill $pid; wait $pid 2>/dev/null || true
if [ "${KNOT:-1}" = 1 ]; then
    start=$(date +%s.%N)
    knotd -c "$work/knot.conf" > "$work/knot.log" 2>&1 &
    pid=$!
    measure "Knot $(knotd -V | awk '{print $NF}')" $pid "$start" || true
    kill $pid; wait $pid 2>/dev/null || true
fi
# NSD beside (NSD=1; not signed zones): the same zone files, no nsd.db, not
# dropping privileges; it takes no updates.
if [ "${NSD:-0}" = 1 ] && [ "$signed" != 1 ] && command -v nsd >/dev/null; then
    mkdir -p "$work/nsd"
    {
        echo "server:"
        echo "    ip-address: 127.0.0.1@$port"
        echo "    zonesdir: \"$work/zones\""
        echo "    database: \"\""
        echo "    username: \"\""
        echo "    pidfile: \"$work/nsd/nsd.pid\""
        echo "    zonelistfile: \"$work/nsd/zone.list\""
        echo "    xfrdfile: \"$work/nsd/xfrd.state\""
        echo "    xfrdir: \"$work/nsd\""
        echo "remote-control:"
        echo "    control-enable: no"
        while read -r z; do
            echo "zone:"; echo "    name: \"$z\""; echo "    zonefile: \"${z%%.*}.zone\""
        done < "$work/names.txt"
    } > "$work/nsd.conf"
    start=$(date +%s.%N)
    nsd -d -c "$work/nsd.conf" > "$work/nsd.log" 2>&1 &
    pid=$!
    measure "NSD $(nsd -v 2>&1 | awk 'NR==1 {print $NF}')" $pid "$start" || true
    kill $pid; wait $pid 2>/dev/null || true
fi
