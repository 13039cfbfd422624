"""The documentation check every module of the collection passes."""

from __future__ import annotations

import yaml

from ansible_collections.rlinf.cluster.plugins.doc_fragments.attributes import ModuleDocFragment


def assert_read_only_module_documented(module, argument_spec: dict) -> dict:
    """DOCUMENTATION lists exactly the argument spec's options (types, defaults), the module
    takes the read-only attributes (full check mode), EXAMPLES and RETURN parse."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert set(doc["options"]) == set(argument_spec)
    for name, option in doc["options"].items():
        assert option.get("type") == argument_spec[name].get("type"), name
        assert option.get("default") == argument_spec[name].get("default"), name
    assert "rlinf.cluster.attributes.read_only" in doc["extends_documentation_fragment"]
    assert yaml.safe_load(ModuleDocFragment.READ_ONLY)["attributes"]["check_mode"]["support"] == "full"
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    return doc
