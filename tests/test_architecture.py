"""docs/architecture.md's floor table is checked against the real imports of src/albert_edge.

Every module belongs to exactly one floor of the table, imports only its own floor or lower ones
(imports inside functions count; imports under ``if TYPE_CHECKING:`` are for type checkers and do not),
and no two modules import each other, directly or around a circle. The house rules the table cannot
express are checked here too: no function over 100 lines, and ``Task`` keeps to its floor's job
(at most 12 public methods).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "albert_edge"
DOC = ROOT / "docs" / "architecture.md"
MAX_FUNCTION_LINES = 100
MAX_TASK_METHODS = 12


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _floor_table() -> dict[str, int]:
    """``albert_edge.x`` (a module, or a package standing for all it holds) → its floor, from the doc.

    Rows look like ``| 2 | `runtime/`, `evaluate.py` | what they hold |``: a backticked ``name/`` is a
    package, ``name.py`` a module; a module named on its own wins over its package's row.
    """
    table: dict[str, int] = {}
    in_table = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| floor |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        match = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if in_table and match:
            for item in re.findall(r"`([^`]+)`", match.group(2)):
                name = "albert_edge." + item.rstrip("/").removesuffix(".py").replace("/", ".")
                assert name not in table, f"{item} is on two floors of docs/architecture.md"
                table[name] = int(match.group(1))
    assert table, "docs/architecture.md has no '| floor |' table"
    return table


def _floor_of(module: str, table: dict[str, int]) -> int | None:
    name = module
    while name:
        if name in table:
            return table[name]
        name = name.rpartition(".")[0]
    return None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of import nodes under ``if TYPE_CHECKING:`` (never executed, so no runtime dependency)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported albert_edge module, line) for every import in the file, function-local ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith("albert_edge") and target != module:
                yield target, node.lineno


def _graph() -> dict[str, set[str]]:
    return {module: {target for target, _ in _imports(module, path)} for module, path in MODULES.items()}


def test_every_module_is_on_a_floor_and_every_row_names_real_code() -> None:
    table = _floor_table()
    homeless = [m for m in MODULES if m != "albert_edge" and _floor_of(m, table) is None]
    assert not homeless, f"modules on no floor of docs/architecture.md: {homeless}"
    stale = [name for name in table if name not in MODULES]
    assert not stale, f"docs/architecture.md names code that does not exist: {stale}"


def test_every_import_goes_to_the_same_floor_or_down() -> None:
    table = _floor_table()
    upward = []
    for module, path in MODULES.items():
        source = _floor_of(module, table)
        if source is None:
            continue
        for target, line in _imports(module, path):
            floor = _floor_of(target, table)
            if floor is not None and floor > source:
                upward.append(f"{path.relative_to(ROOT)}:{line} {module} (floor {source}) imports {target} (floor {floor})")
    assert not upward, "imports up the floors:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_function_local_import(tmp_path: Path) -> None:
    """The checker itself: an import inside a function is an edge, one under TYPE_CHECKING is not."""
    source = tmp_path / "mod.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from albert_edge import cli\n"
                      "def f():\n    from albert_edge import errors\n", encoding="utf-8")
    assert [t for t, _ in _imports("albert_edge.somewhere", source)] == ["albert_edge.errors"]


def test_no_function_over_100_lines() -> None:
    long = []
    for path in MODULES.values():
        if "_vendor" in path.parts:
            continue  # flatc's generated code
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 100 lines:\n" + "\n".join(long)


def test_task_keeps_to_its_floor() -> None:
    from albert_edge.tasks.base import Task

    public = sorted(name for name, value in vars(Task).items()
                    if not name.startswith("_") and (callable(value) or isinstance(value, (classmethod, staticmethod))))
    assert len(public) <= MAX_TASK_METHODS, f"Task has {len(public)} public methods: {public}"


@pytest.mark.parametrize("limit", [200])
def test_the_architecture_doc_is_short(limit: int) -> None:
    lines = DOC.read_text(encoding="utf-8").count("\n")
    assert lines <= limit, f"docs/architecture.md has {lines} lines; measurements belong in benchmarks/decisions/"


#: The top level shows the design: packages (rooms) plus the two modules every floor uses. A few small
#: loose modules may stay (chatter, evaluate, lazy, model_card today); a fifth means a room is missing.
TOP_LEVEL_ALWAYS = {"__init__.py", "__main__.py", "errors.py", "progress.py"}
MAX_LOOSE_MODULES = 4


def test_the_top_level_holds_rooms_not_loose_modules() -> None:
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.name not in TOP_LEVEL_ALWAYS)
    assert len(loose) <= MAX_LOOSE_MODULES, f"src/albert_edge/ has {len(loose)} loose modules {loose}: give them a package"
