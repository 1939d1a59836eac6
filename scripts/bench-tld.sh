#!/usr/bin/env bash
# A TLD-shaped zone (`lode-bench gen tld`) served by Lode, Knot DNS and NSD
# side by side: server CPU per answer for referrals (unsigned zone, DO=0),
# DO=1 referrals and DO=1 NXDOMAIN (the zone signed by Knot's kzonesign with
# NSEC3 opt-out, served pre-signed by all), resident and peak memory, and the
# time from start to the first answer.
#
#   scripts/bench-tld.sh [OUT]          (default OUT: results/tld-DATE)
#
# Each server runs alone with one UDP worker pinned to CPU 0; dnsperf sends
# from CPU 1 at RATE q/s (below every server's capacity: CPU per answer, not
# a saturation search) for SECONDS, ROUNDS times per server and query kind,
# the servers taking turns. CPU per answer is the server process's user +
# system time (/proc/PID/stat) over the answers dnsperf got, and CPU 0's
# busy time (/proc/stat, softirq included: the kernel's receive path) over
# the same answers — the latter is exact only on an otherwise idle machine.
# Environment: DELEGATIONS (default 1000000), RATE (20000), SECONDS_RUN (10),
# ROUNDS (3), SERVERS (lode knot nsd), BENCH (the lode-bench binary; default:
# cargo build --release), LODE (beside BENCH), WORK (scratch folder, default
# a temp dir, removed at the end).
# Writes OUT/tld.md (the tables and the commands) and OUT/tld.log.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/results/tld-$(date -u +%Y-%m-%d)}
mkdir -p "$out"
if [ -z "${BENCH:-}" ]; then
    (cd "$root" && cargo build --release -q --bin lode --bin lode-bench)
    BENCH=$root/target/release/lode-bench
fi
LODE=${LODE:-$(dirname "$BENCH")/lode}
delegations=${DELEGATIONS:-1000000}
rate=${RATE:-20000}
seconds=${SECONDS_RUN:-10}
rounds=${ROUNDS:-3}
servers=${SERVERS:-lode knot nsd}
export PATH="$PATH:/usr/sbin:/sbin"
temp_work=0
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /tmp/lode-tld.XXXXXX)
    temp_work=1
fi
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ "$temp_work" = 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
for tool in dnsperf kdig kzonesign knotd nsd; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install dnsperf knot knot-dnsutils knot-dnssecutils nsd)" >&2; exit 1; }
done

log=$out/tld.log
md=$out/tld.md
: >"$log"
say() { echo "$*" | tee -a "$log"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
port=15453

# --- the zone, its signed copy and the query files -----------------------------------
say "== lode-bench gen tld: $delegations delegations"
"$BENCH" gen tld --out "$WORK/gen" --delegations "$delegations" --queries 1000000 --updates 100 >>"$log" 2>&1
mkdir -p "$WORK/sign"
cat >"$WORK/sign/knot.conf" <<EOF
server:
    rundir: $WORK/sign
database:
    storage: $WORK/sign
policy:
  - id: optout
    algorithm: ecdsap256sha256
    nsec3: on
    nsec3-opt-out: on
    nsec3-iterations: 0
    nsec3-salt-length: 0
zone:
  - domain: com.
    file: $WORK/sign/com.zone
    dnssec-signing: on
    dnssec-policy: optout
EOF
cp "$WORK/gen/com.zone" "$WORK/sign/com.zone"
t0=$(now)
kzonesign -c "$WORK/sign/knot.conf" -o "$WORK/sign" com. >>"$log" 2>&1
sign_s=$(secs "$t0" "$(now)")
say "kzonesign (NSEC3 opt-out): $sign_s s"
unsigned=$WORK/gen/com.zone
signed=$WORK/sign/com.zone
awk 'NR <= 300000 {print $1, $2}' "$WORK/gen/queries-referral.txt" >"$WORK/q-referral.txt"
awk 'NR <= 300000 {print $1, $2}' "$WORK/gen/queries-nxdomain.txt" >"$WORK/q-nxdomain.txt"
probe=$(head -n 1 "$WORK/q-referral.txt" | cut -d' ' -f1)

# --- servers ----------------------------------------------------------------------------
# start NAME ZONEFILE: the server pinned to CPU 0 on $port; sets PID, FIRST_S
# (start to the first referral answered).
start() {
    local name=$1 zone=$2 dir=$WORK/run-$1
    rm -rf "$dir" && mkdir -p "$dir"
    local t0
    t0=$(now)
    case $name in
    lode)
        taskset -c 0 "$LODE" serve -l 127.0.0.1:$port --workers 1 --control "$dir/ctl" \
            -z "com.=$zone" --log-level warn >>"$log" 2>&1 &
        ;;
    knot)
        cat >"$dir/knot.conf" <<EOF
server:
    rundir: $dir
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: $dir
template:
  - id: default
    storage: $dir
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
  - domain: com.
    file: $zone
EOF
        taskset -c 0 knotd -c "$dir/knot.conf" >>"$log" 2>&1 &
        ;;
    nsd)
        cat >"$dir/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1@$port
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$dir"
    database: ""
    pidfile: "$dir/nsd.pid"
    xfrdfile: "$dir/xfrd.state"
    zonelistfile: "$dir/zone.list"
    verbosity: 0
    hide-version: yes
    rrl-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: com.
    zonefile: "$zone"
