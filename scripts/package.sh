#!/usr/bin/env bash
# Builds the Debian packages: madengine (daemon and tools), libmadengine1
# (libmadengine.so.1) and libmadengine-dev (headers, static library, CMake
# package, madengine.pc, the example). Usage: scripts/package.sh [DIR] [BUILD_TYPE]
# (default build-package Release); the .deb files land in DIR/packages.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-package}
type=${2:-Release}
bash scripts/build.sh "$dir" "$type" -DMADENGINE_BUILD_TESTS=OFF
cpack -G DEB --config "$dir/CPackConfig.cmake" -B "$dir/packages"
ls -l "$dir"/packages/*.deb
