#!/usr/bin/env bash
# UDP over XDP under the packaged unit with its XDP drop-in (a part of
# scripts/deb-test.sh, run with the package installed, as root). systemd is
# not PID 1 on every test machine, so the unit's sandbox is applied as far
# as it bears on XDP, from the installed files themselves:
# - capabilities: /usr/sbin/lode runs as the lode user with exactly the
#   ambient and bounding capabilities of lode.service plus the drop-in
#   (setpriv), in a network namespace joined to a client's by a veth pair;
#   it must answer dig over XDP (the `xdp` counters of `lode status`);
# - system calls and address families: the server runs under strace, and
#   every system call it made must be one the unit's SystemCallFilter= lines
#   (then the drop-in's) allow, every socket family one of its
#   RestrictAddressFamilies=;
# - without the drop-in (the unit's capabilities only) the start fails with
#   the reason, not silently on the socket path.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "FAILED: XDP under the unit: $*" >&2
    exit 1
}
unit=/usr/lib/systemd/system/lode.service
dropin_src=/usr/share/doc/lode/examples/xdp.conf
[ -f "$unit" ] && [ -f "$dropin_src" ] || fail "the package has no $unit or $dropin_src"
export PATH="$PATH:/usr/sbin:/sbin"

id=$$
srv_ns="lode-deb-$id-s" cli_ns="lode-deb-$id-c" srv_if="ldbs$id" cli_if="ldbc$id"
work=$(mktemp -d)
dropin_dir=/etc/systemd/system/lode.service.d
pid=
cleanup() {
    # $pid is lode itself, or strace with lode its child.
    if [ -n "$pid" ]; then
        pkill -P "$pid" -x lode 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    fi
    ip netns del "$srv_ns" 2>/dev/null || true
    ip netns del "$cli_ns" 2>/dev/null || true
    rm -f "$dropin_dir/xdp.conf"
    rmdir "$dropin_dir" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The drop-in where the operator puts it; the unit with it must verify.
install -D -m 644 "$dropin_src" "$dropin_dir/xdp.conf"
systemd-analyze verify "$unit" || fail "systemd-analyze verify with the drop-in"

# `Key=` values of the unit then the drop-in, one per line, in order.
values() { sed -n "s/^$1=//p" "$unit" "$dropin_dir/xdp.conf"; }
caps=$(values AmbientCapabilities | tr ' ' '\n' | sed -n 's/^CAP_//p' | tr 'A-Z' 'a-z' | sort -u)
bounding=$(values CapabilityBoundingSet | tr ' ' '\n' | sed -n 's/^CAP_//p' | tr 'A-Z' 'a-z' | sort -u)
[ -n "$caps" ] || fail "no AmbientCapabilities= found"
setpriv_caps() { printf -- '-all'; printf ',+%s' $1; }
echo "capabilities: $(echo $caps) (bounding set: $(echo $bounding))"

ip netns add "$srv_ns"
ip netns add "$cli_ns"
ip link add "$srv_if" netns "$srv_ns" type veth peer name "$cli_if" netns "$cli_ns"
ip -n "$srv_ns" addr add 10.53.7.1/24 dev "$srv_if"
ip -n "$cli_ns" addr add 10.53.7.2/24 dev "$cli_if"
for ns in "$srv_ns:$srv_if" "$cli_ns:$cli_if"; do
    ip -n "${ns%%:*}" link set lo up
    ip -n "${ns%%:*}" link set "${ns#*:}" up
done
# Full UDP checksums from the client (the XDP path verifies them).
ip netns exec "$cli_ns" ethtool -K "$cli_if" tx off >/dev/null

chown lode:lode "$work"
cat >"$work/lode.toml" <<EOF
listen = ["10.53.7.1:53"]
listen-xdp = ["$srv_if@53"]
control = "$work/lode.sock"
[[zone]]
name = "deb.test."
file = "/var/lib/lode/zones/deb.test.zone"
EOF

# Runs lode serve as the unit would: user lode, the capabilities given.
serve() { # AMBIENT BOUNDING LOG [strace args...]
    local ambient=$1 bound=$2 log=$3
    shift 3
    ip netns exec "$srv_ns" setpriv --reuid=lode --regid=lode --init-groups --no-new-privs \
        --inh-caps="$(setpriv_caps "$ambient")" --ambient-caps="$(setpriv_caps "$ambient")" \
        --bounding-set="$(setpriv_caps "$bound")" \
        "$@" /usr/sbin/lode serve --config "$work/lode.toml" >"$log" 2>&1 &
    pid=$!
}

# Without the drop-in: a clear refusal.
unit_caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr ' ' '\n' | sed -n 's/^CAP_//p' | tr 'A-Z' 'a-z')
serve "$unit_caps" "$unit_caps" "$work/without.log"
status=0
timeout 30 tail --pid="$pid" -f /dev/null || fail "lode kept running without the XDP capabilities"
wait "$pid" || status=$?
pid=
[ "$status" -ne 0 ] || fail "lode started without the XDP capabilities"
grep -q "cannot serve XDP on $srv_if" "$work/without.log" ||
    fail "no reason given without the drop-in: $(tail -3 "$work/without.log")"
