#!/usr/bin/env bash
# The controller venv (.venv), built once per machine for each set of its inputs (the pinned
# requirements, the Python, this script) in $RLINF_MACHINE_CACHE/venv-<digest> and linked from the
# checkout: another clone, a worktree or CI's fresh clone on the same machine links the same venv
# instead of installing ~20,000 files again. A venv cannot move (its scripts name its own path), so
# each set is built where it stays; a new set of inputs gets a new directory. A checkout whose .venv
# is a directory of its own keeps installing into it, and RLINF_MACHINE_CACHE= (empty) makes one.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
cache=${RLINF_MACHINE_CACHE-$HOME/.cache/rlinf-ansible}

install() {
  test -x "$1/bin/python" || "$python" -m venv "$1"
  "$1/bin/pip" install -q --disable-pip-version-check -r requirements/controller.txt
  # rlinf is read (not imported) by the differential test; its deps (torch, ray) are not needed.
  "$1/bin/pip" install -q --disable-pip-version-check --no-deps -r requirements/test.txt
  touch "$1/bin/.installed"
}

if [[ -z "$cache" ]]; then
  if [[ -L .venv ]]; then rm .venv; fi
  install .venv
  exit
fi
if [[ -d .venv && ! -L .venv ]]; then
  install .venv
  exit
fi
inputs=$({ cat "$0" requirements/controller.txt requirements/test.txt; "$python" -c 'import sys; print(sys.version, sys.executable)'; } \
  | sha256sum | cut -c1-16)
target=$cache/venv-$inputs
mkdir -p "$cache"
# One build at a time per machine; a build that was cut short is started again from nothing.
exec 9>"$cache/venv.lock"
flock 9
if [[ ! -e "$target/bin/.installed" ]]; then
  rm -rf "$target"
  install "$target"
fi
ln -sfn "$target" .venv
touch "$target/bin/.installed"
