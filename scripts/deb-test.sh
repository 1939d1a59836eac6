#!/usr/bin/env bash
# The package test (run by scripts/test.sh; Debian 12, as root): builds the
# .deb of the dev build (scripts/deb.sh --profile dev), checks the unit with
# systemd-analyze (verify, and the security exposure score, at most 3.0),
# installs the package, runs /usr/sbin/lode as the unit does (as the lode
# user, the packaged configuration pointed at a test zone on
# 127.0.0.1:16670), digs it, reloads it through the control socket, checks
# `man -w lode`; serves UDP over XDP as the unit with its XDP drop-in would
# (scripts/deb-test-xdp.sh); under a running systemd also `systemctl
# start/reload/stop lode`; then purges the package and checks what is left
# (the lode user stays, as Debian leaves system users in place).
#
#   bash scripts/deb-test.sh
#   LODE_DEB_PROFILE=release bash scripts/deb-test.sh
#
# Skips (exit 0, with the reason) when not root, not Debian, or when a lode
# package is already installed here (it is not ours to replace).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=16670
skip() {
    echo "SKIP: package test: $*"
    exit 0
}
fail() {
    echo "FAILED: package test: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || skip "needs root (it installs and purges the package)"
[ -f /etc/debian_version ] && command -v dpkg >/dev/null || skip "not Debian"
if dpkg-query -W -f '${Status}' lode 2>/dev/null | grep -q "installed"; then
    skip "a lode package is already installed on this machine"
fi
export PATH="$PATH:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive
for tool in dig:bind9-dnsutils man:man-db systemd-analyze:systemd strace:strace ethtool:ethtool setpriv:util-linux; do
    command -v "${tool%%:*}" >/dev/null ||
        apt-get install -y --no-install-recommends "${tool#*:}" ||
        { apt-get update && apt-get install -y --no-install-recommends "${tool#*:}"; }
done

started=$SECONDS
step() { printf '\n--> %s (%ds)\n' "$*" $((SECONDS - started)); }

# The dev build scripts/test.sh already made for `cargo test` (a release
# build would take minutes more); LODE_DEB_PROFILE=release packages that.
profile=${LODE_DEB_PROFILE:-dev}
step "building the package ($profile profile)"
deb=$(LODE_DEB_REUSE_TEST_BUILD=1 bash scripts/deb.sh --profile "$profile" | tail -1)
[ -f "$deb" ] || fail "no package built"
dpkg-deb -I "$deb" | sed -n '/Package:/,/Depends:/p'
# The measuring tools are the lode-bench binary's, packaged apart.
if dpkg-deb -c "$deb" | grep -E 'bench|/lode-gen'; then
    fail "the server package holds measuring tools (above)"
fi

unit=apps/lode/debian/lode.service
step "systemd-analyze security --offline=yes $unit"
security=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1) ||
    fail "systemd-analyze security: $security"
grep "✗" <<<"$security" || true
score=$(sed -n 's/.*Overall exposure level for lode.service: \([0-9.]*\).*/\1/p' <<<"$security")
echo "exposure score: $score"
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' ||
    fail "exposure score $score is above 3.0"

installed=0
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    if [ "$installed" = 1 ]; then
        systemctl stop lode 2>/dev/null || true
        rm -rf /run/systemd/system/lode.service.d
        dpkg --purge lode >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

step "installing $deb"
installed=1
apt-get install -y --no-install-recommends "./$deb" >/dev/null ||
    { apt-get update && apt-get install -y --no-install-recommends "./$deb"; } ||
    fail "the package does not install"
for f in /usr/sbin/lode /etc/lode/lode.toml /usr/lib/systemd/system/lode.service \
    /usr/lib/sysusers.d/lode.conf /usr/share/doc/lode/copyright; do
    [ -e "$f" ] || fail "$f is not installed"
done
id lode || fail "no lode user"
[ "$(stat -c %U:%a /var/lib/lode)" = "lode:750" ] ||
    fail "/var/lib/lode is $(stat -c %U:%a /var/lib/lode), not lode:750"
