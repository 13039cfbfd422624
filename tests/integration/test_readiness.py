"""status.yml -e rlinf_readiness=true on the real lab's own venv (no torch): the all-pairs TCP
fallback. The checks with torch and rlinf installed (gloo collectives, RLinf's own attach, a
worker cut off from its peers, RLinf waiting for a node that never comes) run in
test_rlinf_workload.py, on that module's one install of torch and rlinf.
"""

from __future__ import annotations

import pytest
from lab_helpers import remove_torch
from readiness_helpers import readiness_vars, timed_status, venv_imports

# It starts on the lab inventory's healthy cluster (conftest.py), whatever ran before on this lab.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


def test_tcp_fallback_without_torch(tmp_path, hosts):
    remove_torch({name: a for name, a in hosts.items() if venv_imports(a, "torch") or venv_imports(a, "rlinf")})
    run, report, _ = timed_status(tmp_path, **readiness_vars())
    assert run.rc == 0, run.stdout[-4000:]
    assert not run.changed(), run.stats
    ready = report["readiness"]
    assert report["ok"] is True and ready["ok"] is True, ready["problems"]
    assert ready["mode"] == "tcp" and ready["torch"] is None and ready["backends"] == []
    assert "torch is not installed in the venv" in ready["tcp"]["reason"]
    assert ready["summary"].startswith(f"OK: torch not installed, all-pairs TCP {len(hosts) * (len(hosts) - 1)}/")
    # Every node listened on its collective address and every other one connected there.
    names = list(hosts)
    pairs = {(p["from"], p["to"]): p for p in ready["tcp"]["pairs"]}
    assert set(pairs) == {(a, b) for a in names for b in names if a != b}
    for (_, dst), pair in pairs.items():
        assert pair["ok"] and pair["address"] == hosts[dst] and pair["port"] > 0, pair
        assert pair["connect_s"] > 0 and pair["gbps"] > 0, pair
    for node in ready["nodes"]:
        # RLINF_COMM_NET_DEVICES is always written (the default route's NIC here), so the address
        # is the one RLinf's GLOO_SOCKET_IFNAME names, not the hostname's.
        assert (node["interface"], node["address"], node["source"]) == (
            "eth0",
            hosts[node["name"]],
            "GLOO_SOCKET_IFNAME",
        ), node
        assert node["tcp"]["ok"] and sorted(node["tcp"]["reached"]) == sorted(set(names) - {node["name"]})
    assert ready["rlinf"]["state"] == "not_installed"
