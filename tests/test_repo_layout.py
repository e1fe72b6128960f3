"""The repository's layout rules, checked so they cannot quietly come back undone.

* No test module imports another: whatever two test files share lives in ``tests/support/``
  (imported as ``tests.support.<module>``), so a test file can be moved, renamed or run alone.
* Nothing under tests/ or benchmarks/ edits ``sys.path``: tests import through the package (pytest puts
  the repository root on the path, ``pythonpath`` in pyproject.toml) and benchmarks run as
  ``python -m benchmarks.<kind>.<name>`` from the root. tests/mediapipe/ is exempt: its scripts run
  in their own virtualenv, by path.
* The quick tier is real: the ``slow`` marker declared in pyproject.toml is used, and every marker
  a test uses is declared, so ``pytest -m "not slow"`` deselects what it says.

Parsed with ``ast`` only: nothing is imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# pytest's own marks: these need no declaration in pyproject.toml.
BUILTIN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}


def every_test_file() -> list[Path]:
    return sorted(TESTS.glob("test_*.py"))


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``tree``, wherever it sits (module level or in a function).

    ``from tests import test_x`` counts as ``tests.test_x``; a relative ``from . import x`` as ``.x``.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}" if base.strip(".") else base + alias.name)
                      for alias in node.names]
    return found


def is_test_module(name: str) -> bool:
    """True for ``test_x``, ``tests.test_x``, ``.test_x`` or anything inside them."""
    parts = name.lstrip(".").split(".")
    if parts[0] == "tests":
        parts = parts[1:]
    return bool(parts) and parts[0].startswith("test_")


def marks_used(tree: ast.AST) -> set[str]:
    """Names ``n`` of every ``pytest.mark.n`` written in ``tree`` (decorators, ``pytestmark``, ``pytest.param``)."""
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark" and isinstance(node.value.value, ast.Name) and node.value.value.id == "pytest"}


def declared_marks() -> set[str]:
    """The markers pyproject.toml declares (pytest's own list also holds its plugins' markers)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {line.split(":", 1)[0].strip() for line in config["tool"]["pytest"]["ini_options"]["markers"]}


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_test_module_imports_another():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for path in every_test_file() for line, name in imported_modules(parsed(path)) if is_test_module(name)]
    assert not offenders, "move what they share into tests/support/:\n" + "\n".join(offenders)


def test_the_import_check_sees_every_spelling_of_a_test_module_import():
    tree = ast.parse("import test_a\nfrom tests.test_b import x\nfrom tests import test_c\n"
                     "def f():\n    from .test_d import y\nfrom tests.support.qa_model import z\nimport tests.support\n")
    assert [name for _, name in imported_modules(tree) if is_test_module(name)] == [
        "test_a", "tests.test_b", "tests.test_b.x", "tests.test_c", ".test_d", ".test_d.y"]


def test_helpers_live_in_tests_support_not_beside_the_tests():
    loose = [p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_")
             and p.name not in {"conftest.py", "__init__.py"}]
    assert not loose, f"shared helpers belong in tests/support/: {loose}"
    assert (TESTS / "__init__.py").is_file() and (TESTS / "support" / "__init__.py").is_file()


def test_nothing_under_tests_or_benchmarks_edits_sys_path():
    edits = []
    for path in sorted([*TESTS.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        if TESTS / "mediapipe" in path.parents:
            continue
        for node in ast.walk(parsed(path)):
            if (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                    and node.value.id == "sys" and path != Path(__file__).resolve()):
                edits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not edits, "import through tests.support / benchmarks.* instead of editing sys.path:\n" + "\n".join(edits)


def test_every_declared_marker_is_used_and_slow_is_one_of_them():
    declared = declared_marks()
    used = set().union(*(marks_used(parsed(path)) for path in every_test_file()))
    assert "slow" in declared
    unused = declared - used
    assert not unused, f'declared but marking no test (so pytest -m "not ..." deselects nothing): {sorted(unused)}'


def test_the_marker_scan_reads_decorators_module_marks_and_params():
    tree = ast.parse("pytestmark = pytest.mark.slow\n@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.xfail)])\n"
                     "@pytest.mark.gpu(reason='r')\ndef test_a(x): pass\n")
    assert marks_used(tree) == {"slow", "parametrize", "xfail", "gpu"}


def test_every_marker_a_test_uses_is_declared():
    declared = declared_marks() | BUILTIN_MARKS
    undeclared = {f"{path.name}: {mark}" for path in every_test_file() for mark in marks_used(parsed(path))
                  if mark not in declared}
    assert not undeclared, f"declare these in [tool.pytest.ini_options] markers: {sorted(undeclared)}"
