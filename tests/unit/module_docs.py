"""The documentation check every module of the collection passes."""

from __future__ import annotations

import yaml


def assert_read_only_module_documented(module, argument_spec: dict) -> dict:
    """DOCUMENTATION lists exactly the argument spec's options (types, defaults), extends the
    read-only attributes fragment, EXAMPLES and RETURN parse. What ansible-doc shows once the
    fragment is merged: tests/controller/test_module_docs.py; that the modules run the same in
    check mode: each module's own check-mode test."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert set(doc["options"]) == set(argument_spec)
    for name, option in doc["options"].items():
        assert option.get("type") == argument_spec[name].get("type"), name
        assert option.get("default") == argument_spec[name].get("default"), name
    assert "rlinf.cluster.attributes.read_only" in doc["extends_documentation_fragment"]
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    return doc
