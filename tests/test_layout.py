"""The package's shape: wings whose imports point one way, private names kept at home, no torch
where it does not belong (the layout is described in docs/development.md; DESIGN.md has the reasoning)."""

from __future__ import annotations

import ast
import re
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


# Words live beside their values or under results/: session hands over values and builds no sentence; in core a
# sentence is a value's own words (its ``words`` method, or the words a ``Worded`` code's members carry), never built
# by the logic beside it. Left out: the configuration's rules (what each key allows, said in the ConfigError raised
# before any trial runs, and what each does, declared with it) and the peak table (where each figure comes from: a datasheet's name is data).
SENTENCE_FREE = {"core", "session"}
BESIDE_VALUES = {"core"}  # where a value may say itself
SENTENCE_EXEMPT = {"core/config_rules.py", "core/peaks.py"}
_MARKUP = re.compile(r"\[/?[a-z ]*\]|\{[^}]*\}")  # rich markup and format fields are not words
_WORD = re.compile(r"[A-Za-z][a-z']+")


def _words(text: str) -> int:
    text = _MARKUP.sub(" ", text)
    return len(_WORD.findall(text)) if " " in text.strip() else 0


def _not_text(tree: ast.Module) -> Set[int]:
    """The nodes that may hold words: docstrings and what a ``raise`` or ``assert`` says."""
    found: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.Assert)):
            found.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.add(id(node.value))  # a docstring, or a string standing alone as a comment
    return found


def _said_by_values(tree: ast.Module) -> Set[int]:
    """The nodes where a value says itself: a class's ``words`` method (and an advice's ``change`` and ``grounds``,
    its words in two), the members of a ``Worded`` code, a record's name in the documentation (its ``what`` and
    ``plural``)."""
    found: Set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        worded = any(isinstance(b, ast.Name) and b.id == "Worded" for b in node.bases)
        for item in node.body:
            named = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id in ("what", "plural")
            if (
                (worded and isinstance(item, ast.Assign))
                or named
                or (isinstance(item, ast.FunctionDef) and item.name in ("words", "change", "grounds"))
            ):
                found.update(id(n) for n in ast.walk(item))
    return found


def sentences(tree: ast.Module, beside: bool = False) -> Iterator[Tuple[int, str]]:
    """(line, text) of each sentence built: an f-string whose literal parts hold three words or more, a string
    constant of four words or more (docstrings, raise and assert left out; ``beside``: a value's own words too)."""
    skip = _not_text(tree) | (_said_by_values(tree) if beside else set())
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            literal = " ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if _words(literal) >= 3:
                yield node.lineno, literal
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            if _words(node.value) >= 4:
                yield node.lineno, node.value


def test_no_sentence_is_built_in_session_or_by_core_logic() -> None:
    found = []
    for path, wing, tree in modules():
        rel = path.relative_to(PACKAGE).as_posix()
        if wing not in SENTENCE_FREE or rel in SENTENCE_EXEMPT:
            continue
        found += [f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}" for line, text in sentences(tree, wing in BESIDE_VALUES)]
    assert not found, "sentences belong beside their values (core) or under benchy/results/text:\n" + "\n".join(found)


def test_the_sentence_check_sees_sentences() -> None:
    built = ast.parse(
        'x = f"the loader waited {n} times"\ny = "more loader workers, up to the cores"\n'
        'z = "[bold]benchy[/] {task.description}"\nw = f"{a}: {b}"\n'
        'raise ValueError(f"got {v}; expected a positive number")\n'
    )
    assert [line for line, _ in sentences(built)] == [1, 2]
    values = ast.parse(
        "class Lost:\n"
        '    def words(self):\n        return f"the loader waited {n} times"\n'
        '    def note(self):\n        return f"the loader waited {n} times"\n'
        "class Help(Worded):\n"
        '    MORE = "more", "more loader workers, up to the cores"\n'
        'help = "more loader workers, up to the cores"\n'
    )
    assert sorted(line for line, _ in sentences(values, beside=True)) == [5, 8]
    assert sorted(line for line, _ in sentences(values)) == [3, 5, 7, 8]


def test_no_code_reads_a_sentence_back() -> None:
    """No code tests what a sentence says (``startswith``, ``endswith``, ``in``, ``==`` against words): values carry
    the meaning; the words are for people. Parsing text that others write (a JSON decoder's error, /proc) is not
    this, and lives in results/document.py and measure/."""
    found = []
    for path, wing, tree in modules():
        if wing not in ("core", "session", "results") or path.name in ("document.py", "logparse.py"):
            continue
        for node in ast.walk(tree):
            args: List[ast.expr] = []
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith")
            ):
                args = list(node.args)
            elif isinstance(node, ast.Compare):
                args = [node.left, *node.comparators]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _words(arg.value) >= 2:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {arg.value!r}")
    assert not found, "\n".join(found)
