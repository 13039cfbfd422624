#!/usr/bin/env bash
# The lab's wheelhouse kept once per machine ($RLINF_MACHINE_CACHE/wheelhouse), like the lab image:
#   restore DIR  a state directory's wheelhouse that does not exist yet starts as a copy of the machine's;
#                site.yml reuses a set of it only where the set is complete (its lock there, every wheel
#                the lock lists there with the lock's sha256), and downloads any other.
#   save DIR     the machine's copy gets the sets DIR has that it lacks (a file it has is never replaced).
# Copies, not hard links: a test that changes a wheel of its lab's wheelhouse changes only that lab's.
# RLINF_MACHINE_CACHE= (empty) keeps nothing.
set -euo pipefail
cache=${RLINF_MACHINE_CACHE-$HOME/.cache/rlinf-ansible}
[[ -n "$cache" ]] || exit 0
action=$1 dir=$2
kept=$cache/wheelhouse
case "$action" in
  restore)
    if [[ ! -e "$dir" && -d "$kept" ]]; then
      mkdir -p "$dir"
      cp -a "$kept/." "$dir/"
      echo "lab: the wheelhouse starts as the copy this machine keeps ($kept)"
    fi
    ;;
  save)
    if [[ -d "$dir" ]]; then
      mkdir -p "$kept"
      cp -a -n "$dir/." "$kept/"
    fi
    ;;
  *) echo "usage: $0 restore|save DIR" >&2; exit 2 ;;
esac
