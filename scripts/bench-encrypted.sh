#!/usr/bin/env bash
# DNS over TLS (and QUIC) side by side: Lode, NSD 4.6 and BIND 9.18
# serving the same ENUM zone with the same certificate, each pinned to CPU 0 with
# one worker; dnsperf on CPU 1 over persistent connections.
#
#   bash scripts/bench-encrypted.sh           # 500,000 numbers, 10 s per run
#   N=5000000 DUR=20 bash scripts/bench-encrypted.sh
#
# Prints, per server: DoT answers/s (dnsperf -m dot, CLIENTS connections), plain-TCP
# answers/s (dnsperf -m tcp) and their ratio; new DoT handshakes/s with one query
# each (lode-bench handshakes: full handshakes, no resumption) and the server's CPU
# per handshake. For Lode also: memory per idle DoT connection (IDLE connections
# opened and held by a Python client, resident memory before and after); DoQ
# handshakes/s and DoQ answers/s over persistent connections (lode-bench
# handshakes --quic, lode-bench doq; no peer here serves DoQ) and memory per idle DoQ
# connection (lode-bench doq --idle); the zone's AXFR over
# plain TCP and over TLS (lode-bench axfr [--tls], median of 3); and a BIND 9.18
# secondary taking the zone from Lode over TLS, timed. Results go to $OUT (default:
# a temporary folder) and stdout. Every run is bounded (dnsperf -l DUR, lode-bench
# --duration, waits with a limit); servers are stopped by their PID.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-500000}
DUR=${DUR:-10}
CLIENTS=${CLIENTS:-20}
IDLE=${IDLE:-2000}
OUT=${OUT:-$(mktemp -d /tmp/lode-bench-encrypted.XXXX)}
PORT=17100
TLS=17101
QUIC=17102
BIND2=17103
KEY_SECRET=bG9kZS1iZW5jaC11cGRhdGUta2V5LTMyLWJ5dGVzISE=   # lode-bench's fixed key
export PATH="$PATH:/usr/sbin"

for p in dnsperf nsd named openssl kdig python3; do
    command -v "$p" >/dev/null || { echo "missing: $p" >&2; exit 1; }
