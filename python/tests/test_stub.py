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
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]
    return names + [a.kwarg.arg] if a.kwarg else names


def _stub():
    funcs, classes = {}, {}
    typed = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef) and any(
            getattr(b, "id", None) == "TypedDict" for b in node.bases
        ):
            typed[node.name] = {
                n.target.id: ast.unparse(n.annotation)
                for n in node.body
                if isinstance(n, ast.AnnAssign)
            }
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = {
                n.name: n
                for n in node.body
                if isinstance(n, ast.FunctionDef)
                and not any(getattr(d, "id", None) == "property" for d in n.decorator_list)
            }
    return funcs, classes, typed


def _runtime(obj) -> list:
    return [p for p in inspect.signature(obj).parameters if p not in ("self", "$self")]


def test_every_export_is_in_the_stub_with_its_parameters():
    funcs, classes, _ = _stub()
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


def test_the_keyword_types_are_the_engines_parameters():
    """`BuildParams` and `SearchParams` in the stub declare exactly the
    keywords the engine takes (its flags, `_stratavec.parameters`), in its
    order and with its kinds of value: a parameter added in Rust without its
    stub line fails here."""
    _, _, typed = _stub()
    for which, name in (("build", "BuildParams"), ("search", "SearchParams")):
        engine = [(p["keyword"], p["kind"]) for p in _stratavec.parameters(which)]
        assert list(typed[name].items()) == engine, name


def test_the_docstrings_document_every_parameter():
    for which, fn in (("build", stratavec.build_index), ("search", stratavec.Index.search)):
        doc = fn.__doc__
        assert "{" + which + "_params}" not in doc
        for p in _stratavec.parameters(which):
            assert f"{p['keyword']} : " in doc, (which, p["keyword"])


def test_an_unknown_or_mistyped_keyword_names_itself_and_the_accepted_ones(tmp_path):
    import numpy as np
    import pytest

    x = np.random.default_rng(0).random((64, 8), dtype=np.float32)
    unknown = r"keyword graph_degre: expected one of .*graph_degree.*found graph_degre=8"
    with pytest.raises(ValueError, match=unknown):
        stratavec.build_index(x, tmp_path / "i", graph_degre=8)
    with pytest.raises(ValueError, match=r"^graph_degree: expected a non-negative integer"):
        stratavec.build_index(x, tmp_path / "i", graph_degree=8.5)
    with pytest.raises(TypeError, match=r"^graph_degree: expected int, found list"):
        stratavec.build_index(x, tmp_path / "i", graph_degree=[8])
    with pytest.raises(ValueError, match=r"^metric: expected .*l2, ip.*found hamming"):
        stratavec.build_index(x, tmp_path / "i", metric="hamming")


def test_numpy_scalars_are_keyword_values(tmp_path):
    import numpy as np

    x = np.random.default_rng(1).random((200, 8), dtype=np.float32)
    stratavec.build_index(
        x, tmp_path / "i", graph_degree=np.int64(8), alpha=np.float32(1.5), pq_bytes=4, threads=1
    )
    index = stratavec.Index.open(tmp_path / "i")
    plain = index.search(x[:5], 3, beam_width=2, page_search=False, prune_ratio=0.25)
    numpy = index.search(
        x[:5], 3, beam_width=np.int32(2), page_search=np.bool_(False), prune_ratio=np.float64(0.25)
    )
    assert (plain[1] == numpy[1]).all()
