#!/usr/bin/env bash
# One lab flavour end to end, on a lab of its own: build its image (when missing), bring up
# fresh hosts, run the scenario's lab tests against them, remove the lab (KEEP_LAB=1 keeps it).
#   lab/scenario.sh TEST_FILE LAB_NAME=NAME LAB_SUBNET=CIDR [LAB_DISTRO=...] [LAB_SSH_USER=...]
#                   [LAB_NICS=2 LAB_DATA_SUBNET=CIDR] [LAB_BASTION=1 LAB_PRIVATE_SUBNET=CIDR] [LAB_NODES=N]
# Prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
test_file=$1
shift
# The scenario's own flavour only: nothing inherited from the caller's lab.
export LAB_DISTRO=bookworm LAB_SSH_USER=root LAB_NICS=1 LAB_BASTION=0 LAB_NODES=2
unset LAB_NAME LAB_SUBNET LAB_DATA_SUBNET LAB_PRIVATE_SUBNET LAB_IMAGE
for assignment in "$@"; do
  [[ $assignment =~ ^LAB_[A-Z_]+=.+$ ]] || { echo "scenario: '$assignment' is not LAB_VARIABLE=VALUE" >&2; exit 2; }
  export "${assignment?}"
done
if [[ -z ${LAB_NAME:-} || $LAB_NAME == rlinf-lab || -z ${LAB_SUBNET:-} ]]; then
  echo "scenario: give it a lab of its own: LAB_NAME=rlinf-lab-<x> LAB_SUBNET=<cidr>" >&2
  exit 2
fi
export RLINF_LAB_INVENTORY=$PWD/.lab/$LAB_NAME/inventory

started=$(date +%s)
timings=""
step() {
  local name=$1 begin status
  shift
  begin=$(date +%s)
  "$@" || status=$?
  timings+="$name $(($(date +%s) - begin))s, "
  return "${status:-0}"
}
finish() {
  local status=$?
  [[ -n ${KEEP_LAB:-} ]] || .venv/bin/python lab/lab.py down >/dev/null || true
  echo "scenario $LAB_NAME ($LAB_DISTRO, SSH as $LAB_SSH_USER, NICs: $LAB_NICS, bastion: $LAB_BASTION, $LAB_NODES hosts):" \
    "${timings}total $(($(date +%s) - started))s, exit $status"
  exit "$status"
}
trap finish EXIT

# Fresh hosts: a lab left by an earlier run would already hold the venv.
.venv/bin/python lab/lab.py down >/dev/null
step image bash lab/build-image.sh
step lab-up .venv/bin/python lab/lab.py up
# The controller's wheelhouse starts as the copy this machine keeps, which gets what the tests downloaded
# (lab/wheelhouse-cache.sh).
bash lab/wheelhouse-cache.sh restore "$RLINF_LAB_INVENTORY/.rlinf/wheelhouse"
step tests .venv/bin/pytest -m lab -q --durations=0 "$test_file"
bash lab/wheelhouse-cache.sh save "$RLINF_LAB_INVENTORY/.rlinf/wheelhouse"
