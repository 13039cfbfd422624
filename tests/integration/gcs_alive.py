"""Run on the head with the node venv's Python and the nodes' environment (piped over SSH).

Prints JSON: node ID (hex) -> IP of every node the GCS at argv[1] lists as ALIVE, asked with the RPC
timeout argv[2] (seconds); with argv[3] "cpus", node ID -> [IP, the node's total CPU resource]. One RPC
and no driver: no job starts and no Ray worker process is spawned on any node.
"""

import json
import os
import sys
import types
from pathlib import Path

import grpc

# Ray's generated messages and stub, without ray/__init__.py: it loads the raylet library, 0.4 CPU s
# of the head's per call against 0.1 for this, and the suite asks before every test (lab_cluster).
site_packages = Path(grpc.__file__).parents[1]
for package in ("ray", "ray.core", "ray.core.generated"):
    module = types.ModuleType(package)
    module.__path__ = [str(site_packages.joinpath(*package.split(".")))]
    sys.modules[package] = module
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc  # noqa: E402

# The token the nodes' environment names (RAY_AUTH_MODE=token), sent as Ray's own clients send it.
token = os.environ.get("RAY_AUTH_TOKEN", "")
if not token and os.environ.get("RAY_AUTH_TOKEN_PATH"):
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"]).read_text().strip()
with grpc.insecure_channel(sys.argv[1]) as channel:
    # wait_for_ready: a GCS that is restarting gets the whole timeout, as Ray's GcsClient gives it.
    reply = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetAllNodeInfo(
        gcs_service_pb2.GetAllNodeInfoRequest(),
        timeout=float(sys.argv[2]),
        metadata=[("authorization", f"Bearer {token}")] if token else None,
        wait_for_ready=True,
    )
# GcsNodeInfo.state: ALIVE is 0.
alive = [node for node in reply.node_info_list if node.state == 0]
if sys.argv[3:] == ["cpus"]:
    print(json.dumps({n.node_id.hex(): [n.node_manager_address, n.resources_total.get("CPU", 0)] for n in alive}))
else:
    print(json.dumps({node.node_id.hex(): node.node_manager_address for node in alive}))
