"""`dvc plots show` renders offline: Vega comes from node_modules, and every plot with data draws marks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_humaneval_browser import _wait, browser  # noqa: F401 - the Chromium fixture

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.browser

MARKS = ".mark-line path, .mark-symbol path, .mark-rect path"


def _dvc(*args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_every_plot_renders_offline_with_marks(tmp_path, browser):  # noqa: F811
    assert (ROOT / "node_modules" / "vega" / "build" / "vega.min.js").exists(), (
        "run scripts/bootstrap.sh (npm ci)"
    )
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")  # the template's ../node_modules
    _dvc("plots", "show", "-o", str(tmp_path / "dvc_plots"))
    page_html = (tmp_path / "dvc_plots" / "index.html").read_text(encoding="utf-8")
    assert "cdn.jsdelivr" not in page_html and "http" not in page_html.split("<body>")[0].replace(
        "http-equiv", ""
    )
    data = json.loads(_dvc("plots", "show", "--json"))["data"]
    images = [name for name, entry in data.items() if entry and entry[0]["type"] == "image"]
    rows = {  # vega plots by their data rows (a plot whose file is empty has no entry)
        name: len(entry[0]["content"]["data"]["values"]) if entry else 0
        for name, entry in data.items()
        if not entry or entry[0]["type"] == "vega"
    }
    _, page = browser
    page.call("Page.navigate", url=(tmp_path / "dvc_plots" / "index.html").as_uri())
    _wait(lambda: page.js("document.readyState === 'complete'"))
    _wait(lambda: page.js(f"document.querySelectorAll('svg.marks').length === {len(rows)}"))
    marks = page.js(
        "Object.fromEntries([...document.querySelectorAll('svg.marks')].map((svg) => "
        f"[svg.closest('[id]').id, svg.querySelectorAll({json.dumps(MARKS)}).length]))"
    )
    assert len(marks) == len(rows)
    drawn = {name: n for name, n in marks.items() if n}
    # the length-bucket plots: one line per model (3) plus a point per bucket and model
    buckets = [n for name, n in drawn.items() if "source_length" in name]
    assert len(buckets) == 2 and all(n > 3 for n in buckets)
    assert len(drawn) == sum(1 for n in rows.values() if n)  # every plot with data drew marks
    loaded = page.js("[...document.images].filter((i) => i.complete && i.naturalWidth > 0).length")
    assert images and loaded == len(images)  # the report PNGs
