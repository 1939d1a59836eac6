#!/usr/bin/env bash
# Signatures/s with keys in a PKCS #11 token (SoftHSM2) against keys in
# files, Lode beside Knot 3.2 signing the same zone with the same token
# : one ENUM zone of RECORDS NAPTR records (default 20,000),
# signed whole with NSEC by ECDSA P-256 keys, 2 signing threads, each signer
# once with key files and once with a keystore in a fresh SoftHSM2 token.
#
#   RECORDS=20000 WORK=/var/tmp/lode-hsm bash scripts/bench-hsm.sh
#
# Lode: `lode serve` with dnssec-signing, the "signed whole in S s" line of
# its log (signing alone) and the signatures counted by AXFR. Knot:
# `kzonesign` (wall time of the command; it also loads and writes the zone)
# and the signatures in the zone it writes. Needs softhsm2, knot,
# knot-dnssecutils. Knot's keystore takes the PIN in its config
# (pin-value); Lode's reads it from a file.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/var/tmp/lode-hsm}
records=${RECORDS:-20000}
port=15394
module=/usr/lib/softhsm/libsofthsm2.so
export PATH="$PATH:/usr/sbin"
cargo build --release --bin lode --bin lode-bench >/dev/null
LODE=$PWD/target/release/lode
BENCH=$PWD/target/release/lode-bench
rm -rf "$work"
mkdir -p "$work"
"$BENCH" gen enum --records "$records" --zones 1 --out "$work/set" --prefix 16461 >/dev/null
zone=$(grep '^name' "$work/set/lode.toml" | head -1 | cut -d'"' -f2)
file=$(grep '^file' "$work/set/lode.toml" | head -1 | cut -d'"' -f2)
case "$file" in /*) ;; *) file="$work/set/$file" ;; esac

# A fresh token "bench" (PIN 1234) in $work/tokens.
mkdir -p "$work/tokens"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$work/tokens" > "$work/softhsm2.conf"
export SOFTHSM2_CONF=$work/softhsm2.conf
softhsm2-util --init-token --free --label bench --pin 1234 --so-pin 5678 >/dev/null
echo 1234 > "$work/pin"

count_sigs() {
    awk '$3 == "RRSIG" || $4 == "RRSIG" { n++ } END { print n + 0 }'
}

echo "zone $zone: $records NAPTR records; $(nproc) CPUs; SoftHSM2 $(softhsm2-util --version)"
printf '%-30s %10s %10s %12s\n' signer "signing s" signatures "sig/s"

for store in files token; do
    d="$work/lode-$store"
    mkdir -p "$d"
    keystore=
    [ "$store" = token ] && keystore='keystore = "hsm"'
    cat > "$d/lode.toml" <<EOF
listen = ["127.0.0.1:$port"]
journal-dir = "$d/journal"
control = ""
zonefile-sync = -1
[[keystore]]
id = "hsm"
backend = "pkcs11"
config = "pkcs11:token=bench;pin-source=$work/pin $module"
[[acl]]
id = "xfr"
action = ["transfer"]
[[policy]]
id = "bench"
signing-threads = 2
$keystore
[[zone]]
name = "$zone"
file = "$file"
acl = ["xfr"]
dnssec-signing = true
dnssec-policy = "bench"
EOF
    "$LODE" serve --config "$d/lode.toml" --workers 1 > "$d/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 36000); do
        grep -q "signed whole" "$d/serve.log" && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    for _ in $(seq 1 100); do
        kdig +short +time=1 +retry=0 @127.0.0.1 -p $port "$zone" SOA 2>/dev/null | grep -q . && break
        sleep 0.2
    done
    sigs=$(kdig @127.0.0.1 -p $port "$zone" AXFR +nocomments 2>/dev/null | count_sigs)
    kill $pid
    wait $pid 2>/dev/null || true
    took=$(grep -oE 'signed whole in [0-9.]+ s' "$d/serve.log" | grep -oE '[0-9.]+' | head -1)
    printf '%-30s %10s %10s %12.0f\n' "lode, keys in $store" "$took" "$sigs" "$(echo "$sigs / $took" | bc -l)"
done

for store in files token; do
    k="$work/knot-$store"
    mkdir -p "$k/out"
    keystore=
    [ "$store" = token ] && keystore='    keystore: hsm'
    cat > "$k/knot.conf" <<EOF
database:
    storage: "$k"
keystore:
  - id: hsm
    backend: pkcs11
    config: "pkcs11:token=bench;pin-value=1234 $module"
policy:
  - id: bench
    algorithm: ecdsap256sha256
    signing-threads: 2
$keystore
zone:
  - domain: $zone
    file: "$file"
    dnssec-signing: on
    dnssec-policy: bench
EOF
    start=$(date +%s.%N)
    kzonesign -c "$k/knot.conf" -o "$k/out" "$zone" > "$k/kzonesign.log" 2>&1 || {
        echo "kzonesign ($store) failed:" >&2
        tail -5 "$k/kzonesign.log" >&2
        continue
    }
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc)
    sigs=$(cat "$k/out/"* | count_sigs)
    printf '%-30s %10.1f %10s %12.0f\n' "knot kzonesign, keys in $store" "$wall" "$sigs" "$(echo "$sigs / $wall" | bc -l)"
done