if grep -rqs 'path-exclude[= ]/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
    echo "(dpkg excludes /usr/share/man here: the pages are checked in the package)"
    dpkg-deb -c "$deb" | grep -q 'usr/share/man/man8/lode.8.gz' || fail "no lode.8 in the package"
    dpkg-deb -c "$deb" | grep -q 'usr/share/man/man8/lode-serve.8.gz' || fail "no lode-serve.8"
    dpkg-deb -c "$deb" | grep -q 'usr/share/man/man5/lode.toml.5.gz' || fail "no lode.toml.5"
else
    man -w lode || fail "man -w lode"
    man -w lode-serve || fail "man -w lode-serve"
    man -w lode.toml || fail "man -w lode.toml"
fi

step "systemd-analyze verify (installed unit)"
systemd-analyze verify /usr/lib/systemd/system/lode.service || fail "systemd-analyze verify"

step "the packaged configuration, pointed at a test zone on 127.0.0.1:$PORT"
grep -q '^listen = \["127.0.0.1:53"\]' /etc/lode/lode.toml || fail "packaged listen line changed"
install -d -o lode -g lode -m 0750 /var/lib/lode/zones
cat >/var/lib/lode/zones/deb.test.zone <<'EOF'
$ORIGIN deb.test.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
ns1 A 192.0.2.53
www A 192.0.2.80
EOF
chown lode:lode /var/lib/lode/zones/deb.test.zone
sed -i "s/^listen = .*/listen = [\"127.0.0.1:$PORT\"]/" /etc/lode/lode.toml
grep -q '^metrics-listen = "127.0.0.1:9153"' /etc/lode/lode.toml || fail "packaged metrics-listen line changed"
METRICS_PORT=$((PORT + 1))
sed -i "s/^metrics-listen = .*/metrics-listen = \"127.0.0.1:$METRICS_PORT\"/" /etc/lode/lode.toml
printf '\n[[zone]]\nname = "deb.test."\nfile = "/var/lib/lode/zones/deb.test.zone"\n' >>/etc/lode/lode.toml

wait_answer() { # NAME TYPE EXPECTED
    local i
    for i in $(seq 1 100); do
        if [ "$(dig @127.0.0.1 -p $PORT "$1" "$2" +short +time=1 +tries=1 2>/dev/null)" = "$3" ]; then
            return 0
        fi
        sleep 0.2
    done
    fail "dig @127.0.0.1 -p $PORT $1 $2: not $3"
}

step "runuser -u lode -- /usr/sbin/lode serve --config /etc/lode/lode.toml"
# What the unit's RuntimeDirectory= makes: /run/lode for the control socket.
install -d -o lode -g lode -m 0750 /run/lode
log=$(mktemp)
runuser -u lode -- /usr/sbin/lode serve --config /etc/lode/lode.toml 2>"$log" &
pid=$!
wait_answer www.deb.test A 192.0.2.80
# runuser stays as the parent: the server is its child.
lode_pid=$(pgrep -P "$pid" -x lode) || fail "no lode process under runuser"
dig @127.0.0.1 -p $PORT deb.test SOA +norec | grep -E 'status|flags|SOA' | head -4
uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$lode_pid/status")
lode_uid=$(id -u lode)
[ "$uids" = "$lode_uid $lode_uid $lode_uid $lode_uid" ] || fail "runs as uids $uids"
[ "$(stat -c %U:%a /run/lode/lode.sock)" = "lode:660" ] ||
    fail "control socket is $(stat -c %U:%a /run/lode/lode.sock), not lode:660"
