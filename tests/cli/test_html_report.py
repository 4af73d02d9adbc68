"""``benchy report RUN... --html OUT.html`` on stored real runs: one page that needs nothing else
(no script, no stylesheet or image from elsewhere), the verdict, the tables and the plots in it;
without matplotlib the page is still written with its tables and says why the plots are missing.
The page in a real browser: ``tests/e2e/test_html_browser.py``."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import List

from test_cli import DATA, benchy

RUNS = ["results/v3/benchy_result.json", "results/v3-2ranks/benchy_result.json", "results/v3-sweep/benchy_result.json"]
IMG = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


def report(tmp_path: Path, *runs: str, block_matplotlib: bool = False) -> str:
    out = tmp_path / "report.html"
    proc = benchy("report", *runs, "--html", str(out), block_matplotlib=block_matplotlib)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out} (" in proc.stdout
    return out.read_text(encoding="utf-8")


def external_references(page: str) -> List[str]:
    """Anything the browser would fetch: a script, a stylesheet, a src or href that is not on the page."""
    found = re.findall(r"<script|<link|@import|url\(", page)
    found += [m for m in re.findall(r'(?:src|href)="([^"]*)"', page) if not m.startswith(("data:", "#"))]
    return found


def test_one_page_holds_every_runs_verdict_tables_and_plots(tmp_path: Path) -> None:
    page = report(tmp_path, *RUNS)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert external_references(page) == []
    for run in RUNS:
        doc = json.loads((DATA / run).read_text())
        assert html.escape(doc["verdict"]) in page  # the verdict as written, escaped once
        assert f"<h2>{html.escape(doc['run_name'])}</h2>" in page
    assert "<h2>Scaling</h2>" in page and "strong eff" in page
    # The verdict's box is coloured by its outcome: loading-limited (v3, v3-sweep), compute-limited (2 ranks).
    assert page.count('<div class="verdict data-loading">') == 2 and page.count('<div class="verdict compute">') == 1
    assert "<caption>System metrics (means over the counted trials; rank 0&#x27;s own)</caption>" in page
    # The sweep run's table, its best setting marked, as the run printed it.
    assert "<caption>Loader sweep (IO trials per setting)</caption>" in page
    assert '<td>num_workers=0, pin_memory=False</td><td class="num">857.285</td>' in page
    images = IMG.findall(page)
    # Scaling, then each run's per-step plot and timeline.
    assert [alt for alt, _ in images] == ["scaling"] + [
        f"{name}: {what}"
        for name in ("sample v3", "dist_script 2026-11-24T15:10:35Z", "sample v3 sweep")
        for what in ("per-step throughput", "timeline")
    ]
    for _, data in images:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_older_run_without_a_timeline_gets_the_rest_and_the_reason(tmp_path: Path) -> None:
    page = report(tmp_path, "results/v2/benchy_result.json")
    assert "<h2>Scaling</h2>" not in page  # one run: no scaling section
    assert [alt for alt, _ in IMG.findall(page)] == ["sample v2: per-step throughput"]
    assert "sample v2: timeline: not drawn: " in page and "Left out" in page


def test_without_matplotlib_the_page_has_its_tables_and_says_why_no_plots(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = benchy("report", *RUNS[:2], "--html", str(out), block_matplotlib=True)
    assert proc.returncode == 0, proc.stderr
    assert (
        "benchy report: no plots: plots need matplotlib, which is not installed: pip install 'torch-benchy[plot]'" in proc.stderr
    )
    page = out.read_text(encoding="utf-8")
    assert IMG.findall(page) == [] and "<h2>Scaling</h2>" in page and "samples/s" in page
    assert "no plots: plots need matplotlib" in page


def test_an_unwritable_page_is_named(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")  # a directory that cannot be made: its parent is a file
    proc = benchy("report", RUNS[0], "--html", str(tmp_path / "a-file" / "report.html"))
    assert proc.returncode == 2
    assert f"benchy report: cannot write {tmp_path / 'a-file' / 'report.html'}" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing half written left behind


def test_the_system_table_holds_the_system_lines_figures(tmp_path: Path) -> None:
    page = report(tmp_path, RUNS[0])
    # BENCHY::SUMMARY::SYSTEM IO CPU 0.00 of 2 cores busy (0 %), peak RSS 243 MB, storage reads 0.0 MB/s
    assert '<tr><td>IO</td><td class="num">3</td><td class="num">0.00</td><td class="num">2</td><td class="num">243</td>' in page
    assert "GPU" not in page.split("System metrics", 1)[1].split("</table>", 1)[0]  # nobody measured it
    # With GPU readings (a share of the time busy, bytes, watts): the columns appear, in the line's units.
    doc = json.loads((DATA / RUNS[0]).read_text())
    for entry in doc["FULL"]["system"]:
        entry.update(gpu_util=0.85, gpu_memory_bytes=2.5e9, gpu_power_w=300.0)
    (tmp_path / "gpu.json").write_text(json.dumps(doc))
    page = report(tmp_path, str(tmp_path / "gpu.json"))
    assert '<th class="num">GPU busy %</th><th class="num">GPU memory MB</th><th class="num">GPU power W</th>' in page
    assert '<td class="num">85</td><td class="num">2500</td><td class="num">300.0</td></tr>' in page
