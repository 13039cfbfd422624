"""gpu_facts: NVML (Ray's pynvml) and nvidia-smi readings, parsed from recorded values."""

from __future__ import annotations

import sys

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson

from ansible_collections.rlinf.cluster.plugins.module_utils import gpu_facts as gf
from ansible_collections.rlinf.cluster.plugins.modules import gpu_facts as mod

A100 = "NVIDIA A100-SXM4-80GB"
UUIDS = [f"GPU-5e9f3c2a-7b1d-4c3e-9f0a-1b2c3d4e5f6{i}" for i in range(8)]
# nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader on an 8x A100 machine.
SMI_8 = "".join(f"{A100}, 535.129.03, {u}\n" for u in UUIDS)
SMI_NO_DEVICES = "No devices were found\n"
SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
    "latest NVIDIA driver is installed and running.\n\n"
)


class NVMLError(Exception):
    """pynvml's error: str() is NVML's message."""


class FakeNVML:
    """The pynvml calls read_nvml makes, answering with values recorded on real machines."""

    def __init__(self, names=(), driver="535.129.03", cuda=12020, init_error=None, fail=None, as_bytes=False):
        self.names, self.driver, self.cuda = list(names), driver, cuda
        self.init_error, self.fail, self.as_bytes = init_error, fail, as_bytes
        self.calls = []

    def _out(self, value):
        return value.encode() if self.as_bytes and isinstance(value, str) else value

    def _call(self, name):
        self.calls.append(name)
        if self.fail == name:
            raise NVMLError("Unknown Error")

    def nvmlInit(self):
        self.calls.append("nvmlInit")
        if self.init_error:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self):
        self._call("nvmlShutdown")

    def nvmlDeviceGetCount(self):
        self._call("nvmlDeviceGetCount")
        return len(self.names)

    def nvmlSystemGetDriverVersion(self):
        self._call("nvmlSystemGetDriverVersion")
        return self._out(self.driver)

    def nvmlSystemGetCudaDriverVersion(self):
        self._call("nvmlSystemGetCudaDriverVersion")
        return self.cuda

    def nvmlDeviceGetHandleByIndex(self, index):
        self._call("nvmlDeviceGetHandleByIndex")
        return index

    def nvmlDeviceGetName(self, handle):
        self._call("nvmlDeviceGetName")
        return self._out(self.names[handle])

    def nvmlDeviceGetUUID(self, handle):
        self._call("nvmlDeviceGetUUID")
        return self._out(UUIDS[handle])


@pytest.mark.parametrize(
    ("value", "text"), [(12020, "12.2"), (11080, "11.8"), (12040, "12.4"), (0, None), (None, None)]
)
def test_cuda_driver_version_is_written_as_cuda_writes_it(value, text):
    assert gf.cuda_version(value) == text


@pytest.mark.parametrize("as_bytes", [False, True])
def test_nvml_reads_driver_cuda_models_and_count(as_bytes):
    nvml = FakeNVML([A100] * 8, as_bytes=as_bytes)
    facts = gf.facts(gf.read_nvml(nvml), None)
    assert facts == {
        "count": 8,
        "nvml_count": 8,
        "driver_version": "535.129.03",
        "cuda_driver_version": "12.2",
        "models": {A100: 8},
        "uuids": UUIDS,
        "source": "nvml",
    }
    # NVML is shut down again, as Ray's own count does.
    assert nvml.calls[0] == "nvmlInit" and nvml.calls[-1] == "nvmlShutdown"


def test_mixed_models_are_counted_per_model():
    facts = gf.facts(gf.read_nvml(FakeNVML(["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", A100])), None)
    assert facts["models"] == {"NVIDIA H100 80GB HBM3": 2, A100: 1} and facts["count"] == 3


def test_no_driver_is_zero_gpus_and_no_driver_without_error():
    # A machine without the NVIDIA driver: pynvml cannot load libnvidia-ml.so.1; no nvidia-smi either.
    facts = gf.facts(gf.read_nvml(FakeNVML(init_error="NVML Shared Library Not Found")), None)
    assert facts["count"] == 0 and facts["nvml_count"] == 0
    assert facts["driver_version"] is None and facts["cuda_driver_version"] is None
    assert facts["models"] == {} and facts["source"] is None
    assert "error" not in facts and facts["nvml_error"] == "NVML Shared Library Not Found"


def test_a_driver_without_gpus_reports_none():
    facts = gf.facts(gf.read_nvml(FakeNVML([])), gf.parse_nvidia_smi(6, SMI_NO_DEVICES))
    assert facts["count"] == 0 and facts["nvml_count"] == 0 and facts["driver_version"] is None
    assert "error" not in facts


def test_nvidia_smi_lines_with_and_without_uuid():
    assert gf.parse_nvidia_smi(0, SMI_8) == {"names": [A100] * 8, "drivers": ["535.129.03"] * 8, "uuids": UUIDS}
    two = gf.parse_nvidia_smi(0, f"{A100}, 535.129.03\nNVIDIA GeForce RTX 4090, 535.129.03\n")
    assert two == {"names": [A100, "NVIDIA GeForce RTX 4090"], "drivers": ["535.129.03"] * 2, "uuids": [None, None]}


