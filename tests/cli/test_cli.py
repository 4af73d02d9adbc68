"""The command-line tools, run as a user runs them (subprocess), on stored result files.

``data/compare`` and ``data/scaling`` hold made-up runs with known answers
(``data/make_fixtures.py``); ``data/results`` holds one real run per schema version.
Outputs are compared exactly (stdout is a pipe here, so tables are plain text).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"
SC21_LOG = """srun: job 123 queued
[2021-11-14 10:00:01] epoch 9 done
BENCHY::SUMMARY::IO average trial throughput: 89.177 +/- 1.011
BENCHY::SUMMARY:: SYNTHETIC average trial throughput: 376.537 +/- 0.604
BENCHY::SUMMARY::FULL average trial throughput: 89.971 +/- 0.621
"""  # the SC21 tutorial's summary, with the original tool's "SUMMARY:: SYNTHETIC" spacing


def benchy(*args: str, cwd: Path = DATA, block_matplotlib: bool = False) -> subprocess.CompletedProcess:
    code = "import sys\n"
    if block_matplotlib:  # as on a machine without the plot extra
        code += "sys.modules['matplotlib'] = None\n"
    code += "from benchy.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def png_size(path: Path) -> Tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


RULE = (
    "a mode regresses when its mean falls by more than {t} % and Welch's test on the trial throughputs gives "
    "p < 0.05 after Holm's adjustment for the 3 modes tested"
)


# --- compare ---------------------------------------------------------------------------------


def test_compare_fails_on_a_regression() -> None:
    proc = benchy("compare", "compare/base.json", "compare/regressed.json")
    assert proc.returncode == 1, proc.stderr
    assert (
        proc.stdout
        == f"""base: compare/base.json (nightly 2026-11-21; 1 rank)
new:  compare/regressed.json (nightly 2026-11-22; 1 rank)
mode       base samples/s (trials)   new samples/s (trials)    change        p  p (Holm)  result
IO         1000.000 +/- 24.841 (3)  1002.000 +/- 16.290 (3)   +0.20 %    0.791         1  no significant change
SYNTHETIC  2000.000 +/- 49.683 (3)  2001.333 +/- 25.495 (3)   +0.07 %    0.928         1  no significant change
FULL         800.000 +/- 4.968 (3)   700.000 +/- 17.389 (3)  -12.50 %  0.00176   0.00529  regression
REGRESSION: FULL -12.50 % (adjusted p = 0.00529); {RULE.format(t=5)}
"""
    )


def test_compare_passes_a_noise_level_change() -> None:
    proc = benchy("compare", "compare/base.json", "compare/noise.json")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout
        == f"""base: compare/base.json (nightly 2026-11-21; 1 rank)
new:  compare/noise.json (nightly 2026-11-24; 1 rank)
mode       base samples/s (trials)   new samples/s (trials)   change      p  p (Holm)  result
IO         1000.000 +/- 24.841 (3)   997.000 +/- 25.935 (3)  -0.30 %  0.743         1  no significant change
SYNTHETIC  2000.000 +/- 49.683 (3)  2003.333 +/- 47.024 (3)  +0.17 %  0.847         1  no significant change
FULL         800.000 +/- 4.968 (3)    801.000 +/- 4.968 (3)  +0.12 %  0.573         1  no significant change
OK: no significant regression beyond 5 %; {RULE.format(t=5)}
"""
    )


def test_compare_threshold_decides_a_small_significant_fall() -> None:
    within = benchy("compare", "compare/base.json", "compare/slower.json")
    assert within.returncode == 0 and "-3.00 %  < 0.001   < 0.001  slower\n" in within.stdout
    beyond = benchy("compare", "compare/base.json", "compare/slower.json", "--threshold", "2")
    assert beyond.returncode == 1
    assert beyond.stdout.endswith(f"REGRESSION: FULL -3.00 % (adjusted p < 0.001); {RULE.format(t=2)}\n")


def test_compare_markdown_is_a_pull_request_comment() -> None:
    proc = benchy("compare", "compare/base.json", "compare/regressed.json", "--format", "markdown")
    assert proc.returncode == 1
    assert (
        proc.stdout
        == f"""### benchy compare: regression

- base: compare/base.json (nightly 2026-11-21; 1 rank)
- new:  compare/regressed.json (nightly 2026-11-22; 1 rank)

