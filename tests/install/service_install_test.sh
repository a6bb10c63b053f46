#!/usr/bin/env bash
# The daemon as `cmake --install` lays it out for an operator: the systemd
# unit (accepted by systemd-analyze verify, naming the installed binary and
# configuration), /etc/madengine/madengine.toml (which the installed daemon
# reads), the logrotate snippet (logrotate -d parses it) and the man pages
# (gzip-compressed, rendered without a warning), and the unit's sandbox as
# systemd-analyze security rates it.
# Usage: service_install_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
work=$(mktemp -d /tmp/madengine-service-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "service_install_test: FAILED: $*"; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component daemon >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
unit=$prefix/lib/systemd/system/madengine.service
for f in "$unit" "$prefix/etc/madengine/madengine.toml" "$prefix/etc/logrotate.d/madengine" "$prefix/bin/madengine-ctl" \
  "$prefix/share/man/man8/madengine.8.gz" "$prefix/share/man/man8/madengine-ctl.8.gz" "$prefix/share/man/man1/madstorm.1.gz"; do
  [[ -e "$f" ]] || fail "not installed: ${f#"$prefix"/}"
done
grep -qx "ExecStart=$prefix/bin/madengine --config $prefix/etc/madengine/madengine.toml" "$unit" || fail "ExecStart: $(grep ExecStart= "$unit")"
grep -qx "Type=notify" "$unit" || fail "the unit is not Type=notify"
# verify checks the unit's syntax, the executables and the Documentation= man pages.
MANPATH=$prefix/share/man systemd-analyze verify "$unit" >"$work/verify.log" 2>&1 || { cat "$work/verify.log"; fail "systemd-analyze verify"; }
[[ ! -s "$work/verify.log" ]] || { cat "$work/verify.log"; fail "systemd-analyze verify warned"; }
# The sandbox: systemd-analyze rates the unit's exposure (10 = none, 0 = all
# sandboxed); the unit as shipped rates 2.0 (OK), the one before 8.9 (EXPOSED).
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
  systemd-analyze security --offline=yes "$unit" >"$work/security.log" 2>&1 || true
  level=$(sed -n 's/.*Overall exposure level for madengine.service: \([0-9.]*\).*/\1/p' "$work/security.log")
  [[ -n "$level" ]] || { cat "$work/security.log"; fail "systemd-analyze security gave no level"; }
  awk -v l="$level" 'BEGIN { exit !(l <= 3.0) }' || { cat "$work/security.log"; fail "exposure $level (above 3.0)"; }
  echo "service_install_test: systemd-analyze security: exposure $level"
fi
logrotate -d -s "$work/logrotate.state" "$prefix/etc/logrotate.d/madengine" >"$work/logrotate.log" 2>&1 ||
  { cat "$work/logrotate.log"; fail "logrotate -d"; }
grep -q "error" "$work/logrotate.log" && { cat "$work/logrotate.log"; fail "logrotate found an error"; }
for page in man8/madengine.8.gz man8/madengine-ctl.8.gz man1/madstorm.1.gz; do
  MANWIDTH=80 man --warnings -l "$prefix/share/man/$page" 2>"$work/man.err" >"$work/man.txt"
  [[ -s "$work/man.txt" && ! -s "$work/man.err" ]] || { cat "$work/man.err"; fail "man $page"; }
done
# The installed configuration is one the installed daemon accepts (on the sim: no port here).
"$prefix/bin/madengine" --config "$prefix/etc/madengine/madengine.toml" --transport sim --generate ft2:4 \
  --exit-after-subnet-up --log-level warn || fail "the daemon with the installed configuration"
echo "service_install_test: passed"
