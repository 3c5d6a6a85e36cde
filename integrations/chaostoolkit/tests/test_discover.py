"""``chaos discover``: every exported action and probe is found, documented, with its arguments."""

import inspect

import chaostolerant
from chaostolerant import discover


def test_discover_lists_every_exported_function_with_its_documentation():
    discovery = discover(discover_system=False)
    assert discovery["extension"]["name"] == "chaostoolkit-tolerant"
    found = {(a["mod"], a["name"]): a for a in discovery["activities"]}
    expected = set()
    for module_name in chaostolerant.ACTION_MODULES + chaostolerant.PROBE_MODULES:
        module = __import__(module_name, fromlist=["__all__"])
        for name in module.__all__:
            expected.add((module_name, name))
            assert inspect.getdoc(getattr(module, name)), f"{module_name}.{name} has no docstring"
    assert set(found) == expected
    kinds = {a["type"] for a in found.values()}
    assert kinds == {"action", "probe"}
    put = found[("chaostolerant.fault.actions", "put_fault")]
    assert [a["name"] for a in put["arguments"]][:4] == ["kind", "rate", "status", "delay"]
    assert found[("chaostolerant.breaker.probes", "breaker_state")]["return_type"] == "string"
