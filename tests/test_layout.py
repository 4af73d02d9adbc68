"""The package's shape: wings whose imports point one way, private names kept at home, no torch
where it does not belong (the layout is described in docs/development.md; DESIGN.md has the reasoning)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

from helpers import ROOT

PACKAGE = ROOT / "benchy"
# What each wing may import from the package: arrows point down only.
ALLOWED: Dict[str, Set[str]] = {
    "core": {"core"},
    "measure": {"core", "measure"},
    "results": {"core", "results"},
    "session": {"core", "measure", "results", "session"},
    "integrations": {"core", "measure", "results", "session", "integrations"},
    "cli": {"core", "measure", "results", "session", "integrations", "cli"},
    "torch": {"integrations", "torch"},
}
NO_TORCH = {"core", "results"}  # never import torch, not even inside a function


def modules() -> Iterator[Tuple[Path, str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        wing = rel.parts[0] if len(rel.parts) > 1 else ""
        yield path, wing, ast.parse(path.read_text(), str(path))


def dotted(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, tree: ast.Module) -> Iterator[Tuple[int, str, List[str]]]:
    """(line, absolute module, names) of every import, at any depth (lazy imports too)."""
    package = dotted(path) if path.name == "__init__.py" else dotted(path).rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield node.lineno, module, [a.name for a in node.names]


def wing_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "benchy" else ""


def test_imports_point_down_only() -> None:
    wrong = []
    for path, wing, tree in modules():
        if wing not in ALLOWED:
            continue  # benchy/__init__.py, __main__.py, _version: the top may import any wing
        for line, module, names in imported(path, tree):
            if not module.startswith("benchy"):
                continue
            targets = {wing_of(module)} if wing_of(module) else {wing_of(f"{module}.{n}") for n in names}
            for target in targets - {""}:
                if target not in ALLOWED[wing]:
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {wing} imports {target} ({module})")
    assert wrong == []


def test_core_and_results_never_import_torch() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path, wing, tree in modules()
        if wing in NO_TORCH
        for line, module, _ in imported(path, tree)
        if module.split(".")[0] == "torch"
    ]
    assert found == []


# What touches files or the file system: none of it in core (reading YAML and probing the output
# directory are results.configfile's; result files are results.document's and results.files').
FILE_CALLS = {
    "open",
    "getsize",
    "exists",
    "isdir",
    "isfile",
    "makedirs",
    "listdir",
    "scandir",
    "mkstemp",
    "pathconf",
    "unlink",
    "remove",
    "rename",
    "replace",
}
FILE_MODULES = {"tempfile", "shutil", "yaml", "pathlib", "glob"}


def test_core_touches_no_file() -> None:
    found = []
    for path, wing, tree in modules():
        if wing != "core":
            continue
        for line, module, _ in imported(path, tree):
            if module.split(".")[0] in FILE_MODULES:
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
                if (name in FILE_CALLS and owner in ("os", "path")) or (name == "open" and owner in ("", "io", "os")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: calls {name}()")
    assert not found, "core must not touch files:\n" + "\n".join(found)


def test_no_private_name_crosses_a_module() -> None:
    """A name starting with ``_`` is used only in its own module (``__version__`` is public)."""
    crossing = []
    for path, _, tree in modules():
        for line, module, names in imported(path, tree):
            if not module.startswith("benchy"):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if any(part.startswith("_") and not part.startswith("__") for part in module.split(".")) or private:
                crossing.append(f"{path.relative_to(ROOT)}:{line}: {module} {private}")
        for node in ast.walk(tree):  # attribute access on another module: lines._x
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in {"lines", "steps", "comparing", "scaling", "plots", "trial"}
            ):
                crossing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert crossing == []


def test_every_module_says_its_job() -> None:
    silent = [str(path.relative_to(ROOT)) for path, _, tree in modules() if ast.get_docstring(tree) is None]
    assert silent == []


def test_the_offline_side_starts_without_torch() -> None:
    """``benchy`` the command, ``benchy.load`` and the results wing import no torch."""
    code = (
        "import sys, benchy, benchy.results.schema, benchy.results.summary, benchy.results.logparse, "
        "benchy.results.compare, benchy.results.scaling, benchy.cli, benchy.core.verdict\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_benchmarks_and_examples_import_only_what_exists() -> None:
    """A module moved or renamed is followed everywhere: every ``benchy`` import in benchmarks/ and examples/."""
    import importlib
    import importlib.util

    missing = []
    for path in sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "examples").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "benchy":
                module = importlib.import_module(node.module)
                missing += [
                    f"{path.name}: {node.module}.{a.name}"
                    for a in node.names
                    if not hasattr(module, a.name) and importlib.util.find_spec(f"{node.module}.{a.name}") is None
                ]
    assert missing == []
