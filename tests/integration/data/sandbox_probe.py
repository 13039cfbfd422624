"""Driver for test_ray_sandbox.py: one task pinned to every ALIVE node tries what code sent to
Ray might try, inside Ray's unit, and prints what each node allowed (JSON on the last line)."""

import json
import os
import sys
import tempfile

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1])


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as err:
        return type(err).__name__ + ":" + (os.strerror(err.errno) if err.errno else str(err))


def write(path):
    with open(path, "w") as handle:
        handle.write("probe\n")
    os.unlink(path)


@ray.remote(num_cpus=0)
def inside():
    with open("/proc/self/status") as handle:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
    home = os.environ.get("HOME", "")
    return {
        "ip": ray.util.get_node_ip_address(),
        "uid": os.getuid(),
        "home": home,
        "cap_eff": status.get("CapEff"),
        "no_new_privs": status.get("NoNewPrivs"),
        "umask": status.get("Umask"),
        "write": {
            path: attempt(lambda p=path: write(p))
            for path in (
                "/opt/rlinf/venv/probe",
                "/opt/rlinf/probe",
                "/etc/probe",
                "/var/spool/probe",
                "/usr/local/probe",
                "/tmp/probe",
                "/srv/probe",
            )
        },
        "home_write": attempt(lambda: write(os.path.join(home, "probe"))),
        "tempfile": attempt(lambda: tempfile.NamedTemporaryFile().close()),
        "list_root_home": attempt(lambda: os.listdir("/root")),
        "kernel_tunable": attempt(lambda: write("/proc/sys/kernel/domainname")),
    }


nodes = [n for n in ray.nodes() if n["Alive"]]
refs = [
    inside.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote() for n in nodes
]
print(json.dumps(ray.get(refs, timeout=120)))