def test_nvidia_smi_saying_no_gpu_is_an_answer_and_garbage_is_an_error():
    assert gf.parse_nvidia_smi(6, SMI_NO_DEVICES) == {"none": "No devices were found"}
    assert "none" in gf.parse_nvidia_smi(9, SMI_NO_DRIVER)
    assert gf.parse_nvidia_smi(0, 'Field "bogus" is not a valid field to query.\n')["error"].startswith(
        "unexpected nvidia-smi line"
    )
    assert gf.parse_nvidia_smi(127, "", "nvidia-smi: error while loading shared libraries")["error"]


def test_nvidia_smi_is_the_fallback_when_nvml_cannot_start():
    raw = gf.read_nvml(FakeNVML(init_error="Driver/library version mismatch"))
    facts = gf.facts(raw, gf.parse_nvidia_smi(0, SMI_8))
    assert facts["source"] == "nvidia-smi" and facts["count"] == 8 and facts["driver_version"] == "535.129.03"
    # What Ray (and so RLinf) counts when nvmlInit fails: 0.
    assert facts["nvml_count"] == 0 and facts["nvml_error"] == "Driver/library version mismatch"
    assert facts["cuda_driver_version"] is None and facts["uuids"] == UUIDS


def test_without_rays_pynvml_nvidia_smi_answers_and_rlinfs_count_is_unknown():
    facts = gf.facts(None, gf.parse_nvidia_smi(0, SMI_8))
    assert facts["count"] == 8 and facts["nvml_count"] is None and "pynvml" in facts["nvml_error"]
    nothing = gf.facts(None, None)
    assert nothing["count"] == 0 and "error" not in nothing


def test_nvml_failing_after_init_and_nvidia_smi_failing_is_an_error():
    raw = gf.read_nvml(FakeNVML([A100], fail="nvmlSystemGetDriverVersion"))
    assert raw == {"error": "Unknown Error"}
    smi_error = "Unable to determine the device handle for GPU0000:07:00.0"
    facts = gf.facts(raw, gf.parse_nvidia_smi(255, smi_error + "\n"))
    assert facts["nvml_count"] is None and facts["count"] == 0
    assert facts["error"] == f"NVML: Unknown Error; nvidia-smi: {smi_error}"


def test_old_drivers_without_the_cuda_call_still_report():
    nvml = FakeNVML([A100], fail="nvmlSystemGetCudaDriverVersion")
    facts = gf.facts(gf.read_nvml(nvml), None)
    assert facts["count"] == 1 and facts["driver_version"] == "535.129.03" and facts["cuda_driver_version"] is None


# The module --------------------------------------------------------------------------------


def test_module_documented_and_read_only():
    with patch_module_args({}):
        module = mod.build_module()
    assert module.supports_check_mode
    assert_read_only_module_documented(mod, module.argument_spec)


def run(monkeypatch, nvml, smi=None, args=None):
    monkeypatch.setattr(mod, "load_ray_pynvml", lambda: nvml)
    ran = []

    def run_command(self, argv, **kwargs):
        ran.append(argv)
        return smi if smi is not None else (127, "", "not found")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: sys.executable)
    with pytest.raises(ExitJson) as exc, patch_module_args(args or {"_ansible_check_mode": True}):
        mod.main()
    return exc.value.args[0], ran


def test_module_reads_nvml_and_skips_nvidia_smi_when_nvml_answers(monkeypatch, module_exits):
    result, ran = run(monkeypatch, FakeNVML([A100] * 8))
    assert result["changed"] is False and result["gpus"]["count"] == 8 and result["gpus"]["source"] == "nvml"
    assert ran == []


def test_module_falls_back_to_the_nvidia_smi_query(monkeypatch, module_exits):
    result, ran = run(monkeypatch, FakeNVML(init_error="Driver Not Loaded"), smi=(0, SMI_8, ""))
    assert ran == [[sys.executable, *gf.NVIDIA_SMI_QUERY]]
    assert result["gpus"]["source"] == "nvidia-smi" and result["gpus"]["nvml_count"] == 0


def test_module_on_a_node_without_gpus_exits_with_none(monkeypatch, module_exits):
    result, _ = run(monkeypatch, None, args={"nvidia_smi": ""})
    assert result["gpus"]["count"] == 0 and result["gpus"]["driver_version"] is None and "error" not in result["gpus"]


def test_rays_pynvml_is_loaded_from_its_file_without_importing_ray(tmp_path, monkeypatch):
    # A stand-in for ray/_private/thirdparty/pynvml/pynvml.py that, like the real one, reads
    # sys.modules[__name__] while it loads; ray/__init__.py would fail if it were imported.
    package = tmp_path / "ray"
    (package / "_private" / "thirdparty" / "pynvml").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('ray must not be imported')\n")
    (package / "_private" / "thirdparty" / "pynvml" / "pynvml.py").write_text(
        "import sys\nthis_module = sys.modules[__name__]\n"
        "def nvmlInit():\n    raise OSError('NVML Shared Library Not Found')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    nvml = mod.load_ray_pynvml()
    assert nvml is not None and "ray" not in sys.modules
    assert gf.read_nvml(nvml) == {"init_error": "NVML Shared Library Not Found"}


def test_no_ray_means_no_pynvml(tmp_path, monkeypatch):
    monkeypatch.setattr(mod.importlib.util, "find_spec", lambda name: None)
    assert mod.load_ray_pynvml() is None
