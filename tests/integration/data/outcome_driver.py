"""Test entry for launch.yml's outcome: ends the way RLinf's drivers end, chosen by argv[1].

- ``ok``: exits 0.
- ``fail``: exits 3 with RLinf's failure flag set (as its SIGUSR1 handler does before exiting), so
  its atexit handler lets the status through.
- ``hydra``: what RLinf main does when its Hydra main raises. Hydra writes "Error executing job
  with overrides" and, unless HYDRA_FULL_ERROR=1, calls sys.exit(1); RLinf's atexit handler then
  calls os._exit(0) because its failure flag (set by its sys.excepthook) is not set. With
  HYDRA_FULL_ERROR=1 Hydra re-raises, the hook sets the flag, and the status is 1.
  (Read in Hydra 1.3 hydra/_internal/utils.py run_and_report and RLinf main
  rlinf/scheduler/cluster/cluster.py _install_failure_hook / _shutdown_ray_at_exit.)
"""

import atexit
import os
import sys

failed = False


def hook(exc_type, exc_value, exc_tb):
    global failed
    failed = True
    sys.__excepthook__(exc_type, exc_value, exc_tb)


def shutdown_at_exit():
    if failed:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


sys.excepthook = hook
atexit.register(shutdown_at_exit)
mode = sys.argv[1]
print(f"outcome_driver: {mode}", flush=True)
if mode == "fail":
    failed = True
    sys.exit(3)
if mode == "hydra":
    sys.stderr.write("Error executing job with overrides: ['runner.max_steps=1']\n")
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        raise ValueError("the driver failed")
    sys.stderr.write("ValueError: the driver failed\n")
    sys.stderr.write("\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    sys.exit(1)
