"""Run on a node with the venv's Python (piped over SSH): ray.init(address=argv[1]) as a client
does, and print JSON: connected, or the exception Ray raised, its cause and the seconds it took."""

import json
import sys
import time

started = time.monotonic()
try:
    import ray

    ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
    outcome = {"connected": True}
except Exception as err:
    cause = err.__cause__ or err.__context__
    outcome = {"connected": False, "error": f"{type(err).__name__}: {err}", "cause": f"{type(cause).__name__}: {cause}"}
outcome["seconds"] = time.monotonic() - started
print(json.dumps(outcome))
