#!/usr/bin/env bash
# The main job: installs what is missing, builds (Release), and runs the
# demo. The demo grows with the project; this command stays the same.
# Today: decode MADs captured from ibsim with madwire (the daemon and
# madstorm are not built yet; see docs/status.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build-release Release
echo
echo "==== madwire: a directed-route NodeInfo request and its response, captured from ibsim ===="
build-release/tools/madwire/madwire tools/madwire/samples/dr_nodeinfo_get_0_3.hex tools/madwire/samples/dr_nodeinfo_getresp_0_3.hex
