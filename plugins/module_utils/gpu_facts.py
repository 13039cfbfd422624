"""One node's NVIDIA GPU facts, from NVML or from ``nvidia-smi``, as the cluster report keeps them.

Runs on the nodes (the rlinf.cluster.gpu_facts module): Python 3.9+, no Ansible imports. The
module hands in what it read (an NVML binding, the output of ``nvidia-smi``); everything here
is parsing, so the unit tests feed it recorded values.

RLinf counts a node's NVIDIA GPUs with Ray's ``NvidiaGPUAcceleratorManager.
get_current_node_num_accelerators`` (Ray's bundled pynvml: ``nvmlInit`` then
``nvmlDeviceGetCount``; 0 when ``nvmlInit`` fails), whatever ``CUDA_VISIBLE_DEVICES`` says.
``nvml_count`` is that number; ``count`` is the GPUs this node has as far as anything could
tell (NVML, else ``nvidia-smi``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys

# What nvidia-smi is asked for; parse_nvidia_smi also reads the first two fields alone.
NVIDIA_SMI_QUERY = ["--query-gpu=name,driver_version,uuid", "--format=csv,noheader"]
# nvidia-smi's answers that mean "no GPU here" rather than a fault (exit 6 and 9).
_SMI_NONE = ("no devices were found", "couldn't communicate with the nvidia driver", "no nvidia gpu")


def _text(value) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value if value is not None else "").strip()


def cuda_version(value) -> str | None:
    """NVML's CUDA driver version integer as CUDA writes it: 12020 -> '12.2', 11080 -> '11.8'."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    if number <= 0:
        return None
    return f"{number // 1000}.{(number % 1000) // 10}"


def read_nvml(nvml) -> dict:
    """Read the raw values through an NVML binding (Ray's pynvml): the calls RLinf's count makes,
    then the driver, the CUDA driver version and each device's name and UUID.

    Returns ``{"init_error": str}`` when ``nvmlInit`` fails (Ray counts 0 then), ``{"error": str}``
    when a later call fails, else ``{"count", "driver", "cuda", "names", "uuids"}``.
    """
    try:
        nvml.nvmlInit()
    except Exception as err:  # NVMLError: no driver, no libnvidia-ml.so.1, driver/library mismatch
        return {"init_error": _text(err) or type(err).__name__}
    try:
        count = int(nvml.nvmlDeviceGetCount())
        raw = {"count": count, "driver": nvml.nvmlSystemGetDriverVersion(), "names": [], "uuids": []}
        try:
            raw["cuda"] = nvml.nvmlSystemGetCudaDriverVersion()
        except Exception:
            raw["cuda"] = None  # older drivers; the driver version still says which one
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            raw["names"].append(nvml.nvmlDeviceGetName(handle))
            try:
                raw["uuids"].append(nvml.nvmlDeviceGetUUID(handle))
            except Exception:
                raw["uuids"].append(None)
        return raw
    except Exception as err:
        return {"error": _text(err) or type(err).__name__}
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _models(names) -> dict:
    models: dict[str, int] = {}
    for name in names:
        models[name] = models.get(name, 0) + 1
    return models


def from_nvml(raw) -> dict:
    """The facts from what read_nvml returned (successfully)."""
    names = [_text(n) for n in raw.get("names") or []]
    count = int(raw.get("count") or 0)
    return {
        "count": count,
        "nvml_count": count,
        "driver_version": (_text(raw.get("driver")) or None) if count else None,
        "cuda_driver_version": cuda_version(raw.get("cuda")) if count else None,
        "models": _models(names),
        "uuids": [u for u in (_text(x) for x in raw.get("uuids") or []) if u],
        "source": "nvml" if count else None,
    }


def parse_nvidia_smi(rc: int, stdout: str, stderr: str = "") -> dict:
    """``nvidia-smi --query-gpu=name,driver_version[,uuid] --format=csv,noheader``.

    Returns ``{"names", "drivers", "uuids"}``, or ``{"none": reason}`` when nvidia-smi says this
    machine has no usable GPU, or ``{"error": text}`` for output it cannot read.
    """
    text = f"{stdout or ''}\n{stderr or ''}".strip()
    if any(marker in text.lower() for marker in _SMI_NONE):
        return {"none": text.splitlines()[0].strip()}
    if rc != 0:
        return {"error": (text.splitlines()[-1].strip() if text else f"exit status {rc}")[:300]}
    names, drivers, uuids = [], [], []
    for line in (stdout or "").splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 2 or not fields[0] or not fields[1]:
            return {"error": f"unexpected nvidia-smi line {line.strip()!r}"}
        # A name with a comma in it: the driver (and the UUID) are the last fields.
        tail = 2 if len(fields) >= 3 and fields[-1].upper().startswith(("GPU-", "MIG-")) else 1
        names.append(", ".join(fields[: len(fields) - tail]))
        drivers.append(fields[len(fields) - tail])
        uuids.append(fields[-1] if tail == 2 else None)
    return {"names": names, "drivers": drivers, "uuids": uuids}


