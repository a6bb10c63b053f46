#!/bin/bash
# Counts the records saquery prints for OpenSM on ibsim, with and without
# librmpp_layer.so on either side. Starts its own ibsim (private socket) and
# OpenSM for each pairing and stops them by pid.
#   check_opensm.sh LAYER_SO [TOPOLOGY] [QUERY...]
set -u
layer=${1:?path to librmpp_layer.so}
topo=${2:-/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca}
shift $(( $# >= 2 ? 2 : $# ))
queries=("$@")
[ ${#queries[@]} -eq 0 ] && queries=(NR PR PIR LR SWIR LFTR GIR SL2VL VLAR MCMR -s -g -x)
shim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d /tmp/rmpp_check.XXXXXX)
export IBSIM_SOCKNAME=rmpp_check_$$
ibsim_pid= osm_pid=

stop() {
  [ -n "$osm_pid" ] && kill "$osm_pid" 2>/dev/null && wait "$osm_pid" 2>/dev/null
  [ -n "$ibsim_pid" ] && kill "$ibsim_pid" 2>/dev/null && wait "$ibsim_pid" 2>/dev/null
  osm_pid= ibsim_pid=
}
trap stop EXIT

# start OSM_PRELOAD: a fresh ibsim (a killed client keeps its slot) and OpenSM.
start() {
  stop
  rm -rf "$work/osm" && mkdir -p "$work/osm"
  (cd "$work" && exec nice -n 10 ibsim -s -n "$topo" >"$work/ibsim.out" 2>&1) &
  ibsim_pid=$!
  sleep 1
  (cd "$work" && OSM_TMP_DIR=$work/osm OSM_CACHE_DIR=$work/osm LD_PRELOAD="$1" \
     exec nice -n 10 opensm -f "$work/osm/osm.log" -d 2 -s 0 >"$work/osm.out" 2>&1) &
  osm_pid=$!
  for _ in $(seq 1 150); do grep -q "SUBNET UP" "$work/osm/osm.log" 2>/dev/null && return 0; sleep 0.2; done
  echo "OpenSM did not report SUBNET UP" >&2
  return 1
}

# records CLIENT_PRELOAD QUERY: the number of records saquery printed.
records() {
  (cd "$work" && LD_PRELOAD="$1" timeout 30 saquery "$2" 2>/dev/null) | grep -ci "record dump"
}

printf "%-6s %10s %10s %10s %10s\n" query "osm-/sq-" "osm+/sq+" "osm+/sq-" "osm-/sq+"
declare -A count
for osm in plain layer; do
  if [ $osm = plain ]; then start "$shim" || exit 1; else start "$layer $shim" || exit 1; fi
  for q in "${queries[@]}"; do
    count[$osm,plain,$q]=$(records "$shim" "$q")
    count[$osm,layer,$q]=$(records "$layer $shim" "$q")
  done
  grep -c "ERR" "$work/osm/osm.log" | sed "s/^/OpenSM ($osm) log ERR lines: /" >&2
done
for q in "${queries[@]}"; do
  printf "%-6s %10s %10s %10s %10s\n" "$q" "${count[plain,plain,$q]}" "${count[layer,layer,$q]}" \
    "${count[layer,plain,$q]}" "${count[plain,layer,$q]}"
done
stop
rm -rf "$work"
