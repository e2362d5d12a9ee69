"""The platform's promises that hold for every method package: its shape, its imports, its extras."""

import ast
import re
from pathlib import Path

import pytest

from icml24 import registry
from icml24.cli import main
from icml24.extras import MissingExtra, require

SRC = Path(__file__).resolve().parents[1] / "src" / "icml24"
IMPLEMENTED = [s for s in registry.SLUGS if registry.is_implemented(s)]
LIGHT_IMPORTS = {
    "icml24.claims",
    "icml24.registry",
    "icml24.errors",
    "icml24.validation",
    "icml24.runs",
    "icml24.threads",
    "icml24.extras",
    "icml24.verbs",
    "icml24.files",
}


def _modules(folder: Path):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _absolute(module: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.relative_to(SRC.parent).with_suffix("").parts[: -node.level]
    return ".".join(package) + (f".{node.module}" if node.module else "")


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_package_shape(slug):
    names = {p.name for p in (SRC / slug).glob("*.py")}
    assert {"__init__.py", "paper.py", "experiments.py", "baselines.py"} <= names, sorted(names)


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_every_package_walks_its_public_api_with_bad_input(slug):
    """Each method's tests hold a bad-input module built on the shared harness that checks coverage of __all__."""
    path = SRC.parents[1] / "tests" / slug / "test_bad_inputs.py"
    assert path.exists(), f"{slug}: add tests/{slug}/test_bad_inputs.py (icml24.testing.bad / assert_refuses)"
    text = path.read_text()
    assert "assert_refuses" in text and "coverage_gaps" in text, f"{slug}: use assert_refuses and coverage_gaps"


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_paper_and_cli_are_light(slug):
    """paper.py and cli.py import only the core at module level (icml24 list and --help read them)."""
    for name in ("paper.py", "cli.py"):
        path = SRC / slug / name
        if not path.exists():
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("icml24")):
                target = _absolute(path, node)
                targets = [f"{target}.{a.name}" for a in node.names] if node.module is None else [target]
                for t in targets:
                    assert t in LIGHT_IMPORTS, f"{path.name} imports {t} at module level"


def test_no_method_reaches_into_another_and_no_private_imports():
    for path in _modules(SRC):
        rel = path.relative_to(SRC).parts
        own = rel[0] if len(rel) > 1 and rel[0] in registry.SLUGS else None
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _absolute(path, node)
                parts = target.split(".")
                if own and len(parts) > 1 and parts[1] in registry.SLUGS:
                    assert parts[1] == own, f"{path}: imports {target}"
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                assert not private, f"{path}: imports private names {private} from {target}"


def test_library_code_leaves_matplotlib_global_state_alone():
    for path in _modules(SRC) + sorted((SRC.parents[1] / "benchmarks").glob("*.py")):
        text = path.read_text()
        assert not re.search(r"matplotlib\.use\(|import matplotlib\.pyplot|from matplotlib import pyplot", text), path


def test_no_user_facing_text_speaks_of_specs_issues_or_leads():
    pattern = re.compile(r"\b(the spec\b|specs/|issue \d+\b|the lead\b)", re.IGNORECASE)
    for path in _modules(SRC):
        hits = [line for line in path.read_text().splitlines() if pattern.search(line)]
        assert not hits, f"{path}: {hits[:2]}"


def test_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    with pytest.raises(MissingExtra, match=r"x needs no_such_pkg_q.*pip install 'icml24\[graphs\]'"):
        require("no_such_pkg_q", extra="graphs", what="x")
    import icml24.extras

    real = icml24.extras.importlib.util.find_spec
    monkeypatch.setattr(icml24.extras.importlib.util, "find_spec", lambda n: None if n == "ray" else real(n))
    assert main(["verify", "dynamic_attention/exact", "--engine", "ray", "--out", "/nonexistent-runs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --engine ray needs ray, which is not installed (pip install 'icml24[ray]')"]


def _public_api():
    """Every public function and class defined in an icml24 module (its ``__all__``, else its public names)."""
    import importlib
    import inspect
    import pkgutil

    import icml24

    for info in pkgutil.walk_packages(icml24.__path__, "icml24."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", "") == info.name:
                yield f"{info.name}.{name}", obj


def test_public_api_has_numpydoc_docstrings():
    """Parameters on every public function with arguments, Returns where it returns a value, a docstring on
    every public class and method (numpydoc, in the manner of scikit-learn)."""
    import inspect

    missing = []
    for where, obj in _public_api():
        doc = inspect.getdoc(obj) or ""
        if not doc:
            missing.append(f"{where}: no docstring")
            continue
        if inspect.isclass(obj):
            missing += [
                f"{where}.{n}: no docstring"
                for n, f in vars(obj).items()
                if not n.startswith("_") and inspect.isfunction(f) and not inspect.getdoc(f)
            ]
            continue
        sig = inspect.signature(obj)
        if [p for p in sig.parameters if p not in ("self", "cls")] and "Parameters" not in doc:
            missing.append(f"{where}: no Parameters section")
        if sig.return_annotation not in (None, "None", inspect.Signature.empty) and not (
            "Returns" in doc or "Yields" in doc
        ):
            missing.append(f"{where}: no Returns section")
    assert not missing, "\n".join(missing)
