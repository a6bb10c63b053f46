#!/usr/bin/env bash
# Installs the Debian 12 packages madengine needs to build, test and run
# against its real peers (ibsim, OpenSM, infiniband-diags). Installs only
# what is missing, so a second run costs a second. Needs root (or sudo).
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config git
  lld                              # links the test programs faster than ld.bfd
  clang libclang-rt-14-dev         # libFuzzer and clang sanitizer runtimes
  # test and benchmark frameworks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # RDMA stack: libibumad (transport), libibmad (independent decoder in tests), verbs/mlx5dv
  rdma-core ibverbs-providers libibumad-dev libibmad-dev libibverbs-dev
  # real peers
  ibsim-utils opensm infiniband-diags
  # rings, CLI, config, logging, JSON
  libdpdk-dev libboost-dev libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # the daemon as a service: metrics over HTTP, sd_notify; systemd-analyze verify, curl and
  # logrotate check the unit, the endpoint and the logrotate snippet
  libmicrohttpd-dev libsystemd-dev systemd curl logrotate
  # tools the scripts and tests call
  procps psmisc python3 man-db
  gdb                              # a diag that hangs on ibsim is reported with every stack
  # libmadengine's ABI check (abidw, abidiff) and Debian packages (CPack's
  # DEB generator runs `file` on every packaged file, then dpkg-shlibdeps)
  abigail-tools dpkg-dev file
)

missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
