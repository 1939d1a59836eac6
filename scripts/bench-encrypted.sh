#!/usr/bin/env bash
# DNS over TLS (and QUIC) side by side (issue 21 §7): Lode, NSD 4.6 and BIND 9.18
# serving the same ENUM zone with the same certificate, each pinned to CPU 0 with
# one worker; dnsperf on CPU 1 over persistent connections.
#
#   bash scripts/bench-encrypted.sh           # 500,000 numbers, 10 s per run
#   N=5000000 DUR=20 bash scripts/bench-encrypted.sh
#
# Prints, per server: DoT answers/s (dnsperf -m dot, CLIENTS connections), plain-TCP
# answers/s (dnsperf -m tcp) and their ratio; Lode's memory per idle DoT
# connection (IDLE connections opened and held by a Python client, resident
# memory before and after); and kdig +quic's time for Lode's DoQ (no peer here
# serves DoQ). Results go to $OUT (default: a temporary folder) and stdout.
# Every run is bounded (dnsperf -l DUR); servers are stopped by their PID.
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
[[zone]]
name = "$zone"
file = "$zone_file"
EOF
taskset -c 0 target/release/lode serve --config "$OUT/lode.toml" >"$OUT/lode.log" 2>&1 &
lode=$!
pids+=("$lode")
run lode
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
stop "$named"

echo "==> $OUT/summary.txt"
