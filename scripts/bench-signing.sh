#!/usr/bin/env bash
# Signing, side by side on this machine, algorithm 13:
#
# 1. Full signing of one ENUM zone of RECORDS NAPTR records (default 500,000:
#    one zone of the 5 M set), NSEC and NSEC3: wall time, signatures/s and
#    peak memory of Lode (`lode serve` with dnssec-signing, time from start to
#    "signed whole"), Knot's kzonesign (signing-threads 2), BIND's
#    dnssec-signzone -n 2 and ldns-signzone (NSEC only for the last two), and
#    the machine's crypto ceiling (`openssl speed -multi 2 ecdsap256`).
# 2. Durable signed single-RR updates/s (64 TCP clients, TSIG, 10 zones of
#    the 500 k set): Lode signing vs Lode unsigned.
#
# 3. The same updates to Knot 3.2 signing the same zones (PART=3; Knot's
#    default policy, zonefile-sync -1, journal-content changes).
#
# 6. The same updates to BIND 9.18 signing the same zones (PART=6;
#    dnssec-policy default on the dynamic zones; WAIT bounds its signing).
# 4. Memory of a signed zone (PART=4): the NSEC3-signed 500 k zone (signed
#    by Lode, taken by AXFR) loaded pre-signed by Lode and by Knot: resident
#    memory above an empty server, bytes per record.
#
# 5. Server CPU per answer with DO=1 (PART=5, after PART=4): dnsperf -D at
#    RATE q/s, existing names and NXDOMAIN, signed (NSEC3) and unsigned, Lode,
#    Knot and NSD (SERVERS="lode knot nsd"), each server pinned to CPU 0.
#
#   bash scripts/bench-signing.sh                 # parts 1 and 2
#   PART=1 RECORDS=100000 bash scripts/bench-signing.sh
#
# Environment: WORK (scratch, default /var/tmp/lode-signing), RECORDS, PART
# (1, 2, 3, 4, 5, 6 or both = 1 and 2), DURATION (part 2, seconds, default 10), CLIENTS (64),
# PEERS=0 (part 1: Lode alone, without the peers and the crypto ceiling),
# SLOW=0 (part 1: without BIND and ldns, which take 10-25 minutes on 5 M records),
# CHAINS (part 1: "nsec nsec3" by default, or one of them), LODE_SIGN=0 (part 1: the
# peers alone), COUNT=0 (part 1: Lode's signatures not counted by AXFR — 20 M records
# take minutes to transfer),
# PREFIX (the E.164 prefix of the generated zone, default 16461; 1646 for 5 M records
# in one zone).
# Needs knot-dnssecutils (kzonesign), bind9-utils, ldnsutils, openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-signing}
records=${RECORDS:-500000}
part=${PART:-both}
port=15393
export PATH="$PATH:/usr/sbin"
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=$PWD/target/release/lode
BENCH=$PWD/target/release/lode-bench
mkdir -p "$work"

