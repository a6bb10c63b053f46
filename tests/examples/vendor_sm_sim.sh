#!/usr/bin/env bash
# The example vendor SM (examples/vendor_sm, C ABI) on simulated fat trees:
# its own routing with one host quarantined. --check fails the run unless the
# published LFTs are the ones it computed and every PathRecord between CA
# ports follows them (no path to the quarantined host, the walk's hop count
# for every other pair). Usage: vendor_sm_sim.sh VENDOR_SM
set -euo pipefail
sm=$1
fail() { echo "vendor_sm_sim: FAILED: $*"; exit 1; }
for fabric in ft2:4 ft3:4:2; do
  ports=$("$sm" --sim "$fabric" --list) || fail "$fabric: --list"
  guid=$(echo "$ports" | sed -n "s/^vendor_sm: port \(0x[0-9a-f]*\) LID .*/\1/p" | tail -1)
  hosts=$(echo "$ports" | grep -c "^vendor_sm: port ")
  [[ -n "$guid" && "$hosts" -gt 2 ]] || fail "$fabric: no CA ports listed"
  out=$("$sm" --sim "$fabric" --check --quarantine "$guid") || { echo "$out"; fail "$fabric: --check"; }
  echo "$out" | grep "check:"
  # Nobody reaches the quarantined host; it still reaches every other.
  echo "$out" | grep -q "$((hosts - 1)) pairs without a path, 0 mismatches" || fail "$fabric: quarantine of $guid"
  echo "$out" | grep -q "vendor_sm: stopped" || fail "$fabric: no clean stop"
done
echo "vendor_sm_sim: passed"
