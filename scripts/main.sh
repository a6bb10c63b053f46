#!/usr/bin/env bash
# The main job: installs what is missing, builds (Release), then
#   1. starts madengine (SM + SA) on an embedded simulated fabric (a 2-level
#      fat tree of 36-port switches: 648 hosts), waits for subnet up, and
#   2. runs a madstorm job-start storm against its SA (every host resolves a
#      path to every other host: 419,256 PathRecord queries), then prints the
#      summary and the SA's own counters.
# Options (after the command):
#   --fabric SPEC     another fabric: ft2:RADIX | ft3:RADIX[:PODS] | random:SW:DEGREE:HOSTS
#   --ibsim           also run the same storm on ibsim against OpenSM 3.3.23
#                     and madengine side by side (perf/madstorm/ibsim_side_by_side.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
fabric="ft2:36"
ibsim=0
while (($#)); do
  case "$1" in
    --fabric) fabric="$2"; shift 2 ;;
    --ibsim) ibsim=1; shift ;;
    *) echo "main.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bash scripts/deps.sh
# Only the tools the job runs, without -Werror: a newer or older compiler's
# new warning must not stop an operator's first run (CI builds with -Werror).
BUILD_TARGETS="madstorm madengine madwire" bash scripts/build.sh build-release Release -DMADENGINE_WERROR=OFF
bin=build-release/tools
echo
echo "==== madengine on an embedded simulated fabric ($fabric), then a madstorm job-start storm ===="
"$bin/madstorm/madstorm" --embedded "$fabric" --pattern job-start --no-progress --json build-release/main-job.json
echo "(every figure as JSON: build-release/main-job.json)"
if ((ibsim)); then
  echo
  echo "==== the same storm on ibsim: OpenSM 3.3.23, then madengine ===="
  MADSTORM="$PWD/$bin/madstorm/madstorm" SA_A_LABEL=opensm SA_B_LABEL=madengine \
    SA_B_CMD="$PWD/$bin/madengine/madengine --transport umad --guid2lid build-release/ibsim-guid2lid --log-level warn" \
    sh perf/madstorm/ibsim_side_by_side.sh
fi
