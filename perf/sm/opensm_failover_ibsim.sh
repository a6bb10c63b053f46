#!/bin/sh
# OpenSM 3.3.23 standby failover on ibsim, for docs/perf/ha.md: an OpenSM
# master (priority 10, on H1) and an OpenSM standby (priority 2, on H2) on
# tests/ibsim/topologies/star3.topo; the master is killed (SIGKILL) and the
# time until the standby logs SUBNET UP is printed (OpenSM's SA answers
# only from then on: its first sweep as master must complete).
#   perf/sm/opensm_failover_ibsim.sh [POLL_MS RETRIES]   (default: OpenSM's 10000 4)
set -eu
POLL_MS=${1:-10000}
RETRIES=${2:-4}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOPO=$ROOT/tests/ibsim/topologies/star3.topo
SHIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
D=$(mktemp -d /tmp/osm-failover-XXXXXX)
export IBSIM_SOCKNAME=osmfo$$
cleanup() { kill -9 $M $S $IB 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
ms() { date +%s%3N; }
wait_log() {  # file pattern limit_s
  end=$(( $(date +%s) + $3 ))
  while [ "$(date +%s)" -lt "$end" ]; do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "timed out waiting for '$2' in $1" >&2; return 1
}
(cd "$D" && exec ibsim -s -n "$TOPO" >"$D/ibsim.out" 2>&1) &
IB=$!
sleep 1
for who in m s; do
  mkdir -p "$D/$who"
  OSM_TMP_DIR=$D/$who OSM_CACHE_DIR=$D/$who opensm -c "$D/$who/opensm.conf" >/dev/null 2>&1 || true
  sed -i -e "s/^sminfo_polling_timeout .*/sminfo_polling_timeout $POLL_MS/" \
         -e "s/^polling_retry_number .*/polling_retry_number $RETRIES/" "$D/$who/opensm.conf"
done
(cd "$D/m" && OSM_TMP_DIR=$D/m OSM_CACHE_DIR=$D/m SIM_HOST=H1 LD_PRELOAD=$SHIM \
   exec opensm -F "$D/m/opensm.conf" -d 2 -f "$D/m/osm.log" -s 0 -p 10 -e >"$D/m/out" 2>&1) &
M=$!
wait_log "$D/m/osm.log" "SUBNET UP" 120
(cd "$D/s" && OSM_TMP_DIR=$D/s OSM_CACHE_DIR=$D/s SIM_HOST=H2 LD_PRELOAD=$SHIM \
   exec opensm -F "$D/s/opensm.conf" -d 2 -f "$D/s/osm.log" -s 0 -p 2 -e >"$D/s/out" 2>&1) &
S=$!
wait_log "$D/s/osm.log" "Entering STANDBY state" 120
sleep 2
kill -9 $M
T0=$(ms)
wait_log "$D/s/osm.log" "Entering MASTER state" 600
T1=$(ms)
wait_log "$D/s/osm.log" "SUBNET UP" 600
T2=$(ms)
echo "| OpenSM 3.3.23 | star3 (3 hosts) | ${POLL_MS} ms x ${RETRIES} | $((T1 - T0)) | $((T2 - T0)) |"