def facts(nvml_raw: dict | None, smi: dict | None) -> dict:
    """The node's facts: NVML's when it answered, else nvidia-smi's, else none.

    ``nvml_raw`` is read_nvml's result (None: Ray's pynvml was not found), ``smi`` is
    parse_nvidia_smi's (None: not run, or not installed). A node without GPUs or driver gets
    count 0 and no driver: that is an answer, not an error. ``nvml_error`` says why NVML did
    not answer; ``error`` is set only when nothing could say how many GPUs there are.
    """
    nvml_raw = nvml_raw if nvml_raw is not None else {"missing": True}
    if "count" in nvml_raw and (nvml_raw["count"] > 0 or not smi or not smi.get("names")):
        return from_nvml(nvml_raw)
    out = {
        "count": 0,
        "nvml_count": 0 if "init_error" in nvml_raw else None,
        "driver_version": None,
        "cuda_driver_version": None,
        "models": {},
        "uuids": [],
        "source": None,
    }
    if "count" in nvml_raw:
        out["nvml_count"] = 0
    elif "init_error" in nvml_raw:
        out["nvml_error"] = nvml_raw["init_error"]
    elif "error" in nvml_raw:
        out["nvml_error"] = nvml_raw["error"]
    else:
        out["nvml_error"] = "Ray's bundled pynvml (ray/_private/thirdparty/pynvml) was not found"
    smi = smi or {}
    if smi.get("names"):
        drivers = sorted(set(smi["drivers"]))
        out.update(
            count=len(smi["names"]),
            driver_version=drivers[0] if len(drivers) == 1 else ",".join(drivers),
            models=_models(smi["names"]),
            uuids=[u for u in smi["uuids"] if u],
            source="nvidia-smi",
        )
    elif smi.get("error") and "count" not in nvml_raw and "init_error" not in nvml_raw:
        out["error"] = f"NVML: {out['nvml_error']}; nvidia-smi: {smi['error']}"
    return out


def ray_pynvml_path(ray_init: str | None) -> str | None:
    """Ray's bundled pynvml beside ``ray/__init__.py`` (``ray_init``), if that Ray has it."""
    if not ray_init:
        return None
    path = os.path.join(os.path.dirname(ray_init), "_private", "thirdparty", "pynvml", "pynvml.py")
    return path if os.path.isfile(path) else None


def load_pynvml(path: str):
    """Ray's pynvml loaded from its file: `import ray` would cost seconds on every node. None when
    it does not load here."""
    file_spec = importlib.util.spec_from_file_location("rlinf_ray_pynvml", path)
    if file_spec is None or file_spec.loader is None:
        return None
    nvml = importlib.util.module_from_spec(file_spec)
    # pynvml builds its error classes from sys.modules[__name__] while it loads.
    sys.modules[file_spec.name] = nvml
    try:
        file_spec.loader.exec_module(nvml)
    except Exception:
        sys.modules.pop(file_spec.name, None)
        return None
    return nvml


def run_nvidia_smi(module, command):
    """parse_nvidia_smi's result, or None when nvidia-smi is not installed (or not asked for).
    ``module`` is the AnsibleModule that runs it."""
    if not command:
        return None
    binary = command if os.path.isabs(command) else module.get_bin_path(command)
    if not binary or not os.access(binary, os.X_OK):
        return None
    try:
        rc, out, err = module.run_command([binary, *NVIDIA_SMI_QUERY])
    except Exception as err:
        return {"error": f"{binary} could not run ({type(err).__name__}: {err})"}
    return parse_nvidia_smi(rc, out, err)


def read_node(nvml, module, nvidia_smi: str) -> dict:
    """The node's facts through ``nvml`` (None: Ray's pynvml was not found), asking nvidia-smi only
    when NVML counted nothing."""
    raw = read_nvml(nvml) if nvml is not None else None
    smi = run_nvidia_smi(module, nvidia_smi) if raw is None or not raw.get("count") else None
    return facts(raw, smi)
