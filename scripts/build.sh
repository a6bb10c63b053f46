#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh [DIR] [BUILD_TYPE] [extra cmake args...]
#   DIR defaults to build/, BUILD_TYPE to Release (others: Debug, RelWithDebInfo, Asan, Tsan).
#   BUILD_TARGETS (env): build only these targets (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${2:-Release}
shift $(( $# > 2 ? 2 : $# ))
# ccache, where installed, makes rebuilds of other trees of the same sources cheap.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DMADENGINE_WERROR=ON "${launcher[@]}" "$@" >"$dir.configure.log" 2>&1 \
  || { cat "$dir.configure.log"; exit 1; }
grep -E "ring backend|mlx5dv" "$dir.configure.log" | sed 's/^-- /build: /'
# shellcheck disable=SC2086
ninja -C "$dir" -j"$(nproc)" ${BUILD_TARGETS:-}
