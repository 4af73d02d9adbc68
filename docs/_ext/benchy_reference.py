"""Writes the reference tables of the documentation from the code that defines them, at each build.

* ``reference/_generated/config.md`` and ``defaults.yaml``: every config key with its default, what it allows,
  with its bounds, and what it does, all from the key's one declaration (its field in
  :mod:`benchy.core.config_rules`, read through :data:`~benchy.core.config_rules.RULES` and
  :class:`benchy.core.config.Config`'s defaults): the validation reads the same fields;
* ``reference/_generated/lines.md``: every ``BENCHY::`` line kind (:data:`benchy.results.lines.LINE_KINDS`);
* ``reference/_generated/json.md``: every top-level key of the result JSON and what it holds in words (the
  descriptions of :class:`benchy.results.model.Document`'s fields);
* ``reference/_generated/exits.md``: the exit statuses (:data:`benchy.results.text.exits.EXIT_STATUSES`, also in
  ``benchy --help``);
* ``reference/_generated/document.md``: what each key may hold, at every depth, as the reader decodes it
  (the types and bounds of :mod:`benchy.results.model`'s structs), and the reader's bounds.

The pages include them; ``tests/results/test_keys.py`` checks the tables against what the code writes.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

import yaml

GENERATED = os.path.join("reference", "_generated")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that may hold backticks: a longer fence around it (CommonMark)."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = list(value)
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip()


def defaults() -> Dict[str, Dict[str, Any]]:
    from benchy.core.config import Config

    out = Config().to_dict()
    out["global"]["output_dir"] = None  # the current directory, wherever the run is
    return out


def config_table() -> str:
    from benchy.core.config_rules import RULES

    values = defaults()
    rows: List[str] = []
    for section, rules in RULES.items():
        if section in ("synthetic", "full"):
            continue  # the same keys as IO
        title = "IO, synthetic, full" if section == "IO" else section
        rows.append(f"\n### `{title}`\n")
        rows.append("| key | default | allowed | what it does |")
        rows.append("| --- | --- | --- | --- |")
        for key, rule in rules.items():
            rows.append(f"| `{key}` | {_code(_value(values[section][key]))} | {_cell(rule.allowed)} | {_cell(rule.does)} |")
    return "\n".join(rows) + "\n"


def lines_table() -> str:
    from benchy.results.lines import LINE_KINDS

    rows = ["| kind | line | when |", "| --- | --- | --- |"]
    for kind, form, when in LINE_KINDS:
        rows.append(f"| {kind} | {_code(_cell(form))} | {_cell(when)} |")
    return "\n".join(rows) + "\n"


def json_table() -> str:
    from benchy.results.model import top_rows

    rows = ["| key | content |", "| --- | --- |"]
    for keys, content in top_rows():
        rows.append(f"| {', '.join(f'`{k}`' for k in keys)} | {_cell(content)} |")
    return "\n".join(rows) + "\n"


def document_table() -> str:
    from benchy.results import document as d
    from benchy.results.model import rows

    out = [
        f"A file is at most {d.MAX_FILE_BYTES >> 20} MiB; values nest at most {d.MAX_DEPTH} levels; an integer "
        f"has at most {d.MAX_DIGITS} digits and every number is at most {d.MAX_MAGNITUDE:.0e} in size; "
        f"NaN and Infinity are refused (benchy writes null); reading a file "
        f"takes at most {d.MEMORY_FACTOR} times its size (or its size and {d.MEMORY_FLOOR >> 20} MiB for a small "
        f"one), and a file that would take more is refused before it is parsed.",
        "",
        "| key | holds |",
        "| --- | --- |",
    ]
    for path, kind, required, _ in rows():
        out.append(f"| {_code(path)} | {_cell(kind)}{' (required)' if required else ''} |")
    return "\n".join(out) + "\n"


def exits_table() -> str:
    from benchy.results.text.exits import EXIT_STATUSES

    out = ["| status | when |", "| --- | --- |"]
    for status, text in EXIT_STATUSES:
        out.append(f"| {_code(status) if status.isdigit() else status} | {_cell(text)} |")
    return "\n".join(out) + "\n"


def write(app: Any) -> None:
    out = os.path.join(app.srcdir, GENERATED)
    os.makedirs(out, exist_ok=True)
    files = {
        "config.md": config_table(),
        "defaults.yaml": yaml.safe_dump(defaults(), sort_keys=False, default_flow_style=False, width=100),
        "lines.md": lines_table(),
        "json.md": json_table(),
        "document.md": document_table(),
        "exits.md": exits_table(),
    }
    for name, text in files.items():
        path = os.path.join(out, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:  # unchanged files keep their time: Sphinx rebuilds only what changed
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)


def setup(app: Any) -> Dict[str, Any]:
    app.connect("builder-inited", write)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