| mode | base samples/s (trials) | new samples/s (trials) | change | p | p (Holm) | result |
|---|---:|---:|---:|---:|---:|---|
| IO | 1000.000 +/- 24.841 (3) | 1002.000 +/- 16.290 (3) | +0.20 % | 0.791 | 1 | no significant change |
| SYNTHETIC | 2000.000 +/- 49.683 (3) | 2001.333 +/- 25.495 (3) | +0.07 % | 0.928 | 1 | no significant change |
| FULL | 800.000 +/- 4.968 (3) | 700.000 +/- 17.389 (3) | -12.50 % | 0.00176 | 0.00529 | regression |

**REGRESSION: FULL -12.50 % (adjusted p = 0.00529); {RULE.format(t=5).replace("<", "&lt;")}**
"""
    )


def test_compare_json_carries_p_and_degrees_of_freedom() -> None:
    proc = benchy("compare", "compare/base.json", "compare/regressed.json", "--format", "json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    full = next(m for m in doc["modes"] if m["mode"] == "FULL")
    # scipy.stats.ttest_ind(new, base, equal_var=False): t -23.7915, df 2.3244 (p 7.91e-04); p at df 2: 1.762e-03
    assert full["t"] == pytest.approx(-23.791548, rel=1e-6) and full["df"] == pytest.approx(2.324369, rel=1e-6)
    assert full["df_used"] == 2 and full["p"] == pytest.approx(1.761999e-03, rel=1e-5)
    # Holm over 3 tested modes: the smallest p times 3 (the others' p are 0.79 and 0.93).
    assert full["p_adjusted"] == pytest.approx(3 * full["p"])
    others = [m["p_adjusted"] for m in doc["modes"] if m["mode"] != "FULL"]
    assert others == [1.0, 1.0]
    assert full["change"] == pytest.approx(-0.125) and full["status"] == "regression" and full["significant"] is True
    assert doc["regressed"] == ["FULL"] and doc["exit_status"] == 1 and doc["threshold"] == 0.05
    assert doc["base"]["name"] == "nightly 2026-11-21" and doc["new"]["schema_version"] == 2
    assert doc["base"]["run_name"] == doc["base"]["name"] and set(doc["new"]) >= {"path", "nranks", "complete", "source"}


def test_compare_names_an_unreadable_file() -> None:
    proc = benchy("compare", "compare/base.json", "compare/missing.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("benchy compare: compare/missing.json: cannot read it")
    proc = benchy("compare", "scaling/1rank.json", "make_fixtures.py")
    assert proc.returncode == 2 and "benchy compare: make_fixtures.py: not a JSON file" in proc.stderr


def test_compare_old_and_new_versions_and_logs(tmp_path: Path) -> None:
    # A 0.1.0 file against this version's: both load; the change is what it is.
    proc = benchy("compare", "results/v1-0.1.0/benchy_result.json", "results/v2/benchy_result.json")
    assert proc.returncode in (0, 1) and proc.stdout.count("\n") == 7, proc.stderr
    # A log with summary lines only cannot be tested, and says why; a fall beyond the threshold is flagged.
    log = tmp_path / "sc21.log"
    log.write_text(SC21_LOG)
    assert benchy("parse", str(log), "-o", str(tmp_path / "sc21.json")).returncode == 0
    slower = SC21_LOG.replace("89.971 +/- 0.621", "70.000 +/- 0.621")
    (tmp_path / "slower.log").write_text(slower)
    assert benchy("parse", str(tmp_path / "slower.log"), "-o", str(tmp_path / "slower.json")).returncode == 0
    proc = benchy("compare", "sc21.json", "slower.json", cwd=tmp_path)
    assert proc.returncode == 0
    assert (
        "FULL          89.971 +/- 0.621 (?)    70.000 +/- 0.621 (?)  -22.20 %  -         -  not tested (base and "
        "new have fewer than 2 trial throughputs)" in proc.stdout
    )
    assert "WARNING: FULL fell -22.20 % but could not be tested" in proc.stdout


# --- report ----------------------------------------------------------------------------------

SCALING = """run          ranks  mode       samples/s     +/-  speedup  strong eff  weak eff  data wait
ddp 1 rank       1  IO           400.000   9.937    1.000       1.000     1.000
ddp 1 rank       1  SYNTHETIC    500.000  12.421    1.000       1.000     1.000
ddp 1 rank       1  FULL         100.000   2.484    1.000       1.000     1.000     30.0 %
ddp 2 ranks      2  IO           800.000   9.937    2.000       1.000     1.000
ddp 2 ranks      2  SYNTHETIC    980.000  12.421    1.960       0.980     0.980
ddp 2 ranks      2  FULL         190.000   2.484    1.900       0.950     0.950     35.0 %
ddp 4 ranks      4  IO          1600.000   9.937    4.000       1.000     1.000
ddp 4 ranks      4  SYNTHETIC   1900.000  12.421    3.800       0.950     0.950
ddp 4 ranks      4  FULL         360.000   2.484    3.600       0.900     0.900     42.0 %
baseline: ddp 1 rank (1 rank); weak scaling: the same batch per rank (32 samples) in every run; both efficiencies apply
"""


def test_report_scaling_table_csv_and_plot(tmp_path: Path) -> None:
    csv_path, png = tmp_path / "scaling.csv", tmp_path / "scaling.png"
    # Given in any order: rows by ranks, the smallest is the baseline.
    proc = benchy(
        "report", "scaling/4rank.json", "scaling/1rank.json", "scaling/2rank.json", "--csv", str(csv_path), "--plot", str(png)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == SCALING + f"wrote {csv_path}\nwrote {png}\n"
    rows = csv_path.read_text().splitlines()
    assert rows[0] == (
        "run,path,ranks,mode,mean,interval,n,speedup,strong_efficiency,weak_efficiency,data_wait,samples_per_rank_batch"
    )
    assert len(rows) == 10
    full4 = rows[9].split(",")
    assert full4[:4] == ["ddp 4 ranks", "scaling/4rank.json", "4", "FULL"]
    assert float(full4[4]) == 360.0 and float(full4[7]) == pytest.approx(3.6) and float(full4[8]) == pytest.approx(0.9)
    assert float(full4[10]) == 0.42 and float(full4[11]) == 32.0
    assert png_size(png) == (1000, 400) and png.stat().st_size > 10_000


def test_report_strong_scaling_runs_have_no_weak_efficiency(tmp_path: Path) -> None:
    # The same global batch split over 2 ranks: the per-rank work halves, so no weak-scaling pair.
    doc = json.loads((DATA / "scaling" / "2rank.json").read_text())
    for mode in ("IO", "SYNTHETIC", "FULL"):
        doc[mode]["trial_samples"] = [s // 2 for s in doc[mode]["trial_samples"]]
    (tmp_path / "strong2.json").write_text(json.dumps(doc))
    shutil.copy(DATA / "scaling" / "1rank.json", tmp_path / "1rank.json")
    proc = benchy("report", "1rank.json", "strong2.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ddp 2 ranks      2  FULL         190.000   2.484    1.900       0.950               35.0 %" in proc.stdout
    assert proc.stdout.endswith(
        "strong scaling: the same global batch (32 samples) split over the ranks; read the strong-scaling efficiency\n"
    )


def test_report_without_matplotlib_says_how_to_install_it(tmp_path: Path) -> None:
    proc = benchy("report", "scaling/1rank.json", "scaling/2rank.json", "--plot", str(tmp_path / "x.png"), block_matplotlib=True)
    assert proc.returncode == 2
    assert "benchy report: plots need matplotlib, which is not installed: pip install 'torch-benchy[plot]'" in proc.stderr
    assert proc.stdout.startswith("run ")  # the table still printed
    assert not (tmp_path / "x.png").exists()


# --- plot ------------------------------------------------------------------------------------


def test_plot_from_the_per_step_files(tmp_path: Path) -> None:
    png = tmp_path / "steps.png"
    proc = benchy("plot", "results/v2/benchy_result.json", "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"wrote {png} (from per-step files in {DATA}/results/v2/benchy_result.steps)\n"
    assert png_size(png) == (1200, 600) and png.stat().st_size > 20_000


def test_plot_of_a_file_without_per_step_files_uses_its_rates(tmp_path: Path) -> None:
    png = tmp_path / "rates.png"
    proc = benchy("plot", "results/v1-0.1.0/benchy_result.json", "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    assert "from the JSON's rates (counted trials only; x is the step number)" in proc.stdout
    assert png_size(png) == (1200, 600)


def test_plot_of_a_parsed_log_says_there_is_nothing_to_draw(tmp_path: Path) -> None:
    (tmp_path / "sc21.log").write_text(SC21_LOG)
    assert benchy("parse", "sc21.log", "-o", "sc21.json", cwd=tmp_path).returncode == 0
    proc = benchy("plot", "sc21.json", "-o", "x.png", cwd=tmp_path)
    assert proc.returncode == 2 and "benchy plot: it has no per-step data" in proc.stderr


def test_plot_timeline_draws_the_steps_at_their_times(tmp_path: Path) -> None:
    png = tmp_path / "timeline.png"
    proc = benchy("plot", "results/v3/benchy_result.json", "-o", str(png), "--timeline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"wrote {png}\n"
    assert png_size(png) == (1400, 600) and png.stat().st_size > 10_000
    proc = benchy("plot", "results/v2/benchy_result.json", "-o", str(png), "--timeline")
    assert proc.returncode == 2 and "has no timeline: it was written with schema version 2" in proc.stderr


# --- parse -----------------------------------------------------------------------------------


def test_parse_the_original_tools_summary(tmp_path: Path) -> None:
    (tmp_path / "sc21.log").write_text(SC21_LOG)
    proc = benchy("parse", "sc21.log", "-o", "sc21.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "wrote sc21.json (sc21: IO 0 trials, SYNTHETIC 0 trials, FULL 0 trials)\n"
    doc = json.loads((tmp_path / "sc21.json").read_text())
    assert doc["source"] == "log" and doc["run_name"] == "sc21" and doc["complete"] is True
    assert (doc["IO"]["mean"], doc["SYNTHETIC"]["mean"], doc["FULL"]["mean"]) == (89.177, 376.537, 89.971)
    assert (doc["IO"]["interval"], doc["SYNTHETIC"]["interval"], doc["FULL"]["interval"]) == (1.011, 0.604, 0.621)
    assert doc["FULL"]["n"] is None
    summary = benchy("summary", "sc21.json", cwd=tmp_path)
    assert summary.stdout == "".join(line + "\n" for line in SC21_LOG.splitlines()[2:])


@pytest.mark.parametrize("name", ["v1-0.1.0", "v1-2ranks", "v2"])
def test_parse_benchys_own_log_gives_the_json_s_numbers(tmp_path: Path, name: str) -> None:
    log = DATA / "results" / name / "log.txt"
    out = tmp_path / "parsed.json"
    proc = benchy("parse", str(log), "-o", str(out), "--name", "from the log")
    assert proc.returncode == 0, proc.stderr
    parsed = json.loads(out.read_text())
    real = json.loads((DATA / "results" / name / "benchy_result.json").read_text())
    assert parsed["nranks"] == real["nranks"] and parsed["run_name"] == "from the log"
    for mode in ("IO", "SYNTHETIC", "FULL"):
        assert parsed[mode]["trial_throughput"] == [round(v, 3) for v in real[mode]["trial_throughput"]]
        assert parsed[mode]["mean"] == round(real[mode]["mean"], 3)
        assert len(parsed[mode]["warmup"]["trial_throughput"]) == len(real[mode]["warmup"]["trial_throughput"])
    if real.get("FULL", {}).get("data_wait"):
        assert parsed["FULL"]["data_wait"]["mean"] == pytest.approx(real["FULL"]["data_wait"]["mean"], abs=5e-4)
    assert parsed["verdict"] == real["verdict"]
    # The parsed file feeds compare: the same run, no change.
    proc = benchy("compare", str(DATA / "results" / name / "benchy_result.json"), str(out))
    assert proc.returncode == 0 and proc.stdout.count("no significant change") == 3, proc.stdout


def test_parse_picks_a_run_of_a_log_with_several(tmp_path: Path) -> None:
    first = (DATA / "results" / "v1-0.1.0" / "log.txt").read_text()
    second = (DATA / "results" / "v2" / "log.txt").read_text()
    # A launcher's prefix before every line, as torchrun --tee or a timestamping CI runner adds.
    prefixed = "".join(f"[default0]:{line}\n" for line in (first + second).splitlines())
    (tmp_path / "two.log").write_text(prefixed)
    last = json.loads(benchy("parse", "two.log", cwd=tmp_path).stdout)
    one = json.loads(benchy("parse", "two.log", "--run", "1", cwd=tmp_path).stdout)
    v010 = json.loads((DATA / "results" / "v1-0.1.0" / "benchy_result.json").read_text())
    v2 = json.loads((DATA / "results" / "v2" / "benchy_result.json").read_text())
    assert one["FULL"]["mean"] == round(v010["FULL"]["mean"], 3)
    assert last["FULL"]["mean"] == round(v2["FULL"]["mean"], 3)
    proc = benchy("parse", "two.log", "--run", "3", cwd=tmp_path)
    assert proc.returncode == 2 and "two.log: it holds 2 run(s); asked for run 3" in proc.stderr


def test_parse_a_log_without_benchy_lines_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_text("epoch 1\nepoch 2\n")
    proc = benchy("parse", "empty.log", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == "benchy parse: empty.log: no BENCHY:: trial or summary lines in it\n"


# --- summary ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt,expected",
    [
        (
            "text",
            """BENCHY::SUMMARY::IO average trial throughput: 1000.000 +/- 24.841
