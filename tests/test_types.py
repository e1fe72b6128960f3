"""The documented imports carry types: a misspelt attribute or name is a mypy error, correct code is not.

The packages export names lazily (albert_edge.lazy); without the ``if TYPE_CHECKING:`` re-exports a
type checker saw every name as Any and accepted ``prediction.labell``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

SRC = Path(__file__).resolve().parents[1] / "src"
LAZY_PACKAGES = ("albert_edge.runtime", "albert_edge.convert", "albert_edge.bench_latency")

CORRECT = """
from albert_edge.runtime import Prediction, TextClassifier

classifier = TextClassifier.from_file("model.tflite")
prediction: Prediction = classifier.predict("some text")
label: str = prediction.label
score: float = prediction.score
"""

MISSPELT_ATTRIBUTE = CORRECT + "oops = prediction.labell\n"
MISSPELT_NAME = "from albert_edge.runtime import TextClasifier\n"


def _mypy(tmp_path: Path, code: str, monkeypatch) -> tuple[str, int]:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(code, encoding="utf-8")
    monkeypatch.setenv("MYPYPATH", str(SRC))
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here: only the flags below apply
    out, err, status = mypy_api.run([str(snippet), "--follow-imports=silent", "--ignore-missing-imports",
                                     "--cache-dir", str(tmp_path / ".mypy_cache"), "--no-error-summary"])
    return out + err, status


def test_correct_use_of_the_runtime_type_checks(tmp_path, monkeypatch):
    report, status = _mypy(tmp_path, CORRECT, monkeypatch)
    assert status == 0, report


def test_a_misspelt_attribute_is_an_error(tmp_path, monkeypatch):
    report, status = _mypy(tmp_path, MISSPELT_ATTRIBUTE, monkeypatch)
    assert status == 1 and '"Prediction" has no attribute "labell"' in report, report


def test_a_misspelt_name_is_an_error(tmp_path, monkeypatch):
    report, status = _mypy(tmp_path, MISSPELT_NAME, monkeypatch)
    assert status == 1 and "TextClasifier" in report, report


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_name_is_re_exported_for_type_checkers(package):
    """The TYPE_CHECKING block and _EXPORTS name the same things from the same modules."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    typed.update({alias.name: stmt.module for alias in stmt.names})
    assert typed == module._EXPORTS
