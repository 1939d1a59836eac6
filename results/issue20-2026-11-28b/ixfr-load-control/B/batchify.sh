#!/bin/bash
# Sets SCHED_BATCH on every thread but lode-udp-* of the fleet's Lode secondaries, every 0.5 s.
end=$((SECONDS+900))
while [ $SECONDS -lt $end ]; do
  for pid in $(pgrep -f "lode serve --config .*secondary"); do
    for t in /proc/$pid/task/*; do
      c=$(cat $t/comm 2>/dev/null)
      case "$c" in lode-udp-*|lode-tcp*) ;; *) chrt -b -p 0 ${t##*/} >/dev/null 2>&1 ;; esac
    done
  done
  sleep 0.5
done