BENCHY::SUMMARY::SYNTHETIC average trial throughput: 2000.000 +/- 49.683
BENCHY::SUMMARY::FULL average trial throughput: 800.000 +/- 4.968
""",
        ),
        (
            "csv",
            """run,mode,mean,interval,n,confidence,data_wait
nightly 2026-11-21,IO,1000.0,24.841377117504976,3,0.95,
nightly 2026-11-21,SYNTHETIC,2000.0,49.68275423500995,3,0.95,
nightly 2026-11-21,FULL,800.0,4.968275423500995,3,0.95,0.3
""",
        ),
        (
            "markdown",
            """### benchy: nightly 2026-11-21 (1 rank)

| mode | samples/s | +/- | trials | confidence | data wait |
|---|---:|---:|---:|---:|---:|
| IO | 1000.000 | 24.841 | 3 | 95 % |  |
| SYNTHETIC | 2000.000 | 49.683 | 3 | 95 % |  |
| FULL | 800.000 | 4.968 | 3 | 95 % | 30.0 % |
""",
        ),
    ],
)
def test_summary_formats(fmt: str, expected: str) -> None:
    proc = benchy("summary", "compare/base.json", "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_summary_json_and_old_versions() -> None:
    proc = benchy("summary", "results/v1-0.1.0/benchy_result.json", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 1 and doc["run_name"] == "user_script 2026-11-23T01:35:03Z"
    assert doc["modes"]["FULL"]["n"] == 3 and len(doc["modes"]["FULL"]["trial_throughput"]) == 3
    # A 0.1.0 file has no stored lines: they are rebuilt, the verdict with them.
    text = benchy("summary", "results/v1-0.1.0/benchy_result.json").stdout.splitlines()
    assert text[0] == "BENCHY::SUMMARY::IO average trial throughput: 799.002 +/- 48.909"
    assert text[3].startswith("BENCHY::SUMMARY::VERDICT data loading limits training")
    # Later files reprint the lines exactly as the run printed them.
    real = (DATA / "results" / "v2" / "log.txt").read_text().splitlines()
    printed = [line for line in real if line.startswith("BENCHY::SUMMARY::")]
    assert benchy("summary", "results/v2/benchy_result.json").stdout.splitlines() == printed


def test_summary_names_a_file_from_a_newer_benchy(tmp_path: Path) -> None:
    (tmp_path / "future.json").write_text('{"schema_version": 7}')
    proc = benchy("summary", "future.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "benchy summary: future.json: schema_version 7 was written by a newer benchy; this benchy "
        "reads versions 1 to 6: upgrade benchy to read it\n"
    )


def test_run_name_flag_reaches_the_json(run_script) -> None:
    from helpers import small_config

    run = run_script(
        small_config(nbatches=4, ntrials=2, nwarmup=0),
        "--loader",
        "plain",
        "--enable_benchy",
        "--benchy_name",
        "nightly cpu",
        "--epochs",
        "8",
        env={"BENCHY_RUN_NAME": "from env"},
    )
    assert run.returncode == 0, run.stderr
    assert run.result()["run_name"] == "nightly cpu" and run.result()["schema_version"] == 6


def test_the_command_and_load_do_not_import_torch() -> None:
    # A CI job comparing two files should not pay for importing torch (about 2 s).
    code = (
        "import sys, benchy\nfrom benchy.cli.main import main\n"
        "status = main(['compare', 'compare/base.json', 'compare/noise.json'])\n"
        "benchy.load('results/v1-0.1.0/benchy_result.json')\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))[:5]\n"
        "benchy.BenchmarkDataLoader  # the wrappers still come on first use\n"
        "assert 'torch' in sys.modules\nsys.exit(status)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=DATA, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# --- benchy check: a CI job's status from a result file ---------------------------------------------------


def test_check_exits_with_the_status_the_run_advises_then_the_verdict_and_baseline(tmp_path: Path) -> None:
    run = DATA / "results" / "v4" / "benchy_result.json"  # a complete run, its verdict "data loading limits training"
    done = benchy("check", str(run))
    assert done.returncode == 0 and done.stdout == f"benchy check: {run} holds a complete run\n", done
    doc = json.loads(run.read_text())
    for status, changes in ((4, {"complete": False, "exit_status": 4}), (3, {"exit_status": 3})):
        path = tmp_path / f"advised-{status}.json"
        path.write_text(json.dumps(dict(doc, **changes)))
        found = benchy("check", str(path))
        assert found.returncode == status, found
    assert "holds an incomplete run (" in benchy("check", str(tmp_path / "advised-4.json")).stdout
    # An older file without exit_status: its `complete` decides.
    older = tmp_path / "older.json"
    older.write_text(json.dumps(dict(doc, complete=False, exit_status=None)))
    assert benchy("check", str(older)).returncode == 4
    # The verdict against a regular expression, the modes against a baseline (benchy compare's rule): 1.
    matched = benchy("check", str(run), "--fail-on-verdict", "^data loading limits training")
    assert matched.returncode == 1 and "the verdict matches --fail-on-verdict '^data loading limits training'" in matched.stdout
    assert benchy("check", str(run), "--fail-on-verdict", "^compute").returncode == 0
    regressed = benchy("check", str(DATA / "compare" / "regressed.json"), "--baseline", str(DATA / "compare" / "base.json"))
    assert regressed.returncode == 1 and "benchy check: REGRESSION: " in regressed.stdout, regressed
    noise = benchy("check", str(DATA / "compare" / "noise.json"), "--baseline", str(DATA / "compare" / "base.json"))
    assert noise.returncode == 0, noise
    # Bad input: the file or the expression named, status 2.
    missing = benchy("check", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "nope.json" in missing.stderr
    bad = benchy("check", str(run), "--fail-on-verdict", "(")
    assert bad.returncode == 2 and "--fail-on-verdict '(': not a regular expression" in bad.stderr


def test_check_fails_on_a_watched_rise_with_fail_on_watch(tmp_path: Path) -> None:
    steady = DATA / "results" / "v6" / "benchy_result.json"  # 33 epochs watched after the schedule, none rose
    passed = benchy("check", str(steady), "--fail-on-watch")
    assert passed.returncode == 0 and "no rise of the data wait (--fail-on-watch): 33 epoch(s) watched" in passed.stdout
    doc = json.loads(steady.read_text())
    watch = doc["watch"]
    epochs = [dict(e, data_wait=0.95, rise=True) if e["epoch"] >= 20 else e for e in watch["epochs"]]
    rose = dict(watch, epochs=epochs, rises=sum(e["rise"] for e in epochs), first_rise=20)
    path = tmp_path / "rose.json"
    path.write_text(json.dumps(dict(doc, watch=rose)))
    failed = benchy("check", str(path), "--fail-on-watch")
    assert failed.returncode == 1 and "the watch saw the data wait rise (--fail-on-watch)" in failed.stdout, failed
    assert "from epoch 20" in failed.stdout
    assert benchy("check", str(path)).returncode == 0  # only on request
    older = benchy("check", str(DATA / "results" / "v5" / "benchy_result.json"), "--fail-on-watch")
    assert older.returncode == 0 and "no epoch was watched after the schedule" in older.stdout
