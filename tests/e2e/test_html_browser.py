"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
which ``.ci/run`` installs) opens the page ``benchy report --html`` wrote from stored real runs, from
a file, with the network off. The test reads the rendered text (every run's verdict is on screen), checks
that every plot loaded and is drawn (an image of the expected size with the plot's colours, not a blank
or broken box), and takes a screenshot of the whole page.

Without Chromium the test is skipped on a developer's machine and fails in CI (``CI`` set), where it
must run. ``BENCHY_REPORT_SCREENSHOT=docs/report-page.png`` keeps the page's first screens (the README's
picture).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, List

import numpy as np
import pytest
from helpers import ROOT

STORED = ROOT / "tests" / "data" / "results"
RUNS = [
    STORED / "v4" / "benchy_result.json",
    STORED / "v4-2ranks" / "benchy_result.json",
    STORED / "v4-sweep" / "benchy_result.json",
]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH = 1400
KEPT_HEIGHT = 2500  # of the screenshot kept with BENCHY_REPORT_SCREENSHOT
# The modes' colours in the plots (benchy.results.plots.COLORS): a drawn plot holds some of them.
MODE_RGB = [(0x1F, 0x77, 0xB4), (0x2C, 0xA0, 0x2C), (0xD6, 0x27, 0x28)]


def _missing() -> List[str]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    return missing


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    missing = _missing()
    if missing:
        message = f"the browser test needs {', '.join(missing)} (.ci/run installs Debian's chromium and chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--window-size={WIDTH},1000",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(flag)
    # Chromium's profile and temporary folders under the test's own directory, not left in the system's /tmp.
    scratch = tmp_path_factory.mktemp("chromium")
    options.add_argument(f"--user-data-dir={scratch / 'profile'}")
    service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": str(scratch)})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "benchy", "report", *map(str, RUNS), "--html", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_browser_shows_every_verdict_and_draws_every_plot(browser: Any, page: Path, tmp_path: Path) -> None:
    from PIL import Image
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    assert browser.title.startswith("benchy report: 3 runs")
    # What the page shows, as rendered (innerText is the visible text, laid out), not the file's bytes.
    shown = browser.find_element(By.TAG_NAME, "body").text
    verdicts = browser.find_elements(By.CLASS_NAME, "verdict")
    assert len(verdicts) == len(RUNS)
    for run, box in zip(RUNS, verdicts):
        verdict = json.loads(run.read_text())["verdict"]
        assert " ".join(verdict.split()) in " ".join(box.text.split())
        assert box.is_displayed() and box.size["height"] > 40
    assert "Scaling" in shown and "Loader sweep (IO trials per setting)" in shown
    assert "System metrics" in shown

    images = browser.find_elements(By.TAG_NAME, "img")
    assert len(images) == 1 + 2 * len(RUNS)  # scaling, then each run's per-step plot and timeline
    for image in images:
        alt = image.get_attribute("alt")
        loaded = browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image)
        assert loaded and loaded >= 1000, f"{alt}: not loaded (naturalWidth {loaded})"
        browser.execute_script("arguments[0].scrollIntoView()", image)
        shot = Image.open(io.BytesIO(image.screenshot_as_png)).convert("RGB")
        assert shot.width > 500 and shot.height > 200, f"{alt}: drawn at {shot.size}"
        # Drawn, not blank: many colours, a fair share of non-white pixels, and the modes' line colours.
        pixels = np.asarray(shot, dtype=np.int32).reshape(-1, 3)
        colours = len(np.unique(pixels, axis=0))
        inked = float(np.mean(pixels.min(axis=1) < 235))
        mode_pixels = int(sum(np.sum(np.abs(pixels - np.array(c)).sum(axis=1) < 60) for c in MODE_RGB))
        assert colours > 50 and inked > 0.03 and mode_pixels > 100, (
            f"{alt}: looks blank ({colours} colours, {100 * inked:.1f} % inked, {mode_pixels} mode-coloured pixels)"
        )

    # The whole page, as the README shows it.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(WIDTH, min(int(height) + 100, 16000))
    browser.execute_script("window.scrollTo(0, 0)")
    whole = tmp_path / "report-page.png"
    browser.save_screenshot(str(whole))
    with Image.open(whole) as shot:
        assert shot.width >= WIDTH - 20 and shot.height >= 2000
    keep = os.environ.get("BENCHY_REPORT_SCREENSHOT")
    if keep:  # the page's first screens, in a 256-colour palette (the README's picture)
        with Image.open(whole) as shot:
            top = shot.convert("RGB").crop((0, 0, shot.width, min(shot.height, KEPT_HEIGHT)))
            top.quantize(colors=256).save(keep, format="PNG", optimize=True)


def test_the_page_asks_for_nothing_over_the_network(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())
    # Every resource the page loaded: nothing but the page itself (the images are data: URIs).
    entries = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert [e for e in entries if not e.startswith("data:")] == []
