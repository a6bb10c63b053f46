#!/usr/bin/env bash
# The main job: installs what is missing, builds (Release), then
#   1. starts madengine (SM + SA) on an embedded simulated fabric (a 2-level
#      fat tree of 36-port switches: 648 hosts), waits for subnet up, and
#   2. runs a madstorm job-start storm against its SA (every host resolves a
#      path to every other host from its own port: 419,256 PathRecord
#      queries), checks every answer against a walk of the fabric's LFTs,
#      prints the summary and the SA's own counters, and
#   3. fails (exit 1, with the reason) when any answer is wrong, any query
#      timed out, stayed BUSY or was lost, or the counts do not add up.
# Options (after the command):
#   --fabric SPEC     another fabric: ft2:RADIX | ft3:RADIX[:PODS] | random:SW:DEGREE:HOSTS,
#                     each with @PROFILE for its links: sdr (default) qdr fdr edr hdr ndr
#                     xdr, ndr200 (NDR, host links split to 2x), hdr-ndr (HDR leaves,
#                     NDR spines); e.g. --fabric ft2:64:16@ndr200
#   --ibsim           also run the same storm on ibsim against OpenSM 3.3.23
#                     and madengine side by side (perf/madstorm/ibsim_side_by_side.sh)
#   --madstorm PATH   use this madstorm binary: no installing, no building (tests)
#   --out DIR         where the JSON and HTML go (default build-release/)
#   --plant-wrong-answer FIELD[:N]
#                     corrupt one answer on its way to madstorm (mtu, rate,
#                     pkey, sl, dlid, hop-limit): the job must then fail
set -euo pipefail
fabric="ft2:36"
ibsim=0
madstorm=""
out=""
plant=()
while (($#)); do
  case "$1" in
    --fabric) fabric="$2"; shift 2 ;;
    --ibsim) ibsim=1; shift ;;
    --madstorm) madstorm="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --plant-wrong-answer) plant=(--plant-wrong-answer "$2"); shift 2 ;;
    *) echo "main.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# Paths given on the command line are the caller's; the job runs from the repository.
absolute() { [[ -z "$1" || "$1" == /* ]] && echo "$1" || echo "$PWD/$1"; }
madstorm=$(absolute "$madstorm")
out=$(absolute "$out")
cd "$(dirname "$0")/.."
if [[ -z "$madstorm" ]]; then
  bash scripts/deps.sh
  # Only the tools the job runs, without -Werror: a newer or older compiler's
  # new warning must not stop an operator's first run (CI builds with -Werror).
  BUILD_TARGETS="madstorm madengine madwire" bash scripts/build.sh build-release Release -DMADENGINE_WERROR=OFF
  madstorm=build-release/tools/madstorm/madstorm
fi
out=${out:-build-release}
mkdir -p "$out"
echo
echo "==== madengine on an embedded simulated fabric ($fabric), then a madstorm job-start storm ===="
set +e
"$madstorm" --embedded "$fabric" --pattern job-start --no-progress --strict \
  --json "$out/main-job.json" --html "$out/main-job.html" "${plant[@]}"
rc=$?
set -e
echo "(every figure as JSON: $out/main-job.json; report: $out/main-job.html)"
case $rc in
  0)
    python3 - "$out/main-job.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c, o = r["counts"], r["oracle"]
print(f"main job: PASSED: {c['issued']:,} queries from {r['config']['hosts']} hosts, all answered, "
      f"{o['checked']:,} PathRecords checked against the fabric's LFTs, none wrong; "
      f"{r['timing']['throughput_qps']:,.0f} q/s (wall clock, one process; without the oracle's "
      f"{r['timing']['oracle_s']:.2f} s of checks, SA, fabric and clients: "
      f"{r['timing']['throughput_without_oracle_qps']:,.0f} q/s)")
EOF
    ;;
  3) echo "main job: FAILED: the SA gave wrong answers (see the FAILED lines above)" >&2; exit 1 ;;
  4) echo "main job: FAILED: queries timed out, stayed BUSY, were lost, or the counts do not add up (see above)" >&2; exit 1 ;;
  *) echo "main job: FAILED: madstorm could not run the storm (exit $rc)" >&2; exit 1 ;;
esac
if ((ibsim)); then
  bin=$(dirname "$madstorm")/..
  echo
  echo "==== the same storm on ibsim: OpenSM 3.3.23, then madengine ===="
  MADSTORM="$PWD/$madstorm" SA_A_LABEL=opensm SA_B_LABEL=madengine \
    SA_B_CMD="$PWD/$bin/madengine/madengine --transport umad --guid2lid $out/ibsim-guid2lid --log-level warn" \
    sh perf/madstorm/ibsim_side_by_side.sh
fi
