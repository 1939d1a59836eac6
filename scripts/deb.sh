#!/usr/bin/env bash
# Builds the Debian package of Lode (target/debian/lode_*.deb) with cargo-deb:
# the binary, the manual pages `lode man` writes from the CLI, the unit and
# the default configuration (apps/lode/debian/). The measuring tools are not
# in it: they are the lode-bench binary (apps/lode-bench, which has cargo-deb
# metadata of its own; this script does not build it).
#
#   bash scripts/deb.sh                # release build (minutes on 2 cores)
#   bash scripts/deb.sh --profile dev  # the test build of scripts/test.sh
#                                      # (cargo-deb warns: not for releases)
#
# Installs cargo-deb (pinned) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_DEB_VERSION=3.8.0
profile=release
if [ "${1:-}" = "--profile" ] && [ -n "${2:-}" ]; then
    profile=$2
fi
dir=$profile
[ "$profile" = dev ] && dir=debug

if ! cargo deb --version >/dev/null 2>&1; then
    echo "==> installing cargo-deb $CARGO_DEB_VERSION (cargo install)"
    cargo install cargo-deb --version "$CARGO_DEB_VERSION" --locked
fi

# LODE_DEB_REUSE_TEST_BUILD=1 (scripts/deb-test.sh, after scripts/test.sh's
# `cargo test --workspace`): the binary that test run built, checked fresh by
# the same cargo command (`cargo build -p lode` would unify features apart
# from the test run's and rebuild a dozen crates for the same code).
if [ "${LODE_DEB_REUSE_TEST_BUILD:-}" = 1 ]; then
    release=()
    [ "$profile" = release ] && release=(--release)
    cargo test --workspace --no-run "${release[@]}"
else
    cargo build -p lode --profile "$profile"
fi
rm -rf target/man
"target/$dir/lode" man --out target/man >/dev/null
# --strip: the dev build carries full debug information (hundreds of MB).
cargo deb -p lode --no-build --profile "$profile" --strip --fast --quiet
ls -1t target/debian/lode_*.deb | head -1
