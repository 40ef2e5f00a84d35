"""Every public name of the package has a docstring (issue 19: "docstrings
on every public name"), methods and properties of public classes included."""

import inspect

import narad


def _undocumented() -> list:
    missing = []
    for name in narad.__all__:
        obj = getattr(narad, name)
        doc = (getattr(obj, "__doc__", None) or "").strip()
        # A dataclass without a docstring gets its signature as __doc__.
        if not doc or (inspect.isclass(obj) and doc.startswith(f"{name}(")):
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        # Its own members and those of the package's classes it inherits
        # (the engine's mixins), not those of builtins such as str.
        own = {}
        for base in reversed(obj.__mro__):
            if base.__module__.startswith("narad"):
                own.update(vars(base))
        for member, value in own.items():
            if member.startswith("_"):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if callable(value) or isinstance(value, property):
                if not (getattr(value, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{member}")
    return missing


def test_every_public_name_has_a_docstring():
    assert len(narad.__all__) > 20
    assert _undocumented() == []
