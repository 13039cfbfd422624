"""remove-node.yml's plan (plan/purposes.py removal_plan): the ranks above the removed one move
down, and every machine keeps exactly one owner of its firewall."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.purposes import removal_plan

MACHINES = {"h": "m0", "w1": "m1", "w2": "m2", "w3": "m2"}


def cluster():
    order = list(MACHINES)
    nodes = {name: {"rank": rank, "machine": MACHINES[name]} for rank, name in enumerate(order)}
    topo = [
        {"name": name, "rank": rank, "explicit_rank": 3 if name == "w3" else None} for rank, name in enumerate(order)
    ]
    return order, nodes, topo


def test_the_ranks_above_the_removed_one_move_down_and_the_machines_first_node_owns_it():
    removal = removal_plan("w1", *cluster())
    assert removal["order"] == ["h", "w2", "w3"]
    assert {n: removal["nodes"][n]["rank"] for n in removal["order"]} == {"h": 0, "w2": 1, "w3": 2}
    assert removal["renumbered"] == [{"name": "w2", "from": 2, "to": 1}, {"name": "w3", "from": 3, "to": 2}]
    assert removal["explicit"] == ["w3"]
    # m2 holds two Ray nodes: the lower rank applies its firewall, the other does not.
    assert {n: removal["nodes"][n]["machine_owner"] for n in removal["order"]} == {"h": True, "w2": True, "w3": False}
    assert [t["rank"] for t in removal["topo"]] == [0, 1, 2]


def test_the_first_node_of_a_machine_leaving_hands_its_ownership_to_the_next():
    removal = removal_plan("w2", *cluster())
    assert {n: removal["nodes"][n]["machine_owner"] for n in removal["order"]} == {"h": True, "w1": True, "w3": True}
    assert removal["renumbered"] == [{"name": "w3", "from": 3, "to": 2}]