sed -i 's/^www A 192.0.2.80/www A 192.0.2.81/; s/ 1 3600 600/ 2 3600 600/' /var/lib/lode/zones/deb.test.zone
# ExecReload, as the unit runs it (as lode), then the control socket as root.
runuser -u lode -- /usr/sbin/lode reload --config /etc/lode/lode.toml || fail "lode reload"
wait_answer www.deb.test A 192.0.2.81
/usr/sbin/lode zone-status --config /etc/lode/lode.toml | grep 'deb.test' || fail "zone-status"
# The metrics, as Prometheus and an operator read them.
exec 3<>"/dev/tcp/127.0.0.1/$METRICS_PORT" || fail "no metrics endpoint on $METRICS_PORT"
printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
metrics=$(cat <&3)
exec 3<&-
grep -q '^lode_zone_serial{zone="deb.test."} 2$' <<<"$metrics" || fail "GET /metrics: no serial 2 for deb.test."
grep -E '^lode_requests_total\{transport="udp",kind="query"\} [1-9]' <<<"$metrics" || fail "GET /metrics: no UDP queries counted"
/usr/sbin/lode stats --config /etc/lode/lode.toml | grep 'lode_zone_records{zone="deb.test."}' || fail "lode stats"
/usr/sbin/lode status --config /etc/lode/lode.toml | head -2
/usr/sbin/lode status --config /etc/lode/lode.toml | grep -q "serving 1 zone on 127.0.0.1:$PORT" ||
    fail "lode status: no summary line"
# As the operator would see it: a Prometheus on this machine scraping the
# packaged endpoint (when the prometheus package is here; tests/metrics.rs
# tests it in depth).
if command -v prometheus >/dev/null; then
    prom_dir=$(mktemp -d)
    printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: lode\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' \
        "$METRICS_PORT" >"$prom_dir/prometheus.yml"
    prometheus --config.file="$prom_dir/prometheus.yml" --web.listen-address="127.0.0.1:$((PORT + 2))" \
        --storage.tsdb.path="$prom_dir/data" >"$prom_dir/log" 2>&1 &
    prom_pid=$!
    seen=
    for _ in $(seq 1 60); do
        sleep 0.5
        exec 3<>"/dev/tcp/127.0.0.1/$((PORT + 2))" 2>/dev/null || continue
        printf 'GET /api/v1/query?query=lode_zone_serial HTTP/1.0\r\n\r\n' >&3
        answer=$(cat <&3)
        exec 3<&-
        if grep -q '"zone":"deb.test."' <<<"$answer" && grep -q ',"2"\]' <<<"$answer"; then
            seen=1
            break
        fi
    done
    kill "$prom_pid"
    wait "$prom_pid" || true
    rm -rf "$prom_dir"
    [ -n "$seen" ] || fail "Prometheus never saw lode_zone_serial{zone=\"deb.test.\"} 2"
    echo "Prometheus scraped the packaged endpoint: lode_zone_serial{zone=\"deb.test.\"} 2"
fi
/usr/sbin/lode stop --config /etc/lode/lode.toml || fail "lode stop"
wait "$pid" || fail "lode serve did not stop cleanly: $(tail -5 "$log")"
pid=
grep -q 'zone loaded' "$log" || fail "no zone-load line in the log"
tail -3 "$log"
rm -f "$log"

step "UDP over XDP as the unit with the packaged XDP drop-in runs it (scripts/deb-test-xdp.sh)"
bash scripts/deb-test-xdp.sh || fail "UDP over XDP under the unit's sandbox"

if [ -d /run/systemd/system ]; then
    step "systemctl start/reload/stop lode (systemd is running)"
    systemctl daemon-reload
    systemctl start lode || { journalctl -u lode --no-pager | tail -20; fail "systemctl start lode"; }
    wait_answer www.deb.test A 192.0.2.81
    systemctl show -p StatusText -p MainPID -p NRestarts lode
    systemctl reload lode || fail "systemctl reload lode"
    systemctl is-active lode || fail "lode is not active after a reload"
    systemctl stop lode
    journalctl -u lode --no-pager | tail -5 || true
else
    echo "(systemd is not PID 1 here ($(ps -p 1 -o comm=)): the unit itself is not started)"
fi

step "purging the package"
dpkg --purge lode
installed=0
for f in /usr/sbin/lode /etc/lode /var/lib/lode /usr/lib/systemd/system/lode.service \
    /usr/share/man/man8/lode.8.gz; do
    [ ! -e "$f" ] || fail "$f is still here after the purge"
done
id lode >/dev/null && echo "(the lode system user stays, as Debian leaves system users in place)"
step "package test passed"
