#!/usr/bin/env bash
# `lab/steps.sh TARGET...`: runs make's targets one after the other and goes on past a failure, so
# one run reports every failing step; exits non-zero if any failed. Each step's output is kept in
# .lab/step-TARGET.log and, when it fails, the lines around the failure in .lab/failed/ (which
# .ci/run prints last).
set -uo pipefail
mkdir -p .lab
status=0
for step in "$@"; do
  log=.lab/step-$step.log
  before=$(ls .lab/failed 2>/dev/null)
  if ! bash lab/timed.sh "$step" "${MAKE:-make}" --no-print-directory "$step" 2>&1 | tee "$log"; then
    status=1
    # A step that already kept its own excerpt (molecule's scenarios: molecule-NAME.txt) is not cut twice;
    # another stream's excerpts, made meanwhile, do not count.
    if ! comm -13 <(echo "$before") <(ls .lab/failed 2>/dev/null) | grep -q "^$step"; then
      bash lab/failure-excerpt.sh "$step" "$log"
    fi
  fi
done
exit $status
