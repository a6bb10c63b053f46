#!/usr/bin/env bash
# libmadengine's ABI against the checked-in baseline abi/libmadengine.abi
# (libabigail: abidw, abidiff; Debian abigail-tools).
#   scripts/abi.sh check [BUILD_DIR]    fails on any difference from the baseline
#   scripts/abi.sh update [BUILD_DIR]   records the built ABI as the baseline
# The ABI is what libmadengine.so exports (the C ABI and the node's C++ API)
# and the public types it reaches (include/madengine/); private types are
# kept as declarations only. An incompatible change needs a SONAME bump
# (MADENGINE_SOVERSION in cmake/Library.cmake): `update` refuses to record one
# under the old SONAME, `check` refuses a baseline of another SONAME.
# Compatible additions are recorded with `update` (no bump).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
build=${2:-build}
baseline=abi/libmadengine.abi
so="$build/libmadengine.so"
[[ -e "$so" ]] || { echo "abi: $so not built"; exit 2; }
command -v abidw >/dev/null || { echo "abi: abidw missing (apt-get install abigail-tools)"; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abidw --headers-dir include/madengine --drop-private-types --exported-interfaces-only --no-show-locs \
  --no-corpus-path --drop-undefined-syms --type-id-style hash --out-file "$tmp/new.abi" "$so"
soname() { grep -o -m1 "soname='[^']*'" "$1" | cut -d"'" -f2; }
new_soname=$(soname "$tmp/new.abi")

case "$mode" in
  check)
    [[ -e "$baseline" ]] || { echo "abi: no baseline $baseline: record one with scripts/abi.sh update"; exit 1; }
    old_soname=$(soname "$baseline")
    if [[ "$old_soname" != "$new_soname" ]]; then
      echo "abi: the SONAME is $new_soname, the baseline's $old_soname: record the new ABI (scripts/abi.sh update)"
      exit 1
    fi
    rc=0
    abidiff --no-show-locs "$baseline" "$tmp/new.abi" >"$tmp/diff.txt" || rc=$?
    if ((rc == 0)); then
      echo "abi: $new_soname exports what the baseline records"
      exit 0
    fi
    cat "$tmp/diff.txt"
    if ((rc & 1)); then echo "abi: abidiff failed ($rc)"; exit 2; fi
    added_only=0
    abidiff --no-show-locs --no-added-syms "$baseline" "$tmp/new.abi" >/dev/null && added_only=1
    if ((added_only)); then
      echo "abi: only additions: record them in the baseline (scripts/abi.sh update)"
    else
      echo "abi: the ABI of $new_soname changed: bump MADENGINE_SOVERSION (cmake/Library.cmake), then scripts/abi.sh update"
    fi
    exit 1
    ;;
  update)
    if [[ -e "$baseline" && "$(soname "$baseline")" == "$new_soname" ]]; then
      if ! abidiff --no-show-locs --no-added-syms "$baseline" "$tmp/new.abi" >"$tmp/diff.txt"; then
        cat "$tmp/diff.txt"
        echo "abi: more than additions under the same SONAME ($new_soname): bump MADENGINE_SOVERSION first"
        exit 1
      fi
    fi
    mkdir -p abi
    cp "$tmp/new.abi" "$baseline"
    echo "abi: recorded $new_soname in $baseline"
    ;;
  *)
    echo "usage: scripts/abi.sh check|update [BUILD_DIR]"
    exit 2
    ;;
esac
