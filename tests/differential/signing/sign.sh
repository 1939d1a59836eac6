#!/usr/bin/env bash
# Re-creates zones/signed.example.zone (NSEC) and zones/signed3.example.zone
# (NSEC3, no salt, 0 iterations, opt-out) from signed.example.unsigned, with
# a knotd that signs once (ECDSA P-256, signatures valid for 10 years) and
# writes the signed zone back. New keys each run: queries.txt does not
# depend on key tags or signatures, so the suite needs no other change.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$PATH:/usr/sbin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
port=15349
for z in signed signed3; do
    d="$work/$z"
    mkdir -p "$d"
    sed "s/signed\.example/$z.example/g" "$here/signed.example.unsigned" > "$d/$z.example.zone"
    nsec3=off
    [ "$z" = signed3 ] && nsec3=on
    cat > "$d/knot.conf" <<CONF
server:
    rundir: "$d"
    listen: 127.0.0.1@$port
database:
    storage: "$d"
log:
  - target: stderr
    any: notice
policy:
  - id: long
    algorithm: ecdsap256sha256
    rrsig-lifetime: 3650d
    rrsig-refresh: 30d
    nsec3: $nsec3
    nsec3-iterations: 0
    nsec3-salt-length: 0
    nsec3-opt-out: on
template:
  - id: default
    storage: "$d"
    file: "%s.zone"
    dnssec-signing: on
    dnssec-policy: long
    zonefile-sync: 0
    journal-content: none
    zonefile-load: whole
zone:
  - domain: $z.example.
CONF
    knotd -c "$d/knot.conf" &
    pid=$!
    for _ in $(seq 50); do
        grep -q RRSIG "$d/$z.example.zone" 2>/dev/null && break
        sleep 0.2
    done
    sleep 0.5
    kill "$pid"
    wait "$pid" || true
    grep -q RRSIG "$d/$z.example.zone" || { echo "signing $z.example failed" >&2; exit 1; }
    {
        echo "; $z.example: signed once, offline, by Knot 3.2 (tests/differential/signing/sign.sh);"
        echo "; both servers serve it as plain data (dnssec-signing: off)."
        cat "$d/$z.example.zone"
    } > "$here/../zones/$z.example.zone"
done
