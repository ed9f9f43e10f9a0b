# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Every public name of graphkiln (its __all__) and every public method or property of the
classes it exports (Program first) has a docstring of its own."""

import inspect

import graphkiln


def own_doc(obj) -> str:
    """The object's own docstring (a class's, not one inherited from its base)."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return (doc or "").strip()


def public_members(cls):
    """(name, function or property) defined by graphkiln in `cls` or its bases."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        for klass in cls.__mro__:
            if name in klass.__dict__:
                if klass.__module__.startswith("graphkiln"):
                    member = klass.__dict__[name]
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if isinstance(member, property) or inspect.isfunction(member):
                        yield f"{cls.__name__}.{name}", member
                break


def test_every_public_name_and_method_has_a_docstring():
    missing = []
    for name in graphkiln.__all__:
        if name == "__version__":
            continue
        obj = getattr(graphkiln, name)
        if not own_doc(obj):
            missing.append(name)
        if isinstance(obj, type):
            missing += [label for label, member in public_members(obj) if not own_doc(member)]
    assert missing == []


def test_program_methods_are_walked():
    walked = {label for label, _ in public_members(graphkiln.Program)}
    assert {
        "Program.compile",
        "Program.run",
        "Program.is_compiled",
        "Program.get_parameter_names",
        "Program.get_parameter_shapes",
        "Program.get_output_names",
        "Program.get_output_shapes",
        "Program.print",
        "Program.stats",
    } <= walked