# The one-zone ENUM set of $records records (made the first time): sets
# set_dir, zone and file.
one_zone_set() {
    set_dir="$work/set-$records"
    if [ ! -f "$set_dir/lode.toml" ]; then
        "$BENCH" gen enum --records "$records" --zones 1 --out "$set_dir" --prefix "${PREFIX:-16461}" >/dev/null
    fi
    zone=$(grep '^name' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
    file=$(grep '^file' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
    case "$file" in /*) ;; *) file="$set_dir/$file" ;; esac
}

# Waits until a server on $port answers $zone's SOA.
wait_answer() {
    for _ in $(seq 1 600); do
        kdig +short +time=1 +retry=0 @127.0.0.1 -p $port "$zone" SOA 2>/dev/null | grep -q . && return 0
        sleep 0.5
    done
    return 1
}

# Signature records in zone text on stdin (type field RRSIG, not a bitmap's).
count_sigs() {
    awk '$3 == "RRSIG" || $4 == "RRSIG" { n++ } END { print n + 0 }'
}

# The update benchmark's set of 10 zones (made the first time) and its TSIG
# key: sets set_dir, key_name and secret.
update_set() {
    set_dir="$work/update-true/set"
    if [ ! -f "$set_dir/lode.toml" ]; then
        "$BENCH" gen enum --records 500000 --zones 10 --out "$set_dir" --prefix 16461 >/dev/null
    fi
    key_name=bench-update.
    secret=bG9kZS1iZW5jaC11cGRhdGUta2V5LTMyLWJ5dGVzISE=
}

# The update load of parts 3 and 6 against the peer on $port ($1 its name,
# $2 its data folder, where the disk's fdatasync rate is probed).
peer_updates() {
    local zones=()
    for z in $(grep '^name' "$set_dir/lode.toml" | cut -d'"' -f2); do zones+=(--zone "$z"); done
    echo "== durable single-RR updates, $1 signing"
    taskset -c 1 "$BENCH" update --server 127.0.0.1:$port "${zones[@]}" --clients "${CLIENTS:-64}" \
        --duration "${DURATION:-10}" --tsig "hmac-sha256:$key_name:$secret" --fsync-dir "$2" |
        grep -E "updates/s|acknowledged|fdatasync" || true
}

# Peak resident memory (MiB) and wall seconds of a command: "WALL PEAK".
measure() {
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > "$work/cmd.log" 2>&1 || {
        echo "failed: $*" >&2
        tail -5 "$work/cmd.log" >&2
        return 1
    }
    awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$work/time.txt"
}

if [ "$part" = 1 ] || [ "$part" = both ]; then
    one_zone_set
    names=$(grep -cv '^\s*[;$]' "$file" || true)
    echo "zone $zone: $(wc -l < "$file") lines in $file"
    [ "${PEERS:-1}" = 0 ] || echo "crypto ceiling: $(openssl speed -multi 2 -seconds 3 ecdsap256 2>/dev/null | awk '/256 bits ecdsa/ {print $(NF-1) " signatures/s (openssl, 2 processes)"}' | tail -1)"
    printf '%-34s %9s %10s %12s %9s\n' "signer" "wall s" "signatures" "sig/s" "peak MiB"

    # Lode: the time from start to the "signed whole" line, peak from /proc.
    lode_chains=${CHAINS:-nsec nsec3}
    [ "${LODE_SIGN:-1}" = 0 ] && lode_chains=
    for chain in $lode_chains; do
        rm -rf "$work/lode-$chain"
        mkdir -p "$work/lode-$chain"
        nsec3=false
        [ "$chain" = nsec3 ] && nsec3=true
        cat > "$work/lode-$chain/lode.toml" <<EOF
listen = ["127.0.0.1:$port"]
journal-dir = "$work/lode-$chain/journal"
control = ""
zonefile-sync = -1
[[acl]]
id = "xfr"
action = ["transfer"]
[[policy]]
id = "bench"
signing-threads = 2
nsec3 = $nsec3
[[zone]]
name = "$zone"
file = "$file"
acl = ["xfr"]
dnssec-signing = true
dnssec-policy = "bench"
EOF
        start=$(date +%s.%N)
        "$LODE" serve --config "$work/lode-$chain/lode.toml" --workers 1 > "$work/lode-$chain/serve.log" 2>&1 &
        pid=$!
        # (At most 3 hours: 20 M records take ~12 minutes.)
        for _ in $(seq 1 108000); do
            grep -q "signed whole" "$work/lode-$chain/serve.log" && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        end=$(date +%s.%N)
        # (Served a moment after the "signed whole" line: the AXFR waits for it.)
        wait_answer || { kill $pid; echo "lode did not serve $zone" >&2; exit 1; }
        peak=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)
        sigs=-
        [ "${COUNT:-1}" = 0 ] || sigs=$(kdig @127.0.0.1 -p $port "$zone" AXFR +nocomments 2>/dev/null | count_sigs)
        kill $pid; wait $pid 2>/dev/null || true
        took=$(grep -oE 'signed whole in [0-9.]+ s' "$work/lode-$chain/serve.log" | grep -oE '[0-9.]+' | head -1)
        wall=$(echo "$end - $start" | bc)
        if [ "$sigs" = - ]; then
            printf '%-34s %9.1f %10s %12s %9s   (signing alone %s s)\n' "lode ($chain, 2 threads, from start)" "$wall" - - "$peak" "$took"
        else
            printf '%-34s %9.1f %10s %12.0f %9s   (signing alone %s s: %.0f sig/s)\n' "lode ($chain, 2 threads, from start)" "$wall" "$sigs" "$(echo "$sigs / $wall" | bc -l)" "$peak" "$took" "$(echo "$sigs / $took" | bc -l)"
        fi
    done

    if [ "${PEERS:-1}" = 0 ]; then
        exit 0
    fi
    # Knot 3.2: kzonesign with a policy of 2 signing threads.
    for chain in ${CHAINS:-nsec nsec3}; do
        k="$work/knot-$chain"
        rm -rf "$k"
        mkdir -p "$k/out"
        nsec3=off
        [ "$chain" = nsec3 ] && nsec3=on
        cat > "$k/knot.conf" <<EOF
database:
    storage: "$k"
policy:
  - id: bench
    algorithm: ecdsap256sha256
    signing-threads: 2
    nsec3: $nsec3
    nsec3-iterations: 0
    nsec3-salt-length: 0
zone:
  - domain: $zone
    file: "$file"
    dnssec-signing: on
    dnssec-policy: bench
EOF
        read -r wall peak < <(measure kzonesign -c "$k/knot.conf" -o "$k/out" "$zone")
        sigs=$(cat "$k/out/"* | count_sigs)
        printf '%-34s %9.1f %10s %12.0f %9s\n' "knot kzonesign ($chain, 2 threads)" "$wall" "$sigs" "$(echo "$sigs / $wall" | bc -l)" "$peak"
    done

    if [ "${SLOW:-1}" = 0 ]; then
        echo "($names names in the zone file; BIND and ldns left out: SLOW=0)"
        exit 0
    fi
    # BIND 9.18: dnssec-signzone -n 2, NSEC.
    b="$work/bind"
    rm -rf "$b"
    mkdir -p "$b"
    (cd "$b" && dnssec-keygen -q -a ECDSAP256SHA256 -f KSK "$zone" >/dev/null && dnssec-keygen -q -a ECDSAP256SHA256 "$zone" >/dev/null)
    cp "$file" "$b/zone"
    read -r wall peak < <(measure dnssec-signzone -O full -n 2 -S -K "$b" -d "$b" -o "$zone" -f "$b/zone.signed" "$b/zone")
    sigs=$(count_sigs < "$b/zone.signed")
    printf '%-34s %9.1f %10s %12.0f %9s\n' "bind dnssec-signzone (nsec, -n 2)" "$wall" "$sigs" "$(echo "$sigs / $wall" | bc -l)" "$peak"

    # ldns-signzone: one thread, NSEC.
    l="$work/ldns"
    rm -rf "$l"
    mkdir -p "$l"
    (cd "$l" && ldns-keygen -a ECDSAP256SHA256 -k "$zone" > ksk && ldns-keygen -a ECDSAP256SHA256 "$zone" > zsk)
    cp "$file" "$l/zone"
    read -r wall peak < <(measure ldns-signzone -f "$l/zone.signed" "$l/zone" "$l/$(cat "$l/ksk")" "$l/$(cat "$l/zsk")")
    sigs=$(count_sigs < "$l/zone.signed")
    printf '%-34s %9.1f %10s %12.0f %9s\n' "ldns-signzone (nsec, 1 thread)" "$wall" "$sigs" "$(echo "$sigs / $wall" | bc -l)" "$peak"
    echo "($names names in the zone file)"
fi

if [ "$part" = 2 ] || [ "$part" = both ]; then
    # Part 2: the update benchmark of scripts/bench-update-cpu.sh with and
    # without signing.
    for signed in false true; do
        echo "== durable single-RR updates, dnssec-signing = $signed"
        SIGNED=$signed WORK="$work/update-$signed" bash scripts/bench-update-cpu.sh 2>&1 | grep -E "updates/s|per durable|acknowledged|fdatasync" || true
    done
fi

if [ "$part" = 3 ]; then
    k="$work/knot-update"
    rm -rf "$k"
    mkdir -p "$k"
    update_set
    {
        echo "server:"
        echo "    rundir: \"$k\""
        echo "    listen: 127.0.0.1@$port"
        echo "    background-workers: 2"
        echo "key:"
        echo "  - id: $key_name"
        echo "    algorithm: hmac-sha256"
        echo "    secret: $secret"
        echo "acl:"
        echo "  - id: upd"
        echo "    key: $key_name"
        echo "    action: update"
        echo "database:"
        echo "    storage: \"$k\""
        echo "template:"
        echo "  - id: default"
        echo "    storage: \"$k\""
        echo "    zonefile-sync: -1"
        echo "    zonefile-load: whole"
        echo "    journal-content: changes"
        echo "    dnssec-signing: on"
        echo "    acl: upd"
        echo "zone:"
        paste -d' ' <(grep '^name' "$set_dir/lode.toml" | cut -d'"' -f2) <(grep '^file' "$set_dir/lode.toml" | cut -d'"' -f2) |
            while read -r name file; do
                case "$file" in /*) ;; *) file="$set_dir/$file" ;; esac
                echo "  - domain: $name"
                echo "    file: \"$file\""
            done
    } > "$k/knot.conf"
    taskset -c 0 knotd -c "$k/knot.conf" > "$k/knotd.log" 2>&1 &
    kpid=$!
    trap 'kill $kpid 2>/dev/null || true' EXIT
    first=$(grep '^name' "$set_dir/lode.toml" | head -1 | cut -d'"' -f2)
    last=$(grep '^name' "$set_dir/lode.toml" | tail -1 | cut -d'"' -f2)
    for _ in $(seq 1 600); do
        if kdig +short +time=1 +retry=0 @127.0.0.1 -p $port "$last" DNSKEY | grep -q . &&
            kdig +short +time=1 +retry=0 @127.0.0.1 -p $port "$first" DNSKEY | grep -q .; then break; fi
        sleep 0.5
    done
    peer_updates "Knot 3.2" "$k"
    kill $kpid
fi

if [ "$part" = 6 ]; then
    # BIND 9.18 signing the same zones (dnssec-policy default: ECDSA P-256,
    # NSEC; the zones dynamic, so signed in place, each update signed
    # before it is answered), the same update load as parts 2 and 3.
    b="$work/bind-update"
    rm -rf "$b"
    mkdir -p "$b"
    update_set
    {
        echo "options { directory \"$b\"; pid-file \"$b/named.pid\"; session-keyfile \"$b/session.key\";"
        echo "  managed-keys-directory \"$b\"; listen-on port $port { 127.0.0.1; }; listen-on-v6 { none; };"
        echo "  recursion no; dnssec-validation no; notify no; };"
        echo "controls { };"
        echo "logging { category update { null; }; };"
        echo "key \"$key_name\" { algorithm hmac-sha256; secret \"$secret\"; };"
        i=0
        paste -d' ' <(grep '^name' "$set_dir/lode.toml" | cut -d'"' -f2) <(grep '^file' "$set_dir/lode.toml" | cut -d'"' -f2) |
            while read -r name file; do
                case "$file" in /*) ;; *) file="$set_dir/$file" ;; esac
                # BIND writes updated zones back to their files: its own copies.
                cp "$file" "$b/zone$i.db"
                echo "zone \"$name\" { type primary; file \"$b/zone$i.db\"; dnssec-policy default;"
                echo "  allow-update { key \"$key_name\"; }; };"
                i=$((i + 1))
            done
    } > "$b/named.conf"
    start=$(date +%s.%N)
    taskset -c 0 named -g -4 -n 1 -c "$b/named.conf" > "$b/named.log" 2>&1 &
    bpid=$!
    trap 'kill $bpid 2>/dev/null || true' EXIT
    # Signed when the last NAPTR of every zone has its signature (BIND signs
    # a new zone in steps); at most WAIT seconds (default 1800).
    names=()
    for z in $(grep '^name' "$set_dir/lode.toml" | cut -d'"' -f2); do
        f=$(grep -l "ORIGIN $z" "$b"/zone*.db | head -1)
        names+=("$(awk '$0 !~ /^[;$]/ && NF > 3 {o=$1} END {print o}' "$f").$z")
    done
    deadline=$(( $(date +%s) + ${WAIT:-1800} ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        left=0
        for n in "${names[@]}"; do
            kdig +dnssec +timeout=1 +retry=0 @127.0.0.1 -p $port "$n" NAPTR 2>/dev/null | grep -q 'RRSIG' || left=$((left + 1))
        done
        [ "$left" = 0 ] && break
        sleep 2
    done
    printf 'BIND signed the zones in %.1f s (%s of %s last names unsigned)\n' \
        "$(echo "$(date +%s.%N) - $start" | bc -l)" "$left" "${#names[@]}"
    peer_updates "BIND 9.18" "$b"
    kill $bpid
fi

if [ "$part" = 4 ]; then
    one_zone_set
    m="$work/memory"
    rm -rf "$m"
    mkdir -p "$m"
    printf '%s\n' "listen = [\"127.0.0.1:$port\"]" "journal-dir = \"$m/journal\"" 'control = ""' \
        'zonefile-sync = -1' '[[acl]]' 'id = "xfr"' 'action = ["transfer"]' '[[policy]]' \
        'id = "bench"' 'nsec3 = true' '[[zone]]' "name = \"$zone\"" "file = \"$file\"" \
        'acl = ["xfr"]' 'dnssec-signing = true' 'dnssec-policy = "bench"' > "$m/sign.toml"
    "$LODE" serve --config "$m/sign.toml" --workers 1 > "$m/sign.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 3000); do grep -q "signed whole" "$m/sign.log" && break; sleep 0.1; done
    # The transfer's closing SOA left out (NSD refuses a zone file with two).
    kdig @127.0.0.1 -p $port "$zone" AXFR +nocomments 2>/dev/null | grep -v '^;' | grep . |
        awk '$4 == "SOA" && seen++ { next } 1' > "$m/signed.zone"
    kill $pid; wait $pid 2>/dev/null || true
    n=$(grep -c . "$m/signed.zone")
    echo "signed zone: $n records ($(du -m "$m/signed.zone" | cut -f1) MB of text)"
    printf '$ORIGIN %s\n@ 3600 SOA ns host 1 3600 600 86400 300\n@ 3600 NS ns\nns 3600 A 192.0.2.1\n' "$zone" > "$m/empty.zone"
    rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
    declare -A kib
    for what in signed empty; do
        zf="$m/$what.zone"
        "$LODE" serve --zone "$zone=$zf" --listen 127.0.0.1:$port --workers 1 --control "" > "$m/lode-$what.log" 2>&1 &
        pid=$!
        wait_answer
        sleep 1
        kib[lode-$what]=$(rss $pid)
        kill $pid; wait $pid 2>/dev/null || true
        k="$m/knot-$what"
        mkdir -p "$k"
        printf 'server:\n    rundir: "%s"\n    listen: 127.0.0.1@%s\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\ndatabase:\n    storage: "%s"\ntemplate:\n  - id: default\n    storage: "%s"\n    zonefile-sync: -1\n    journal-content: none\nzone:\n  - domain: %s\n    file: "%s"\n' \
            "$k" "$port" "$k" "$k" "$zone" "$zf" > "$k/knot.conf"
        knotd -c "$k/knot.conf" > "$k/knotd.log" 2>&1 &
        pid=$!
        wait_answer
        sleep 1
        kib[knot-$what]=$(rss $pid)
        kill $pid; wait $pid 2>/dev/null || true
    done
    printf '%-6s %12s %12s %14s\n' server "RSS KiB" "empty KiB" "bytes/record"
    for s in lode knot; do
        printf '%-6s %12s %12s %14.1f\n' "$s" "${kib[$s-signed]}" "${kib[$s-empty]}" \
            "$(echo "(${kib[$s-signed]} - ${kib[$s-empty]}) * 1024 / $n" | bc -l)"
    done
fi

if [ "$part" = 5 ]; then
    # 5. Server CPU per answer with DO=1 (RATE q/s for SECS s by dnsperf, the
    #    server pinned to CPU 0, dnsperf on CPU 1): existing names and
    #    NXDOMAIN, on the NSEC3-signed zone of part 4 (run it first) and on
    #    the unsigned zone, Lode, Knot and NSD (SERVERS to choose; NSD's
    #    CPU summed over its processes).
    m="$work/memory"
    [ -f "$m/signed.zone" ] || { echo "run PART=4 first (it makes $m/signed.zone)" >&2; exit 1; }
    one_zone_set
    rate=${RATE:-20000}
    secs=${SECS:-10}
    q="$work/queries"
    mkdir -p "$q"
    awk '$4 == "NAPTR" { print $1, "NAPTR" }' "$m/signed.zone" | sort -u | shuf -n 20000 --random-source=<(yes) > "$q/exist.txt"
    sed 's/^/nx-/' "$q/exist.txt" | awk '{ print $1, "NAPTR" }' > "$q/nx.txt"
    # utime + stime of a process and its descendants (NSD: xfrd, its main
    # process and the servers under it).
    tree() {
        local c
        echo "$1"
        for c in $(pgrep -P "$1"); do tree "$c"; done
    }
    # $2: the fields summed, after the command name (which may hold
    # spaces: "nsd: main"): 12 user time, 13 system time.
    cpu() {
        local p t=0
        for p in $(tree "$1"); do
            t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk -v f="${2:-12 13}" '
                { n = split(f, a, " "); s = 0; for (i = 1; i <= n; i++) s += $(a[i]); print s }' || echo 0)))
        done
        echo "$t"
    }
    tick=$(getconf CLK_TCK)
    printf '%-6s %-9s %-6s %9s %12s %14s %14s\n' server zone kind answered "cpu s" "µs per answer" "of it in kernel"
    for server in ${SERVERS:-lode knot nsd}; do
        for z in signed unsigned; do
            zf="$m/signed.zone"
            [ $z = unsigned ] && zf="$file"
            if [ $server = lode ]; then
                taskset -c 0 "$LODE" serve --zone "$zone=$zf" --listen 127.0.0.1:$port --workers 1 --control "" > "$q/$server-$z.log" 2>&1 &
            elif [ $server = nsd ]; then
                n="$q/nsd-$z"
                mkdir -p "$n"
                printf 'server:\n    ip-address: 127.0.0.1@%s\n    server-count: 1\n    username: ""\n    chroot: ""\n    zonesdir: "%s"\n    database: ""\n    pidfile: "%s/nsd.pid"\n    xfrdfile: "%s/xfrd.state"\n    zonelistfile: "%s/zone.list"\n    xfrdir: "%s"\n    verbosity: 1\n    rrl-ratelimit: 0\n    do-ip6: no\nremote-control:\n    control-enable: no\nzone:\n    name: "%s"\n    zonefile: "%s"\n' \
                    "$port" "$n" "$n" "$n" "$n" "$n" "$zone" "$zf" > "$n/nsd.conf"
                taskset -c 0 nsd -d -c "$n/nsd.conf" > "$n/nsd.log" 2>&1 &
            else
                k="$q/knot-$z"
                mkdir -p "$k"
                printf 'server:\n    rundir: "%s"\n    listen: 127.0.0.1@%s\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\ndatabase:\n    storage: "%s"\ntemplate:\n  - id: default\n    storage: "%s"\n    zonefile-sync: -1\n    journal-content: none\nzone:\n  - domain: %s\n    file: "%s"\n' \
                    "$k" "$port" "$k" "$k" "$zone" "$zf" > "$k/knot.conf"
                taskset -c 0 knotd -c "$k/knot.conf" > "$k/knotd.log" 2>&1 &
            fi
            pid=$!
            wait_answer
            for kind in exist nx; do
                before=$(cpu $pid)
                sys_before=$(cpu $pid 13)
                taskset -c 1 dnsperf -s 127.0.0.1 -p $port -d "$q/$kind.txt" -D -l "$secs" -Q "$rate" -c 4 > "$q/$server-$z-$kind.txt" 2>&1 || true
                after=$(cpu $pid)
                sys_after=$(cpu $pid 13)
                answered=$(awk '/Queries completed/ { print $3 }' "$q/$server-$z-$kind.txt")
                cpu_s=$(echo "scale=3; ($after - $before) / $tick" | bc)
                sys_s=$(echo "scale=3; ($sys_after - $sys_before) / $tick" | bc)
                printf '%-6s %-9s %-6s %9s %12s %14.2f %14.2f\n' "$server" "$z" "$kind" "$answered" "$cpu_s" \
                    "$(echo "$cpu_s * 1000000 / ${answered:-1}" | bc -l)" \
                    "$(echo "$sys_s * 1000000 / ${answered:-1}" | bc -l)"
            done
            kill $pid; wait $pid 2>/dev/null || true
        done
    done
fi
