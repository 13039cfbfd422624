"""The documentation check every module of the collection passes."""

from __future__ import annotations

import importlib

import yaml


def with_fragments(doc: dict) -> dict:
    """The module's DOCUMENTATION with the options of the collection's doc fragments it extends."""
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or []:
        _, _, rest = fragment.partition("rlinf.cluster.")
        name, _, section = rest.partition(".")
        module = importlib.import_module(f"ansible_collections.rlinf.cluster.plugins.doc_fragments.{name}")
        text = getattr(module.ModuleDocFragment, (section or "DOCUMENTATION").upper())
        options.update(yaml.safe_load(text).get("options") or {})
    return {**doc, "options": options}


def assert_options_match(options: dict, argument_spec: dict, where: str = "") -> None:
    assert set(options) == set(argument_spec), where
    for name, option in options.items():
        spec = argument_spec[name]
        assert option.get("type") == spec.get("type"), where + name
        assert option.get("default") == spec.get("default"), where + name
        if "suboptions" in option or "options" in spec:
            assert_options_match(option.get("suboptions") or {}, spec.get("options") or {}, f"{where}{name}.")


def assert_read_only_module_documented(module, argument_spec: dict) -> dict:
    """DOCUMENTATION (with its fragments) lists exactly the argument spec's options, suboptions
    included, with their types and defaults; the module declares full check-mode support through
    the read-only fragment; EXAMPLES and RETURN parse."""
    doc = with_fragments(yaml.safe_load(module.DOCUMENTATION))
    assert_options_match(doc["options"], argument_spec)
    assert "rlinf.cluster.attributes.read_only" in doc["extends_documentation_fragment"]
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    return doc
