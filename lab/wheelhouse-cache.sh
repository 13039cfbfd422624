#!/usr/bin/env bash
# The lab's wheelhouse kept once per machine ($RLINF_MACHINE_CACHE/wheelhouse), like the lab image:
#   restore DIR  a state directory's wheelhouse that does not exist yet starts as a copy of the machine's;
#                site.yml reuses a set of it only where the set is complete (its lock there, every wheel
#                the lock lists there with the lock's sha256), and downloads any other.
#   save DIR     the machine's copy gets each set whose lock was written in DIR since its restore (what
#                the runs in between downloaded), the wheels first and the lock last; a file the copy
#                has is never replaced.
# Copies, not hard links: a test that changes a wheel of its lab's wheelhouse changes only that lab's.
# RLINF_MACHINE_CACHE= (empty) keeps nothing.
set -euo pipefail
cache=${RLINF_MACHINE_CACHE-$HOME/.cache/rlinf-ansible}
[[ -n "$cache" ]] || exit 0
action=$1
dir=$(realpath -m "$2")
kept=$cache/wheelhouse
since=$cache/since-$(printf %s "$dir" | sha256sum | cut -c1-16)
case "$action" in
  restore)
    mkdir -p "$cache"
    touch "$since"
    if [[ ! -e "$dir" && -d "$kept" ]]; then
      mkdir -p "$dir"
      cp -a "$kept/." "$dir/"
      echo "lab: the wheelhouse starts as the copy this machine keeps ($kept)"
    fi
    ;;
  save)
    [[ -d "$dir" && -e "$since" ]] || exit 0
    find "$dir" -name 'requirements-*.lock' -newer "$since" | while read -r lock; do
      from=$(dirname "$lock")
      to=$kept${from#"$dir"}
      mkdir -p "$to"
      sed -n 's/.*  # //p' "$lock" | while read -r wheel; do cp -a -n "$from/$wheel" "$to/"; done
      cp -a -n "$lock" "$to/"
      echo "lab: this machine keeps the wheelhouse set $(basename "$lock") in $to"
    done
    rm -f "$since"
    ;;
  *) echo "usage: $0 restore|save DIR" >&2; exit 2 ;;
esac