echo "without the drop-in: $(grep -o "cannot serve XDP.*" "$work/without.log" | head -1)"

# With it: served over XDP, traced.
serve "$caps" "$bounding" "$work/with.log" strace -f -qq -o "$work/trace"
answer=
for _ in $(seq 1 100); do
    answer=$(ip netns exec "$cli_ns" dig @10.53.7.1 www.deb.test A +short +time=1 +tries=1 2>/dev/null |
        grep -E '^[0-9.]+$' || true)
    [ -z "$answer" ] || break
    kill -0 "$pid" 2>/dev/null || fail "lode ended: $(tail -5 "$work/with.log")"
    sleep 0.2
done
[ -n "$answer" ] || fail "no answer over the veth: $(tail -5 "$work/with.log")"
xdp=$(/usr/sbin/lode status --control "$work/lode.sock" | grep '^xdp ') || fail "lode status: no xdp line"
echo "$xdp"
[[ $xdp =~ responses\ ([1-9][0-9]*) ]] || fail "no answer counted over XDP"
grep -o "UDP over XDP on .*" "$work/with.log" | head -1
/usr/sbin/lode stop --control "$work/lode.sock" >/dev/null || fail "lode stop"
wait "$pid" || fail "lode did not stop cleanly: $(tail -5 "$work/with.log")"
pid=

# The system calls the unit's filter allows: its SystemCallFilter= lines in
# order (the first an allow list; `~` removes from it, a plain line adds).
expand() { # a @group, nested groups expanded, or a call's own name
    case $1 in
    @*) systemd-analyze syscall-filter --no-pager "$1" | sed '1d; s/^ *//; /^#/d; /^$/d' |
        while read -r s; do expand "$s"; done ;;
    *) echo "$1" ;;
    esac
}
allowed="$work/allowed"
: >"$allowed"
while read -r line; do
    deny=
    case $line in "~"*) deny=1 line=${line#\~} ;; esac
    for item in $line; do expand "$item"; done | sort -u >"$work/items"
    if [ -n "$deny" ]; then
        comm -23 "$allowed" "$work/items" >"$work/next"
    else
        sort -u "$allowed" "$work/items" >"$work/next"
    fi
    mv "$work/next" "$allowed"
done < <(values SystemCallFilter)
sed -E 's/^[0-9]+ +//; s/\(.*//' "$work/trace" | grep -E '^[a-z_0-9]+$' | sort -u >"$work/used"
refused=$(comm -23 "$work/used" "$allowed" | grep -v '^execve$' || true)
[ -z "$refused" ] || fail "system calls the unit's filter refuses: $(echo $refused)"
echo "system calls made: $(wc -l <"$work/used"), all allowed by SystemCallFilter="

families=$(values RestrictAddressFamilies | tr ' ' '\n' | sort -u)
used_families=$(grep -o 'socket(AF_[A-Z0-9]*' "$work/trace" | sed 's/socket(//' | sort -u)
for f in $used_families; do
    grep -qx "$f" <<<"$families" || fail "socket family $f is not in RestrictAddressFamilies="
done
echo "socket families used: $(echo $used_families), all in RestrictAddressFamilies="
