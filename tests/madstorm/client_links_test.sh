#!/usr/bin/env bash
# madstorm is an SA client: it links the engine's transports, the wire
# formats and its own library, never the node (SM, SA), the simulator or the
# daemon's service (libmicrohttpd, libsystemd); --embedded is madstorm-embedded's.
# Usage: client_links_test.sh MADSTORM MADSTORM_EMBEDDED
set -euo pipefail
madstorm=$1
embedded=$2
fail() { echo "FAILED: $*" >&2; exit 1; }
service_libs='libmicrohttpd|libsystemd'
libs=$(ldd "$madstorm")
echo "$libs"
if grep -Eq "$service_libs" <<<"$libs"; then fail "madstorm links $(grep -E "$service_libs" <<<"$libs" | tr -s ' \t' ' ')"; fi
# What is linked statically shows as defined symbols, not in ldd.
inner=$(nm -C --defined-only "$madstorm" | grep -E 'madengine::(node|sm|sa|sim|service|perfmgr)::' | head -5 || true)
[[ -z "$inner" ]] || fail "madstorm holds code of the node, SM, SA, simulator or service:"$'\n'"$inner"
# The same checks see what madstorm-embedded holds: they are not blind.
ldd "$embedded" | grep -E "$service_libs" >/dev/null || fail "madstorm-embedded links neither libmicrohttpd nor libsystemd: the check proves nothing"
# (grep -q would end the pipe early: nm's SIGPIPE fails it under pipefail.)
nm -C --defined-only "$embedded" | grep -E 'madengine::node::' >/dev/null || fail "madstorm-embedded holds no node code: the check proves nothing"
echo "madstorm links no node, SM, SA, simulator or service; madstorm-embedded does"
