"""ufw active on a worker, as an operator of Ubuntu-like hosts has it: incoming denied, SSH allowed.

ufw's chains drop what our nft table would accept, so site.yml refuses the node at preflight,
naming ufw, the node addresses it lacks and both fixes, before anything changes. With
rlinf_firewall_manage_host site.yml adds exactly those `allow from` rules through ufw (commented
rlinf-ansible), the cluster comes up through the active firewall and a re-run changes nothing;
purge on that worker deletes our rules and leaves the operator's SSH rule and ufw itself on. The lab
image has ufw installed and off (lab/build-image.sh); the module leaves it off, and that worker purged
(the next module's cluster fixture installs it again: one node, not three).
"""

from __future__ import annotations

import pytest
from lab_helpers import run_playbook, run_site, ssh

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

MANAGE = {"rlinf_firewall_manage_host": True}


def ufw_rules(address: str) -> list[str]:
    out = ssh(address, "LC_ALL=C ufw status").stdout
    return [" ".join(line.split()) for line in out.splitlines() if "ALLOW" in line]


@pytest.fixture
def ufw_on_a_worker(hosts):
    worker = list(hosts)[-1]
    address = hosts[worker]
    ssh(address, "ufw default deny incoming && ufw allow 22/tcp && ufw --force enable")
    try:
        yield worker, address
    finally:
        ssh(
            address,
            "ufw --force reset && ufw disable && rm -f /etc/ufw/*.rules.[0-9]* /etc/ufw/*.rules.*_*",
            check=False,
        )


def test_ufw_is_refused_naming_the_node_then_opened_exactly_and_purged(tmp_path, hosts, ufw_on_a_worker):
    worker, address = ufw_on_a_worker
    peers = [ip for name, ip in hosts.items() if name != worker]

    refused = run_playbook("site.yml", tmp_path)
    printed = " ".join(refused.stdout.split())
    assert refused.rc != 0
    assert f"host '{worker}': ufw is active here and drops incoming traffic by default" in printed, printed[-3000:]
    assert f"from {', '.join(peers)} would never arrive" in printed
    assert "rlinf_firewall_manage_host: true" in printed
    assert all(f"ufw allow from {ip} comment rlinf-ansible" in printed for ip in peers)
    assert sum(refused.changed().values()) == 0, refused.changed()
    assert ufw_rules(address) == ["22/tcp ALLOW Anywhere", "22/tcp (v6) ALLOW Anywhere (v6)"]

    opened, report = run_site(tmp_path, **MANAGE)
    assert opened.rc == 0, opened.stdout[-3000:]
    assert opened.changed().get(worker), opened.changed()
    rules = ufw_rules(address)
    assert [f"Anywhere ALLOW {ip} # rlinf-ansible" for ip in peers] == [r for r in rules if "rlinf-ansible" in r]
    assert "22/tcp ALLOW Anywhere" in rules
    # Through the active firewall: every node ALIVE and each one ran the check's task (site.yml's last step).
    assert report["ok"], report["problems"]
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)

    again = run_playbook("site.yml", tmp_path, extravars=MANAGE)
    assert again.rc == 0 and sum(again.changed().values()) == 0, again.changed()

    purge = {"teardown_purge": True, "teardown_confirm": "yes"}
    purged = run_playbook("teardown.yml", tmp_path, extravars=purge, limit=worker)
    assert purged.rc == 0, purged.stdout[-3000:]
    assert ufw_rules(address) == ["22/tcp ALLOW Anywhere", "22/tcp (v6) ALLOW Anywhere (v6)"]
    assert ssh(address, "LC_ALL=C ufw status").stdout.startswith("Status: active")