done
cargo build --release -p lode -p lode-bench-app >/dev/null 2>&1 || cargo build --release -p lode -p lode-bench-app
mkdir -p "$OUT"
echo "==> data: $N numbers in one zone, in $OUT"
target/release/lode-bench gen enum --records "$N" --zones 1 --out "$OUT/data" >/dev/null
zone_file=$(ls "$OUT"/data/*.zone)
zone=$(basename "$zone_file" .zone)
queries="$OUT/data/queries-existing.txt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=ns.example -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2>/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

wait_answer() {
    for _ in $(seq 1 600); do
        if kdig @127.0.0.1 -p "$PORT" +tcp +short "$zone" SOA 2>/dev/null | grep -q .; then return 0; fi
        sleep 0.5
    done
    echo "server did not answer" >&2
    return 1
}

# dnsperf's "Queries per second" over DUR seconds.
perf() {
    local mode=$1 port=$2
    taskset -c 1 dnsperf -m "$mode" -s 127.0.0.1 -p "$port" -d "$queries" -c "$CLIENTS" \
        -l "$DUR" -q 500 2>&1 | tee "$OUT/dnsperf-$label-$mode.txt" |
        awk '/Queries per second/ {print int($4)}'
}

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

run() {
    label=$1
    wait_answer
    local tls tcp
    tls=$(perf dot "$TLS")
    tcp=$(perf tcp "$PORT")
    printf '%-6s DoT %8s answers/s   TCP %8s answers/s   DoT/TCP %s\n' "$label" "$tls" "$tcp" \
        "$(awk -v a="$tls" -v b="$tcp" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" |
        tee -a "$OUT/summary.txt"
}

# New DoT (or, with --quic, DoQ) connections, a full handshake and a query each;
# $2: the serving process (NSD serves from a child).
handshakes() {
    local label=$1 pid=$2
    shift 2
    printf '%-6s ' "$label" | tee -a "$OUT/summary.txt"
    taskset -c 1 target/release/lode-bench handshakes --queries "$queries" --duration "$DUR" \
        --pid "$pid" "$@" | tee -a "$OUT/summary.txt"
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# --- Lode
cat >"$OUT/lode.toml" <<EOF
listen = ["127.0.0.1:$PORT"]
listen-tls = ["127.0.0.1@$TLS"]
listen-quic = ["127.0.0.1@$QUIC"]
cert-file = "$OUT/cert.pem"
key-file = "$OUT/key.pem"
control = ""
workers = 1
tcp-max-clients = 10000
[[key]]
id = "lode-bench-update."
algorithm = "hmac-sha256"
secret = "$KEY_SECRET"
[[acl]]
id = "xfr"
key = ["lode-bench-update."]
action = ["transfer"]
[[zone]]
name = "$zone"
file = "$zone_file"
acl = ["xfr"]
EOF
taskset -c 0 target/release/lode serve --config "$OUT/lode.toml" >"$OUT/lode.log" 2>&1 &
lode=$!
pids+=("$lode")
run lode
handshakes lode "$lode" --server "127.0.0.1:$TLS"
handshakes lode "$lode" --server "127.0.0.1:$QUIC" --quic
printf 'lode   ' | tee -a "$OUT/summary.txt"
taskset -c 1 target/release/lode-bench doq --server "127.0.0.1:$QUIC" --queries "$queries" \
    --connections "$CLIENTS" --duration "$DUR" --pid "$lode" | tee -a "$OUT/summary.txt"
# Memory per idle DoQ connection (held open by keep-alives after one query each).
printf 'lode   ' | tee -a "$OUT/summary.txt"
taskset -c 1 target/release/lode-bench doq --idle --server "127.0.0.1:$QUIC" --queries "$queries" \
    --connections "$IDLE" --pid "$lode" | tee -a "$OUT/summary.txt"
for how in tcp tls; do
    port=$PORT
    flag=()
    if [ "$how" = tls ]; then port=$TLS; flag=(--tls); fi
    printf 'lode   AXFR over %s: ' "$how" | tee -a "$OUT/summary.txt"
    taskset -c 1 target/release/lode-bench axfr --server "127.0.0.1:$port" --zone "$zone" \
        --rounds 3 --pid "$lode" "${flag[@]}" | tail -1 | tee -a "$OUT/summary.txt"
done
# A BIND 9.18 secondary takes the zone from Lode over TLS (XoT), timed until it serves it.
mkdir -p "$OUT/bind2"
cat >"$OUT/bind2/named.conf" <<EOF
options {
    directory "$OUT/bind2";
    pid-file "$OUT/bind2/named.pid";
    listen-on port $BIND2 { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no; notify no; dnssec-validation no;
};
controls { };
key "lode-bench-update." { algorithm hmac-sha256; secret "$KEY_SECRET"; };
tls opportunistic { };
zone "$zone" { type secondary; file "sec.db";
    primaries { 127.0.0.1 port $TLS key "lode-bench-update." tls opportunistic; }; };
EOF
t0=$(date +%s.%N)
taskset -c 1 named -f -4 -n 1 -c "$OUT/bind2/named.conf" >"$OUT/bind2.log" 2>&1 &
named2=$!
pids+=("$named2")
took=""
for _ in $(seq 1 3000); do
    if dig @127.0.0.1 -p "$BIND2" +short +norec "$zone" SOA 2>/dev/null | grep -q .; then
        took=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
        break
    fi
    sleep 0.2
done
echo "lode   -> BIND 9.18 secondary over TLS: ${took:-not done in 600} s (named start included)" |
    tee -a "$OUT/summary.txt"
stop "$named2"
# Memory per idle DoT connection: IDLE handshakes, held open while measured.
before=$(rss_kib "$lode")
python3 - "$TLS" "$IDLE" "$lode" <<'EOF' | tee -a "$OUT/summary.txt"
import socket, ssl, sys, time
port, n, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["dot"])
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
before = rss()
conns = []
t0 = time.time()
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    conns.append(ctx.wrap_socket(s, server_hostname="ns.example"))
took = time.time() - t0
time.sleep(1)
after = rss()
print(f"lode   {n} idle DoT connections: {(after - before) * 1024 / n:.0f} bytes each "
      f"(RSS {before} -> {after} KiB); {n / took:.0f} handshakes/s from one Python client")
for c in conns:
    c.close()
EOF
start=$(date +%s.%N)
for _ in $(seq 1 200); do
    kdig @127.0.0.1 -p "$QUIC" +quic +short "$zone" SOA >/dev/null 2>&1
done
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "lode   DoQ: 200 kdig +quic runs (a handshake and a query each) in %.2f s\n", e - s }' |
    tee -a "$OUT/summary.txt"
stop "$lode"

# --- NSD 4.6
mkdir -p "$OUT/nsd"
cat >"$OUT/nsd/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1@$PORT
    ip-address: 127.0.0.1@$TLS      # NSD serves TLS on the interfaces at tls-port
    tls-port: $TLS
    tls-service-key: "$OUT/key.pem"
    tls-service-pem: "$OUT/cert.pem"
    server-count: 1
    tcp-count: 10000
    username: ""
    zonesdir: "$OUT/nsd"
    pidfile: "$OUT/nsd/nsd.pid"
    xfrdfile: "$OUT/nsd/xfrd.state"
    zonelistfile: "$OUT/nsd/zone.list"
    database: ""
    verbosity: 0
remote-control:
    control-enable: no
zone:
    name: "$zone"
    zonefile: "$zone_file"
EOF
taskset -c 0 nsd -d -c "$OUT/nsd/nsd.conf" >"$OUT/nsd.log" 2>&1 &
nsd=$!
pids+=("$nsd")
run nsd
handshakes nsd "$(pgrep -n -f "nsd -d -c $OUT/nsd/nsd.conf")" --server "127.0.0.1:$TLS"
stop "$nsd"

# --- BIND 9.18
mkdir -p "$OUT/bind"
cat >"$OUT/bind/named.conf" <<EOF
options {
    directory "$OUT/bind";
    pid-file "$OUT/bind/named.pid";
    listen-on port $PORT { 127.0.0.1; };
    listen-on port $TLS tls local { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    tcp-clients 10000;
};
controls { };
tls local { key-file "$OUT/key.pem"; cert-file "$OUT/cert.pem"; };
zone "$zone" { type primary; file "$zone_file"; };
EOF
taskset -c 0 named -f -4 -n 1 -c "$OUT/bind/named.conf" >"$OUT/bind.log" 2>&1 &
named=$!
pids+=("$named")
run bind
handshakes bind "$named" --server "127.0.0.1:$TLS"
stop "$named"

echo "==> $OUT/summary.txt"
