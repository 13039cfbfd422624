#!/usr/bin/env bash
# Runs a command and prints how long it took: `lab/timed.sh NAME CMD...` (make test's stages).
set -uo pipefail
name=$1
shift
begin=$(date +%s)
"$@"
status=$?
echo "time: $name took $(( $(date +%s) - begin )) s (exit $status)"
exit $status
