#!/bin/bash
# Bulk-load p99.9, Lode only, old (cc3338e) and new (2f39866) builds alternated.
set -u
for r in 1 2 3; do
  for b in old new; do
    echo "== round $r $b $(date +%T)"
    rm -rf /var/tmp/bulkab-work
    timeout 900 /work/main/target/release/lode-bench --lode /tmp/lode-$b compare-updates --servers lode \
      --durable-secs 0 --update-rates 0 --bulk 1000000 --stall-rate 20000 --runs 1 \
      --out /tmp/bulkab/$b-$r --work /var/tmp/bulkab-work --no-install 2>/tmp/bulkab/$b-$r.progress
    grep -A3 "Targets 2 and 4" /tmp/bulkab/$b-$r/updates.md | tail -1
  done
done
rm -rf /var/tmp/bulkab-work
