#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Read a node's NVIDIA GPUs the way RLinf counts them (NVML), with the driver and CUDA versions
description:
  - Reads, without changing anything, the NVIDIA driver version, the CUDA driver version and each GPU's
    model and UUID through NVML, with the C(pynvml) bundled with Ray (C(ray/_private/thirdparty/pynvml),
    loaded from the Ray installed for this interpreter without importing Ray itself).
  - RV(gpus.nvml_count) is the number RLinf places workers by (RLinf's C(NvidiaGPUManager.get_num_devices)
    is Ray's NVML device count, every GPU this machine or container has, whatever C(CUDA_VISIBLE_DEVICES)
    says; 0 when NVML cannot start).
  - When NVML does not answer, falls back to C(nvidia-smi --query-gpu=name,driver_version,uuid
    --format=csv,noheader) (O(nvidia_smi)).
  - A node without GPUs or without an NVIDIA driver reports RV(gpus.count) 0 and no driver; that is a
    result, not a failure. The module never fails on what it reads.
  - Run it with the node venv's Python (where Ray is installed), as RLinf's own count runs there.
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  nvidia_smi:
    description:
      - The C(nvidia-smi) to fall back to (a command on PATH or an absolute path). Empty never runs it.
    type: str
    default: nvidia-smi
notes:
  - MIG instances are not listed; NVML's device count (and so RLinf's) counts the physical GPUs.
"""

EXAMPLES = r"""
- name: Read this node's GPUs
  rlinf.cluster.gpu_facts:
  vars:
    ansible_python_interpreter: /opt/rlinf/venv/bin/python
  register: ray_check_gpus
"""

RETURN = r"""
gpus:
  description: This node's NVIDIA GPUs.
  returned: always
  type: dict
  contains:
    count:
      description: GPUs found (by NVML, else by C(nvidia-smi)); 0 without GPUs or driver.
      type: int
    nvml_count:
      description:
        - What Ray's NVML count (and so RLinf) sees here; 0 when NVML cannot start, null when Ray's
          pynvml was not found or NVML failed after starting.
      type: int
    driver_version:
      description: NVIDIA driver version, for example C(535.129.03); null without GPUs.
      type: str
    cuda_driver_version:
      description: Highest CUDA version the driver supports, for example C(12.2); null without NVML.
      type: str
    models:
      description: "GPU model name -> how many, for example C({\"NVIDIA A100-SXM4-80GB\": 8})."
      type: dict
    uuids:
      description: Each GPU's UUID (C(GPU-...)), as far as they could be read.
      type: list
      elements: str
    source:
      description: C(nvml), C(nvidia-smi), or null when no GPU was found.
      type: str
    nvml_error:
      description: Why NVML did not answer (for example C(NVML Shared Library Not Found) on a node without driver).
      type: str
      returned: when NVML did not answer
    error:
      description: Set only when neither NVML nor C(nvidia-smi) could say how many GPUs there are.
      type: str
      returned: when nothing could be read
  sample:
    count: 8
    nvml_count: 8
    driver_version: 535.129.03
    cuda_driver_version: "12.2"
    models: {"NVIDIA A100-SXM4-80GB": 8}
    uuids: ["GPU-5e9f3c2a-..."]
    source: nvml
"""

import importlib.util  # noqa: E402 (imports follow the docs, as in every Ansible module)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.gpu_facts import (  # noqa: E402
    load_pynvml,
    ray_pynvml_path,
    read_node,
)


def load_ray_pynvml():
    """Ray's bundled pynvml for this interpreter's Ray, without importing Ray; None when this
    interpreter has no Ray (or Ray without it)."""
    try:
        spec = importlib.util.find_spec("ray")
    except (ImportError, ValueError):
        return None
    path = ray_pynvml_path(spec.origin if spec is not None else None)
    return load_pynvml(path) if path else None


def build_module():
    return AnsibleModule(
        argument_spec=dict(nvidia_smi=dict(type="str", default="nvidia-smi")),
        supports_check_mode=True,
    )


def main():
    module = build_module()
    module.exit_json(changed=False, gpus=read_node(load_ray_pynvml(), module, module.params["nvidia_smi"]))


if __name__ == "__main__":
    main()
