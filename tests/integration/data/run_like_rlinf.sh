#! /bin/bash
# Ends like RLinf's examples/embodiment/run_embodiment.sh: the driver piped into tee, no pipefail.
LOG_DIR="$(dirname "$0")/logs"
mkdir -p "$LOG_DIR"
python outcome_driver.py "$@" 2>&1 | tee -a "$LOG_DIR/run.log"
