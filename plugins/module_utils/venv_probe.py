"""The script a venv's own interpreter runs to say what it holds (rlinf.cluster.node_state).

Run as ``<venv>/bin/python -c VENV_PROBE '<json list of requirements>'``; prints one JSON
object: the venv's Python and Ray versions, where its Ray's ``__init__.py`` is (found, not
imported: Ray's bundled pynvml is beside it) and, for each requirement (``name[extras]==X``),
what is missing or at another version, the dependencies of each extra included. Uses only
the standard library and the ``packaging`` that pip vendors, so it runs in a bare venv.
"""

VENV_PROBE = r"""
import importlib.util, json, platform, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

def problems(text):
    req = Requirement(text)
    version = installed(req.name)
    if version is None:
        return [text + ": not installed"]
    if not req.specifier.contains(version, prereleases=True):
        return [text + ": installed " + version]
    found = []
    for extra in sorted(req.extras):
        for dep_text in metadata.requires(req.name) or []:
            dep = Requirement(dep_text)
            if dep.marker is None or not dep.marker.evaluate({"extra": extra}):
                continue
            dep_version = installed(dep.name)
            if dep_version is None:
                found.append(text + ": " + dep.name + " (extra " + extra + ") not installed")
            elif not dep.specifier.contains(dep_version, prereleases=True):
                found.append(text + ": " + dep.name + " " + dep_version + " does not match " + str(dep.specifier))
    return found

def ray_init():
    try:
        spec = importlib.util.find_spec("ray")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None

print(json.dumps({"python": platform.python_version(), "ray": installed("ray"), "ray_init": ray_init(),
                  "unsatisfied": [line for text in json.loads(sys.argv[1]) for line in problems(text)]}))
"""
