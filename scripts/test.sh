#!/usr/bin/env bash
# The test command of the README and of CI (.ci/run): installs what the tests
# need when it is missing (Debian 12, as root), then runs formatting, lints,
# all tests (unit, differential against Knot DNS, malformed input), the
# Debian package test and the fuzz smoke run.
#
#   bash scripts/test.sh
#
# Environment: LODE_DIFF_PEER=knot runs the differential suite knot-vs-knot
# (proves the harness); CARGO_PROFILE_ARG overrides the build profile flag.
# Installs knot, knot-dnsutils, dnsutils and fstrm-bin when missing, and tries nsd and
# bind9 (the transfer interop peers).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
# Every check runs even when an earlier one fails, so that one CI run shows
# everything that is wrong; the script fails at the end if any did.
failed=()
check() {
    local name=$1
    shift
    step "$name"
    if ! "$@"; then
        failed+=("$name")
        printf '==> FAILED: %s\n' "$name"
    fi
}
have() { command -v "$1" >/dev/null 2>&1; }

# knotd lives in /usr/sbin, which is not on every user's PATH.
export PATH="$PATH:/usr/sbin:/sbin"

# --- 1. what the tests need --------------------------------------------------------------
need_apt=()
have knotd || need_apt+=(knot)
have kdig || need_apt+=(knot-dnsutils)
have dig || need_apt+=(dnsutils)
# The dnstap readers of apps/lode/tests/dnstap.rs: dnstap-read (BIND's) and
# fstrm_capture (the Frame Streams reference receiver).
have dnstap-read || need_apt+=(bind9-dnsutils)
have fstrm_capture || need_apt+=(fstrm-bin)
# The signing tests (apps/lode/tests/signing*.rs): three zone verifiers
# (ldns-verify-zone, BIND's dnssec-verify, Knot's kzonecheck), BIND's
# dnssec-keygen and a validating resolver.
have ldns-verify-zone || need_apt+=(ldnsutils)
have dnssec-verify || need_apt+=(bind9-utils)
have kzonecheck || need_apt+=(knot-dnssecutils)
have unbound || need_apt+=(unbound)
# Keys in an HSM (crates/dnssec/tests/hsm.rs, apps/lode/tests/hsm.rs): SoftHSM2.
have softhsm2-util || need_apt+=(softhsm2)
# The DNS-over-TLS tests (apps/lode/tests/dot.rs) make their certificates with openssl.
have openssl || need_apt+=(openssl)
# The XDP tests (apps/lode/tests/xdp.rs, crates/io/tests/xdp_no_alloc.rs) turn the
# checksum offload of their veth clients off with ethtool.
have ethtool || need_apt+=(ethtool)
if [ ${#need_apt[@]} -gt 0 ]; then
    step "installing ${need_apt[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "need root to install ${need_apt[*]} (or install them yourself)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "${need_apt[@]}"; then
        apt-get update
        apt-get install -y --no-install-recommends "${need_apt[@]}"
    fi
fi
# (Debian's own knot.service, if it starts, listens nowhere with the packaged
# configuration; the tests start their own knotd on 127.0.0.1:15300-15349.)

# The transfer interop test (apps/lode/tests/xfr_interop.rs) also runs NSD and
# BIND as secondaries. Without them only that test is skipped, so a failed
# install here warns instead of stopping the run; once they are here, their
# absence in the test is a failure (LODE_REQUIRE_XFR_PEERS=1).
need_xfr=()
have nsd || need_xfr+=(nsd)
have named || need_xfr+=(bind9)
if [ ${#need_xfr[@]} -gt 0 ]; then
    step "installing ${need_xfr[*]} (transfer interop peers)"
    if [ "$(id -u)" -eq 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends "${need_xfr[@]}" ||
            { apt-get update && apt-get install -y --no-install-recommends "${need_xfr[@]}"; } ||
            echo "warning: could not install ${need_xfr[*]}: tests/xfr_interop.rs will SKIP" >&2
    else
        echo "warning: need root to install ${need_xfr[*]}: tests/xfr_interop.rs will SKIP" >&2
    fi
fi
# (Their Debian services are not started here either: the test runs its own
# nsd and named on 127.0.0.1:16100-16199, each in its own directory.)
if have nsd && have named; then
    export LODE_REQUIRE_XFR_PEERS=1
fi

# The metrics test (apps/lode/tests/metrics.rs) has a real Prometheus scrape
# Lode; as above, a failed install skips only that test.
if ! have prometheus; then
    step "installing prometheus (the metrics test scrapes Lode with it)"
    if [ "$(id -u)" -eq 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends prometheus ||
            { apt-get update && apt-get install -y --no-install-recommends prometheus; } ||
            echo "warning: could not install prometheus: tests/metrics.rs will SKIP" >&2
    else
        echo "warning: need root to install prometheus: tests/metrics.rs will SKIP" >&2
    fi
fi
# (Its Debian service is not used: the test runs its own on 127.0.0.1:16742.)
if have prometheus; then
    export LODE_REQUIRE_PROMETHEUS=1
fi

for comp in rustfmt clippy; do
    if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
        step "adding rustup component $comp"
        rustup component add "$comp" || echo "warning: could not add $comp" >&2
    fi
done

export LODE_REQUIRE_KNOT=1
export LODE_REQUIRE_DNSTAP_TOOLS=1
export LODE_REQUIRE_DNSSEC_TOOLS=1
export LODE_REQUIRE_SOFTHSM=1
# The dev profile (opt-level 1 in the workspace) builds faster on 2 cores than
# release, and the tests run fast enough with it. CARGO_PROFILE_ARG=--release
# tests the optimised build instead.
profile="${CARGO_PROFILE_ARG:-}"

# --- 2. format, lints, tests ----------------------------------------------------------------
check "cargo fmt --check" cargo fmt --all -- --check
check "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
# shellcheck disable=SC2086 # empty or one flag
check "cargo test" cargo test --workspace --no-fail-fast $profile

# --- 3. the Debian package ---------------------------------------------------------------
# Packages the dev build made above (cargo-deb is installed the first time,
# about 2 minutes), installs it, runs and digs it as the lode user, purges it;
# skips when not root or not Debian (scripts/deb-test.sh).
if [ "$profile" = "--release" ]; then
    export LODE_DEB_PROFILE=release
fi
check "Debian package: build, install, serve, purge (scripts/deb-test.sh)" bash scripts/deb-test.sh

# --- 4. fuzz smoke --------------------------------------------------------------------------
# A real fuzzing run needs cargo-fuzz and a nightly toolchain; without them the
# same target bodies already ran above over deterministic corpora
# (apps/lode/tests/fuzz_smoke.rs).
if have cargo-fuzz && rustup run nightly rustc --version >/dev/null 2>&1; then
    for target in answer zonefile; do
        check "cargo fuzz: 30 s of fuzz/fuzz_targets/$target.rs" \
            bash -c "cd fuzz && cargo +nightly fuzz run $target -- -max_total_time=30 -rss_limit_mb=2048"
    done
else
    step "cargo-fuzz or nightly missing: the fuzz targets' bodies ran as apps/lode/tests/fuzz_smoke.rs"
fi

if [ ${#failed[@]} -gt 0 ]; then
    printf '\n==> %d check(s) failed:\n' "${#failed[@]}"
    printf '    %s\n' "${failed[@]}"
    exit 1
fi
step "all checks passed"
