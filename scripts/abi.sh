#!/usr/bin/env bash
# libmadengine's ABI against the checked-in baseline abi/libmadengine.abi
# (libabigail: abidw, abidiff; Debian abigail-tools).
#   scripts/abi.sh check [BUILD_DIR]    fails on any difference from the baseline
#   scripts/abi.sh update [BUILD_DIR]   records the built ABI as the baseline
# The recorded ABI is the C ABI alone: the me_* functions libmadengine.so
# exports and the types of madengine/madengine.h they reach (abi/c_abi.supp
# drops every other symbol), without the libraries it links (their SONAMEs
# are the build machine's, not the ABI): a few tens of KB that another
# machine records the same. `check` also holds every exported symbol to its
# version node: me_* at MADENGINE_0, the C++ API at MADENGINE_CXX_<release>
# (it binds to the exact release: docs/embedding.md, "ABI and versions").
# An incompatible change needs a SONAME bump (MADENGINE_SOVERSION in
# cmake/Library.cmake): `update` refuses to record one under the old SONAME,
# `check` refuses a baseline of another SONAME. Compatible additions are
# recorded with `update` (no bump).
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
# The C ABI's headers alone in a folder of their own: abidw keeps the types
# they define (--header-file did not match the objects' relative paths).
mkdir "$tmp/headers"
cp include/madengine/madengine.h include/madengine/export.h "$tmp/headers/"
abidw --headers-dir "$tmp/headers" --drop-private-types --exported-interfaces-only --no-show-locs --no-corpus-path \
  --drop-undefined-syms --type-id-style hash --suppressions abi/c_abi.supp --out-file "$tmp/dw.abi" "$so"
# The linked libraries' SONAMEs (<elf-needed>) are left out.
sed '/<elf-needed>/,/<\/elf-needed>/d' "$tmp/dw.abi" >"$tmp/new.abi"
soname() { grep -o -m1 "soname='[^']*'" "$1" | cut -d"'" -f2; }
new_soname=$(soname "$tmp/new.abi")

# Every exported symbol in its version node: the C ABI's, or the release's C++ one.
version=$(sed -n 's/^#define ME_VERSION_STRING "\(.*\)"/\1/p' "$build/generated/include/madengine/version.h")
stray=$(nm -D --defined-only "$so" | awk '{print $3}' \
  | grep -vE "^me_[a-z0-9_]+@@MADENGINE_0\$|^_Z[A-Za-z0-9_]+@@MADENGINE_CXX_${version//./\\.}\$|^MADENGINE_(0|CXX_${version//./\\.})\$" || true)

case "$mode" in
  check)
    if [[ -n "$stray" ]]; then
      echo "abi: exported outside MADENGINE_0 (me_*) and MADENGINE_CXX_$version (the C++ API):"
      echo "$stray"
      exit 1
    fi
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
