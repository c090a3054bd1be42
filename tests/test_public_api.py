"""The public API is documented and typed: every public module lists its names in
``__all__``; every public function, class, method and property of ``poolgpu``,
``poolgpu.onnx``, ``poolgpu.arguments``, ``poolgpu.interop``, ``poolgpu.torch`` and
``poolgpu.torch.nn`` has a docstring, with a NumPy-style Parameters section where it takes
parameters, and an annotation on every parameter (the package ships ``py.typed``); and
every name of ``poolgpu``'s, ``poolgpu.onnx``'s, ``poolgpu.torch``'s and
``poolgpu.torch.nn``'s ``__all__`` appears in docs/api.md."""

import enum
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import poolgpu

ROOT = Path(__file__).resolve().parents[1]
API_MD = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")

DOCUMENTED = ["poolgpu", "poolgpu.onnx", "poolgpu.arguments", "poolgpu.interop", "poolgpu.torch", "poolgpu.torch.nn"]
IN_API_MD = ["poolgpu", "poolgpu.onnx", "poolgpu.torch", "poolgpu.torch.nn", "poolgpu.arguments", "poolgpu.interop"]
# Subpackages whose modules are the kernel layer's internals (no public names of their own).
NOT_PUBLIC = ("poolgpu.kernels",)


def _module(name):
    if name.startswith("poolgpu.torch"):
        pytest.importorskip("torch")
    return importlib.import_module(name)


def _public_modules():
    names = ["poolgpu"]
    for info in pkgutil.walk_packages(poolgpu.__path__, "poolgpu."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or info.name.startswith(NOT_PUBLIC):
            continue
        names.append(info.name)
    return names


def _own(obj) -> bool:
    """Defined in poolgpu (not a re-exported name of typing, NumPy, ...)."""
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "poolgpu"


def _parameters(callable_):
    try:
        signature = inspect.signature(callable_)
    except (TypeError, ValueError):
        return None
    return [p for name, p in signature.parameters.items() if name not in ("self", "cls")]


def _has_section(doc: str, section: str) -> bool:
    return re.search(rf"^\s*{section}\n\s*-{{3,}}$", doc, re.M) is not None


def _problems_of_callable(where: str, callable_, doc, parameters) -> list:
    problems = []
    if not doc or not doc.strip():
        return [f"{where}: no docstring"]
    if parameters and not _has_section(doc, "Parameters"):
        problems.append(f"{where}: takes {[p.name for p in parameters]} but its docstring has no Parameters section")
    for p in parameters or ():
        if p.annotation is inspect.Parameter.empty:
            problems.append(f"{where}: parameter {p.name!r} has no annotation")
    return problems


def _class_problems(where: str, cls) -> list:
    # An enum's signature is the enum machinery's; a class documents its constructor.
    init_parameters = None if issubclass(cls, enum.Enum) else _parameters(cls)
    problems = _problems_of_callable(where, cls, inspect.getdoc(cls), init_parameters)
    seen = set()
    for klass in cls.__mro__:
        if not _own(klass):
            continue
        for name, member in vars(klass).items():
            if name in seen or (name.startswith("_") and name != "__call__"):
                continue
            seen.add(name)
            attribute = inspect.getattr_static(cls, name)
            if isinstance(attribute, property):
                if not inspect.getdoc(attribute):
                    problems.append(f"{where}.{name}: property without a docstring")
                continue
            if isinstance(attribute, (staticmethod, classmethod)):
                attribute = attribute.__func__
            if inspect.isfunction(attribute):
                # inspect.getdoc finds an override's docstring on the method it overrides.
                doc = inspect.getdoc(getattr(cls, name))
                problems += _problems_of_callable(f"{where}.{name}", attribute, doc, _parameters(attribute))
    return problems


def _problems(module) -> list:
    problems = []
    for name in module.__all__:
        obj = getattr(module, name)
        where = f"{module.__name__}.{name}"
        if inspect.isclass(obj) and _own(obj):
            problems += _class_problems(where, obj)
        elif inspect.isfunction(obj) and _own(obj):
            problems += _problems_of_callable(where, obj, inspect.getdoc(obj), _parameters(obj))
    return problems


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_module_lists_its_public_names(name):
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what the module lacks: {missing}"
    unlisted = [
        n for n, obj in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == name and n not in module.__all__
    ]
    assert not unlisted, f"{name} defines public names its __all__ leaves out: {unlisted}"


def test_the_package_exports_every_name_api_md_documents_as_pg_x():
    documented = set(re.findall(r"(?<![\w.])pg\.([A-Za-z_]\w*)", API_MD))
    assert {"Tuning", "max_pool", "DataType"} <= documented
    missing = sorted(n for n in documented if n not in poolgpu.__all__)
    assert not missing, f"docs/api.md documents pg.X for names poolgpu does not export: {missing}"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_callables_are_documented_and_annotated(name):
    module = _module(name)
    problems = _problems(module)
    assert not problems, "\n".join(problems)


def test_the_check_finds_what_is_missing():
    def bare(x, y=1):
        return x

    def described(x: int) -> int:
        """A summary without a Parameters section."""
        return x

    class Undocumented:
        @property
        def size(self) -> int:
            return 1

        def method(self, value: int) -> int:
            """A summary.

            Parameters
            ----------
            value : int
            """
            return value

    assert _problems_of_callable("bare", bare, inspect.getdoc(bare), _parameters(bare)) == ["bare: no docstring"]
    bare.__doc__ = "Summary.\n\nParameters\n----------\nx, y : int\n"
    assert _problems_of_callable("bare", bare, inspect.getdoc(bare), _parameters(bare)) == [
        "bare: parameter 'x' has no annotation", "bare: parameter 'y' has no annotation"]
    assert _problems_of_callable("described", described, inspect.getdoc(described), _parameters(described)) == [
        "described: takes ['x'] but its docstring has no Parameters section"]
    Undocumented.__module__ = "poolgpu.example"
    assert _class_problems("Undocumented", Undocumented) == [
        "Undocumented: no docstring", "Undocumented.size: property without a docstring"]


@pytest.mark.parametrize("name", IN_API_MD)
def test_every_public_name_is_in_api_md(name):
    module = _module(name)
    missing = [n for n in module.__all__ if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", API_MD)]
    assert not missing, f"docs/api.md does not mention {name}'s {missing}"
