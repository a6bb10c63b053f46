#!/bin/sh
# Side-by-side SA storm on one ibsim fabric: starts ibsim and SA "A" (OpenSM),
# runs madstorm, stops A, starts SA "B" (by default OpenSM again; give
# SA_B_CMD to start madengine instead), runs the same storm, prints both and
# the ratios (madstorm --compare-files). Everything lives in a temp dir.
#
#   perf/madstorm/ibsim_side_by_side.sh [TOPOLOGY] [-- madstorm options...]
#   SA_B_CMD='madengine --transport umad ...' SA_B_LABEL=madengine perf/madstorm/ibsim_side_by_side.sh
#
# Env: MADSTORM (binary), SIM_HOST_SA (node the SAs run on, H1), SIM_HOST_STORM
# (node madstorm runs on, H2), SA_A_LABEL/SA_B_LABEL, OUT (results dir),
# HOSTS_FROM_A=1: storm B with the hosts storm A found, for an SA B that
# answers no NodeRecords, such as echo_sa (the shim's ceiling):
#   SA_B_CMD="build-release/perf/madstorm/echo_sa $OUT/hosts" SA_B_LABEL=echo HOSTS_FROM_A=1 ...
# Besides madstorm's JSON, each storm writes $OUT/LABEL.cpu: the CPU time the
# SA process (with its children) and ibsim used during the storm, from
# /proc/PID/stat utime+stime, and per query issued.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
topo=$(realpath "${1:-$root/tests/madstorm/topologies/ft128.topo}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
MADSTORM=${MADSTORM:-$root/build-madstorm-release/tools/madstorm/madstorm}
SHIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
SIM_HOST_SA=${SIM_HOST_SA:-H1}
SIM_HOST_STORM=${SIM_HOST_STORM:-H2}
SA_A_LABEL=${SA_A_LABEL:-opensm}
SA_B_LABEL=${SA_B_LABEL:-opensm-again}
OUT=${OUT:-$(mktemp -d /tmp/madstorm-sbs.XXXXXX)}
mkdir -p "$OUT"
export IBSIM_SOCKNAME="madstorm-sbs-$$"

stop() {  # SIGTERM, then SIGKILL after 2 s (OpenSM under the shim can hang once ibsim is gone)
  [ -n "${1:-}" ] || return 0
  kill "$1" 2>/dev/null || return 0
  n=0
  while kill -0 "$1" 2>/dev/null && [ $n -lt 20 ]; do sleep 0.1; n=$((n + 1)); done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  stop "${sa_pid:-}"
  stop "${ibsim_pid:-}"
}
trap cleanup EXIT INT TERM

nodes=$(grep -c '^\(Hca\|Switch\|Ca\)' "$topo")
ports=$(grep -c '^\[' "$topo")
(cd "$OUT" && LD_PRELOAD= exec ibsim -s -n -N $((nodes * 2 + 64)) -S $((nodes * 2 + 64)) -P $((ports * 2 + 256)) "$topo" \
  >"$OUT/ibsim.out" 2>&1) &
ibsim_pid=$!
sleep 1

start_opensm() {  # $1: log name
  mkdir -p "$OUT/$1"
  (cd "$OUT/$1" && OSM_TMP_DIR="$OUT/$1" OSM_CACHE_DIR="$OUT/$1" LD_PRELOAD=$SHIM SIM_HOST=$SIM_HOST_SA \
    exec opensm -f "$OUT/$1/osm.log" -e -d 2 -s 0 >"$OUT/$1/opensm.out" 2>&1) &
  sa_pid=$!
  i=0
  until grep -q "SUBNET UP" "$OUT/$1/osm.log" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 600 ] && { echo "no SUBNET UP from $1" >&2; exit 1; }
    sleep 0.1
  done
}

ticks() {  # utime+stime of $1 and its children, in clock ticks
  t=0
  for p in $1 $(pgrep -P "$1" 2>/dev/null); do
    [ -r /proc/$p/stat ] || continue
    # Fields after the ")" that ends the command name: utime is the 12th, stime the 13th.
    t=$((t + $(sed 's/.*) //' /proc/$p/stat | awk '{print $12 + $13}')))
  done
  echo $t
}

storm() {  # $1: label, then madstorm options
  label=$1; shift
  sa0=$(ticks "$sa_pid"); sim0=$(ticks "$ibsim_pid")
  # Exit 2 is a set-up failure: on ibsim the shim sometimes attaches before the
  # SM LID is visible (its sysfs is a snapshot); a new process sees it.
  for attempt in 1 2 3; do
    rc=0
    LD_PRELOAD=$SHIM SIM_HOST=$SIM_HOST_STORM "$MADSTORM" --label "$label" --json "$OUT/$label.json" \
      --plot "$OUT/$label.svg" --no-progress "$@" || rc=$?
    [ $rc -eq 2 ] || break
    sleep 1
  done
  sa1=$(ticks "$sa_pid"); sim1=$(ticks "$ibsim_pid")
  hz=$(getconf CLK_TCK)
  issued=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['counts']['issued'])" "$OUT/$label.json" 2>/dev/null || echo 0)
  python3 - "$label" "$((sa1 - sa0))" "$((sim1 - sim0))" "$hz" "$issued" >"$OUT/$label.cpu" <<'PY'
import sys
label, sa, sim, hz, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
per = lambda t: f"{t * 1e6 / hz / n:.1f}" if n else "n/a"
print(f"{label}: SA CPU {sa / hz:.2f} s ({per(sa)} us/query), ibsim CPU {sim / hz:.2f} s ({per(sim)} us/query), {n} queries")
PY
  cat "$OUT/$label.cpu"
  [ $rc -eq 0 ] || [ $rc -eq 3 ]  # 3: wrong answers, reported in the JSON
}

start_opensm "$SA_A_LABEL"
storm "$SA_A_LABEL" --save-hosts "$OUT/hosts" "$@"
stop "$sa_pid"; sa_pid=
if [ -n "${SA_B_CMD:-}" ]; then
  # exec twice: the SA itself gets $sa_pid (stop() and the CPU figures act on it)
  (cd "$OUT" && LD_PRELOAD=$SHIM SIM_HOST=$SIM_HOST_SA exec sh -c "exec $SA_B_CMD" >"$OUT/$SA_B_LABEL.out" 2>&1) &
  sa_pid=$!
  sleep "${SA_B_WAIT_S:-5}"
else
  start_opensm "$SA_B_LABEL"
fi
if [ "${HOSTS_FROM_A:-0}" = 1 ]; then
  storm "$SA_B_LABEL" --hosts-file "$OUT/hosts" "$@"
else
  storm "$SA_B_LABEL" "$@"
fi
echo "side by side ($OUT):"
"$MADSTORM" --compare-files "$OUT/$SA_A_LABEL.json" "$OUT/$SA_B_LABEL.json"
cat "$OUT/$SA_A_LABEL.cpu" "$OUT/$SA_B_LABEL.cpu"
