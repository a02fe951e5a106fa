"""The type stub `_stratavec.pyi` declares what the compiled module
exports, with the parameter names the module takes: a function added or a
parameter renamed in Rust without the stub fails here."""

import ast
import inspect
import pathlib

import stratavec
from stratavec import _stratavec

STUB = pathlib.Path(stratavec.__file__).parent / "_stratavec.pyi"


def _names(fn: ast.FunctionDef) -> list:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]


def _stub():
    funcs, classes = {}, {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = {
                n.name: n
                for n in node.body
                if isinstance(n, ast.FunctionDef)
                and not any(getattr(d, "id", None) == "property" for d in n.decorator_list)
            }
    return funcs, classes


def _runtime(obj) -> list:
    return [p for p in inspect.signature(obj).parameters if p not in ("self", "$self")]


def test_every_export_is_in_the_stub_with_its_parameters():
    funcs, classes = _stub()
    exported = [n for n in dir(_stratavec) if not n.startswith("_")]
    missing = [n for n in exported if n not in funcs and n not in classes]
    assert not missing, f"{STUB.name} does not declare {missing}"
    for name, node in funcs.items():
        assert _runtime(getattr(_stratavec, name)) == _names(node), name
    for cls, methods in classes.items():
        for name, node in methods.items():
            if name.startswith("__"):
                continue
            got = _runtime(getattr(getattr(_stratavec, cls), name))
            assert got == _names(node), f"{cls}.{name}: module {got}, stub {_names(node)}"
