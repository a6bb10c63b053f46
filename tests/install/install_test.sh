#!/usr/bin/env bash
# libmadengine from its install tree: `cmake --install` into a scratch
# prefix, then, using only what was installed,
#   1. every public header compiles alone (C++20) and madengine.h as C99,
#      and find_package(madengine) links a C++ node against the .so and the .a
#      (tests/install/consumer);
#   2. the installed example vendor SM builds with its Makefile through
#      pkg-config and brings up a simulated fabric with its own routing, its
#      PathRecords following its LFTs (--check), and shuts down cleanly.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR SOVERSION
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
so=libmadengine.so.$3  # the SONAME (MADENGINE_SOVERSION)
work=$(mktemp -d /tmp/madengine-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_test: FAILED: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
libdir=$(dirname "$(find "$prefix" -name "$so" | head -1)")
[[ -n "$libdir" && -e "$libdir/libmadengine.a" && -e "$libdir/pkgconfig/madengine.pc" ]] || fail "libraries or madengine.pc not installed"
[[ -e "$prefix/include/madengine/madengine.h" ]] || fail "madengine.h not installed"
[[ ! -e "$prefix/include/madengine/engine/engine.hpp" ]] || fail "a private header was installed"
soname=$(readelf -d "$libdir/$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" == "$so" ]] || fail "SONAME is '$soname'"
echo "install_test: installed into $prefix (SONAME $soname)"

# 1. The CMake package, headers alone, C++ against the .so and the .a.
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "configure the consumer"; }
ninja -C "$work/consumer" >>"$work/consumer.log" 2>&1 || { tail -40 "$work/consumer.log"; fail "build the consumer"; }
echo "install_test: $(find "$work/consumer/alone" -name '*.cpp' | wc -l) installed headers compile alone, madengine.h as C99"
LD_LIBRARY_PATH=$libdir "$work/consumer/consumer_shared" || fail "consumer_shared"
"$work/consumer/consumer_static" || fail "consumer_static"
"$work/consumer/consumer_c" || fail "consumer_c (a C program on the static library)"
readelf -d "$work/consumer/consumer_static" >"$work/static.txt"
if grep -q libmadengine "$work/static.txt"; then fail "consumer_static needs libmadengine.so"; fi

# 2. The example, from the installed sources, through pkg-config.
example=$(find "$prefix" -path '*examples/vendor_sm/vendor_sm.c' | head -1)
[[ -n "$example" ]] || fail "the example's sources are not installed"
cp -r "$(dirname "$example")" "$work/example"
PKG_CONFIG_PATH=$libdir/pkgconfig make -C "$work/example" >"$work/example.log" 2>&1 || { cat "$work/example.log"; fail "make the example"; }
[[ "$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --libs madengine)" == "-L$libdir -lmadengine"* ]] || fail "pkg-config --libs madengine"
readelf -d "$work/example/vendor_sm" >"$work/dynamic.txt"
grep -q "NEEDED.*\[$so\]" "$work/dynamic.txt" || fail "the example does not need $so"
LD_LIBRARY_PATH=$libdir ldd "$work/example/vendor_sm" >"$work/ldd.txt"
grep -q "$libdir/$so" "$work/ldd.txt" || fail "the example does not load the installed library"
LD_LIBRARY_PATH=$libdir "$work/example/vendor_sm" --sim ft2:4 --check | tee "$work/run.log" || fail "vendor_sm --sim ft2:4 --check"
grep -q "0 mismatches" "$work/run.log" || fail "the example's check"
grep -q "vendor_sm: stopped" "$work/run.log" || fail "the example did not stop cleanly"
echo "install_test: passed"
