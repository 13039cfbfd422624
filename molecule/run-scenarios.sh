#!/usr/bin/env bash
# Runs every molecule scenario. Each scenario's podman network is created here, before
# molecule (its driver's `network:` key deletes and recreates networks), and removed after.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_CONFIG="$PWD/ansible.cfg"
export PATH="$PWD/.venv/bin:$PATH"
scenarios=${SCENARIOS:-$(cd molecule && ls -d */ | tr -d / | tr '\n' ' ')}

declare -A subnets=([default]=10.89.78.0/24)

status=0
mkdir -p .lab
for scenario in $scenarios; do
  net="rlinf-mol-$scenario"
  if [[ -n "${subnets[$scenario]:-}" ]]; then
    podman network exists "$net" || podman network create --subnet "${subnets[$scenario]}" "$net" >/dev/null
  fi
  echo "== molecule test -s $scenario"
  log=.lab/molecule-$scenario.log
  if ! bash lab/timed.sh "molecule $scenario" molecule test -s "$scenario" 2>&1 | tee "$log"; then
    status=1
    bash lab/failure-excerpt.sh "molecule $scenario" "$log"
  fi
  if [[ -n "${subnets[$scenario]:-}" ]]; then
    podman network rm -f "$net" >/dev/null 2>&1 || true
  fi
done
exit $status
