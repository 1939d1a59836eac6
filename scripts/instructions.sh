#!/usr/bin/env bash
# Instructions per answer() call, counted by callgrind: a figure that does not
# move with the load on a shared machine, unlike times.
#
#   scripts/instructions.sh [N] [edns|dnssec]
#
# Builds crates/engine/examples/answer_loop.rs in release and, for each kind
# of query (existing NAPTR, NXDOMAIN inside the zone, outside every zone: see
# crates/engine/benches/common/mod.rs), runs it under
# `valgrind --tool=callgrind` twice: with 0 queries (setup only: the same
# 100,000-record ENUM zone and the same pre-built queries) and with N queries
# (default 100000). Prints (Ir(N) - Ir(0)) / N, the instructions of one query.
# With `edns`, the queries carry an OPT record; with `dnssec`, the zone is
# signed with NSEC3 (dummy signature bytes) and the queries set DO.
set -euo pipefail

n=${1:-100000}
edns=${2:-}
case "$n" in '' | *[!0-9]* | 0)
    echo "usage: $0 [N > 0] [edns|dnssec]" >&2
    exit 2
    ;;
esac
if [ -n "$edns" ] && [ "$edns" != edns ] && [ "$edns" != dnssec ]; then
    echo "usage: $0 [N > 0] [edns|dnssec]" >&2
    exit 2
fi
command -v valgrind >/dev/null || {
    echo "valgrind not found (apt-get install valgrind)" >&2
    exit 1
}

cd "$(dirname "$0")/.."
cargo build --release -q -p lode-engine --example answer_loop
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin="$target_dir/release/examples/answer_loop"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Ir of one run: the `summary:` line of the callgrind output.
ir() {
    local out="$tmp/callgrind.$1.$2"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bin" "$1" "$2" $edns >"$tmp/stdout" 2>"$tmp/stderr" || {
        cat "$tmp/stdout" "$tmp/stderr" >&2
        exit 1
    }
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

echo "answer_loop under callgrind, N=$n${edns:+, edns} ($(valgrind --version))"
printf '%-9s %15s %15s %12s\n' kind 'Ir(0)' "Ir($n)" 'Ir/query'
for kind in existing nxdomain outside; do
    base=$(ir "$kind" 0)
    full=$(ir "$kind" "$n")
    per=$(awk -v a="$base" -v b="$full" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
    printf '%-9s %15s %15s %12s\n' "$kind" "$base" "$full" "$per"
done