EOF
        taskset -c 0 nsd -d -c "$dir/nsd.conf" >>"$log" 2>&1 &
        ;;
    esac
    PID=$!
    pids+=("$PID")
    local deadline=$(($(date +%s) + 3600))
    until kdig @127.0.0.1 -p $port "$probe" A +norec +time=1 +retry=0 2>/dev/null | grep -q 'status: NOERROR'; do
        if ! kill -0 "$PID" 2>/dev/null || [ "$(date +%s)" -gt "$deadline" ]; then
            say "$name did not answer"
            exit 1
        fi
        sleep 0.1
    done
    FIRST_S=$(secs "$t0" "$(now)")
}

# The server's processes (NSD's main process forks the server ones).
procs() {
    local all=$PID new=$PID p kids
    while [ -n "$new" ]; do
        kids=""
        for p in $new; do kids="$kids $(pgrep -P "$p" || true)"; done
        new=$(echo $kids)
        all="$all $new"
    done
    echo "$all"
}
# ticks: user + system clock ticks of the server's processes.
ticks() {
    local t=0 p
    for p in $(procs); do
        # (The fields after the command name, which may hold spaces.)
        t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0)))
    done
    echo "$t"
}
# cpu0: CPU 0's busy ticks (everything but idle and iowait).
cpu0() { awk '$1 == "cpu0" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# kib FIELD: the sum of /proc/PID/status FIELD over the server's processes.
kib() {
    local k=0 p
    for p in $(procs); do
        k=$((k + $(awk -v f="$1:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo "$k"
}

stop() {
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
}

hz=$(getconf CLK_TCK)
# measure KIND QUERIES FLAGS: appends "µs-process µs-cpu0 answers lost" to $WORK/r.KIND.$name.
measure() {
    local kind=$1 queries=$2 flags=$3 res
    local t0 c0
    t0=$(ticks)
    c0=$(cpu0)
    # shellcheck disable=SC2086
    res=$(taskset -c 1 dnsperf -s 127.0.0.1 -p $port -d "$queries" -l "$seconds" -Q "$rate" -t 1 $flags 2>&1)
    local t1 c1
    t1=$(ticks)
    c1=$(cpu0)
    local done lost
    done=$(echo "$res" | awk '/Queries completed:/ {print $3}')
    lost=$(echo "$res" | awk '/Queries lost:/ {print $3}')
    awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v n="$done" -v hz="$hz" -v l="$lost" \
        'BEGIN { printf "%.2f %.2f %d %d\n", (b - a) / hz * 1e6 / n, (d - c) / hz * 1e6 / n, n, l }' \
        >>"$WORK/r.$kind.$name"
}

declare -A first_unsigned first_signed rss_unsigned hwm_unsigned rss_signed hwm_signed
for round in $(seq 1 "$rounds"); do
    for name in $servers; do
        say "== round $round: $name, unsigned zone"
        start "$name" "$unsigned"
        first_unsigned[$name]=$FIRST_S
        rss_unsigned[$name]=$(kib VmRSS)
        hwm_unsigned[$name]=$(kib VmHWM)
        measure referral "$WORK/q-referral.txt" ""
        stop
        say "== round $round: $name, signed zone"
        start "$name" "$signed"
        first_signed[$name]=$FIRST_S
        rss_signed[$name]=$(kib VmRSS)
        hwm_signed[$name]=$(kib VmHWM)
        measure referral-do "$WORK/q-referral.txt" "-D"
        measure nxdomain-do "$WORK/q-nxdomain.txt" "-D"
        stop
    done
done

median() { sort -n | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
    echo "# A TLD-shaped zone served by Lode, Knot DNS and NSD"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); Lode $(git -C "$root" rev-parse --short HEAD); $(knotd -V 2>&1 | head -n 1); NSD $(nsd -v 2>&1 | head -n 1 | awk '{print $NF}'); $(uname -r); $(nproc) CPUs."
    echo
    echo "\`lode-bench gen tld --delegations $delegations\` ($(wc -l <"$unsigned") lines unsigned), signed by kzonesign (ECDSA P-256, NSEC3 opt-out, no salt, 0 iterations) in $sign_s s. One UDP worker on CPU 0, dnsperf on CPU 1 at $rate q/s for $seconds s, $rounds rounds, medians."
    echo
    echo "| server | referral µs (process / CPU 0) | DO=1 referral µs | DO=1 NXDOMAIN µs | lost |"
    echo "|---|---|---|---|---|"
    for name in $servers; do
        row="| $name"
        lost=0
        for kind in referral referral-do nxdomain-do; do
            f=$WORK/r.$kind.$name
            p=$(awk '{print $1}' "$f" | median)
            c=$(awk '{print $2}' "$f" | median)
            lost=$((lost + $(awk '{s += $4} END {print s}' "$f")))
            row="$row | $p / $c"
        done
        echo "$row | $lost |"
    done
    echo
    echo "| server | unsigned: first answer s, VmRSS / VmHWM MiB | signed: first answer s, VmRSS / VmHWM MiB |"
    echo "|---|---|---|"
    for name in $servers; do
        echo "| $name | ${first_unsigned[$name]} s, $((rss_unsigned[$name] / 1024)) / $((hwm_unsigned[$name] / 1024)) | ${first_signed[$name]} s, $((rss_signed[$name] / 1024)) / $((hwm_signed[$name] / 1024)) |"
    done
    echo
    echo "NSD's memory is its processes' sum (parent and server child share pages: RSS counts them twice). First answer and memory are the last round's."
    echo
    echo "Command: \`DELEGATIONS=$delegations RATE=$rate SECONDS_RUN=$seconds ROUNDS=$rounds SERVERS='$servers' bash scripts/bench-tld.sh\`"
} >"$md"
cat "$md" | tee -a "$log"
