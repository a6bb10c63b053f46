#!/usr/bin/env bash
# The Debian packages (cmake/Packaging.cmake): `cpack -G DEB` builds
# madengine, libmadengine<SOVERSION> and libmadengine-dev; their dependencies must
# resolve on this system (apt-get --simulate install); unpacked into a
# scratch root (dpkg -x), the example vendor SM from libmadengine-dev builds
# through pkg-config (PKG_CONFIG_SYSROOT_DIR) against that root only, comes
# up on a simulated fabric with its own routing and shuts down cleanly; the
# packaged daemon brings up a simulated fabric too; the madengine package
# carries the systemd unit (naming /usr/bin and /etc), the conffiles and
# the man pages (gzip-compressed).
# Usage: package_test.sh BUILD_DIR SOVERSION
set -euo pipefail
build=$(realpath "$1")
libpkg=libmadengine$2 so=libmadengine.so.$2  # the library package and SONAME (MADENGINE_SOVERSION)
work=$(mktemp -d /tmp/madengine-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "package_test: FAILED: $*"; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/debs" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")/\1/p' "$build/CPackConfig.cmake")
debs=()
for p in madengine $libpkg libmadengine-dev; do
  deb=$work/debs/${p}_${version}_amd64.deb
  [[ -e "$deb" ]] || fail "no $p package"
  debs+=("$deb")
  echo "package_test: $p $(dpkg-deb -f "$deb" Version): Depends: $(dpkg-deb -f "$deb" Depends)"
done
[[ "$(dpkg-deb -f "${debs[1]}" Depends)" == *libibumad3* ]] || fail "$libpkg does not depend on libibumad3"
[[ "$(dpkg-deb -f "${debs[2]}" Depends)" == "$libpkg (= $version)" ]] || fail "libmadengine-dev's Depends"
dpkg-deb -c "${debs[1]}" >"$work/lib.list"
dpkg-deb -c "${debs[0]}" >"$work/daemon.list"
grep -q "$so -> " "$work/lib.list" || fail "$libpkg lacks $so"
grep -q "usr/bin/madengine$" "$work/daemon.list" || fail "madengine lacks the daemon"
for f in usr/bin/madengine-ctl usr/bin/madstorm usr/bin/madstorm-embedded lib/systemd/system/madengine.service etc/madengine/madengine.toml etc/logrotate.d/madengine \
  usr/share/man/man8/madengine.8.gz usr/share/man/man8/madengine-ctl.8.gz usr/share/man/man1/madstorm.1.gz; do
  grep -q " \./$f$" "$work/daemon.list" || grep -q " \./usr/$f$" "$work/daemon.list" || fail "madengine lacks $f"
done
# Compressed as Debian policy 12.1 asks, and they read back.
for page in man8/madengine.8 man8/madengine-ctl.8 man1/madstorm.1; do
  dpkg-deb --fsys-tarfile "${debs[0]}" | tar -xO "./usr/share/man/$page.gz" | gzip -t || fail "$page.gz is not gzip data"
done
grep -q "usr/share/man/man8/madengine.8$" "$work/daemon.list" && fail "an uncompressed madengine.8 is packaged"
dpkg-deb -e "${debs[0]}" "$work/control"
grep -qx "/etc/madengine/madengine.toml" "$work/control/conffiles" || fail "the configuration is not a conffile"
grep -q "ExecStart=/usr/bin/madengine --config /etc/madengine/madengine.toml" \
  <(dpkg-deb --fsys-tarfile "${debs[0]}" | tar -xO ./usr/lib/systemd/system/madengine.service) || fail "the packaged unit's ExecStart"
apt-get --simulate -q install "${debs[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "the packages do not install here"; }

root=$work/root
for d in "${debs[@]}"; do dpkg -x "$d" "$root"; done
lib=$(dirname "$(find "$root" -name "$so" | head -1)")
pc=$(dirname "$(find "$root" -name 'madengine.pc' | head -1)")
example=$(dirname "$(find "$root" -path '*libmadengine-dev/examples/vendor_sm/vendor_sm.c' | head -1)")
[[ -n "$lib" && -n "$pc" && -n "$example" ]] || fail "$so, madengine.pc or the example missing from the packages"
cp -r "$example" "$work/example"
PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$pc make -C "$work/example" >"$work/make.log" 2>&1 || { cat "$work/make.log"; fail "make the example"; }
LD_LIBRARY_PATH=$lib ldd "$work/example/vendor_sm" >"$work/ldd.txt"
grep -q "$lib/$so" "$work/ldd.txt" || fail "the example does not load the packaged library"
LD_LIBRARY_PATH=$lib "$work/example/vendor_sm" --sim ft2:4 --check | tee "$work/run.log" || fail "vendor_sm --sim ft2:4 --check"
grep -q "0 mismatches" "$work/run.log" && grep -q "vendor_sm: stopped" "$work/run.log" || fail "the example's check"
"$root/usr/bin/madengine" --transport sim --generate ft2:4 --exit-after-subnet-up --log-level warn || fail "the packaged daemon"
echo "package_test: passed"
