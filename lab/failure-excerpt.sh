#!/usr/bin/env bash
# `lab/failure-excerpt.sh NAME LOG`: keeps the lines around LOG's first failures in
# .lab/failed/NAME.txt, which .ci/run prints last (CI shows only the end of its output, and make
# test's streams print long logs before it).
set -uo pipefail
name=$1
log=$2
mkdir -p .lab/failed
plain=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
# Ansible's failed tasks, pytest's failed assertions and summary, molecule's and make's errors.
around=$(grep -E -A 30 -m 3 'fatal: \[|failed: \[|FAILED!|^E   |^FAILED |^ERROR|CRITICAL' <<<"$plain")
{
  echo "== $name failed; the lines around its first failures ($log):"
  if [[ -n $around ]]; then cut -c 1-400 <<<"$around" | head -n 90; else tail -n 40 <<<"$plain" | cut -c 1-400; fi
} > ".lab/failed/${name// /-}.txt"
