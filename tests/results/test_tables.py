"""The one-table, four-renderings helper the command-line tools print with."""

from __future__ import annotations

import io

from benchy.results.tables import Table, print_table


def table() -> Table:
    return Table(["mode", "samples/s", "note"], [["IO", "12.500", "a|b"], ["SYNTHETIC", "3.000", ""]], right=[False, True, False])


def test_plain_pads_columns_and_right_aligns_numbers() -> None:
    assert table().plain() == ("mode       samples/s  note\nIO            12.500  a|b\nSYNTHETIC      3.000")


def test_markdown_escapes_pipes_and_aligns_numbers_right() -> None:
    assert table().markdown() == (
        "| mode | samples/s | note |\n|---|---:|---|\n| IO | 12.500 | a\\|b |\n| SYNTHETIC | 3.000 |  |"
    )


def test_csv_quotes_what_needs_it() -> None:
    t = Table(["run", "mean"], [["a, b", "1.0"]])
    assert t.csv() == 'run,mean\n"a, b",1.0'


def test_rich_rendering_on_a_terminal() -> None:
    out = io.StringIO()
    print_table(table(), out, fancy=True)
    lines = out.getvalue().splitlines()
    assert lines[1] == "┃ mode      ┃ samples/s ┃ note ┃"
    assert lines[3] == "│ IO        │    12.500 │ a|b  │"  # numbers right-aligned, as in the plain table
    plain = io.StringIO()
    print_table(table(), plain, fancy=False)
    assert plain.getvalue() == table().plain() + "\n"
