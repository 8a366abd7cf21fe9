"""Self-contained HTML forms (offline, export CSV), a spreadsheet export and the manifest."""

from __future__ import annotations

import datetime
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import jinja2

from medsimp import resources
from medsimp.atomic import write_json
from medsimp.csvcells import cell_escape
from medsimp.humaneval.schema import CSV_COLUMNS, Question, expected

_EPOCH = datetime.datetime(2000, 1, 1)
TEMPLATE = resources.path("humaneval/form.html.j2")
INSTRUCTIONS = {
    # Yang et al. (2024), Fig. 5 (expert) and Fig. 1 (layperson), in their words
    "expert": "Given an original radiology sentence and different simplifications from ChatGPT, "
    "you are asked to type a 1-5 Likert scale score for each aspect of each simplification. "
    "1 - strongly disagree, 2 - disagree, 3 - neutral, 4 - agree, 5 - strongly agree. "
    "For each original sentence, also rate the severity of the described medical condition "
    "and whether laypeople can understand the sentence.",
    "layperson": "Given a radiology sentence, please answer the following questions. Then, given "
    "the same radiology sentence and a simplification, re-answer Q1-Q3 and answer Q4. Finally, "
    "given all simplifications, please answer the following questions.",
    "multicochrane": "Rate every simplified version (Joseph et al. 2023, App. A): factuality and "
    "fluency from 0 (completely factual / no issues) to 2 (severe errors), and "
    "simplicity from -2 (heavily oversimplified) through 0 (ideal) to +2 "
    "(heavily under-simplified).",
}


def _question(item_id: str, stage: str, system: str, q: Question, letters: dict[str, str]) -> dict:
    options = [[v, label] for v, label in q.options]
    if q.kind == "set":
        options = [[s, f"Version {letters[s]}"] for s in letters]
    return {
        "item_id": item_id,
        "stage": stage,
        "system": system,
        "qid": q.qid,
        "prompt": q.prompt,
        "kind": q.kind,
        "options": options,
        "required": q.required,
    }


def form_spec(manifest: dict, form: str, rater_id: str = "") -> dict[str, Any]:
    """The blocks (texts + questions) of one form page, in page order."""
    items = {it["item_id"]: it for it in manifest["items"]}
    blocks: list[dict[str, Any]] = []
    for iid, stage, system, q in expected(manifest, form, rater_id):
        item = items[iid]
        order = manifest["preference_order"][iid]
        letters = {s: chr(ord("A") + i) for i, s in enumerate(order)}
        key = (iid, stage, system if form != "layperson" else "")
        if not blocks or blocks[-1]["key"] != list(key):
            n = len([b for b in blocks if b["item_id"] == iid]) if form == "layperson" else 0
            texts = [{"label": "Original", "text": item["source"]}]
            heading = f"Sentence {iid}"
            if stage == "simplified" and form == "layperson":
                texts.append({"label": "Simplified", "text": item["outputs"][system]})
                heading += " - with a simplified version"
            elif stage == "simplified":
                texts.append({"label": f"Version {letters[system]}", "text": item["outputs"][system]})
                heading += f" - version {letters[system]}"
            elif stage == "preference":
                texts += [{"label": f"Version {letters[s]}", "text": item["outputs"][s]} for s in order]
                heading += " - all versions"
            blocks.append(
                {
                    "key": list(key),
                    "item_id": iid,
                    "heading": heading,
                    "texts": texts,
                    "gate": form == "layperson" and n > 0,
                    "questions": [],
                }
            )
        blocks[-1]["questions"].append(_question(iid, stage, system, q, letters))
    for b in blocks:
        del b["key"], b["item_id"]
    return {"form": form, "rater_id": rater_id, "blocks": blocks}


def render_html(manifest: dict, form: str, rater_id: str = "") -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    spec = json.dumps(form_spec(manifest, form, rater_id), ensure_ascii=False, sort_keys=True)
    spec = spec.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    title = f"{form.capitalize()} evaluation" + (f" - rater {rater_id}" if rater_id else "")
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        title=title,
        instructions=INSTRUCTIONS[form],
        rater_id=rater_id,
        spec_json=jinja2.utils.markupsafe.Markup(spec),
    )


def write_workbook(manifest: dict, path: Path) -> None:
    """forms.xlsx: an `items` sheet and one sheet per form/rater with blank answers and
    drop-down validation; save a sheet as CSV to ingest it."""
    from openpyxl import Workbook
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = Workbook()
    ws = wb.active
    ws.title = "items"
    ws.append(["item_id", "source", *manifest["systems"]])
    for it in manifest["items"]:
        ws.append(
            [
                cell_escape(v)
                for v in (it["item_id"], it["source"], *[it["outputs"][s] for s in manifest["systems"]])
            ]
        )
    sheets = [("expert", ""), ("multicochrane", "")]
    sheets += [("layperson", r) for r in sorted(manifest["layperson_assignment"])]
    for form, rater in sheets:
        sh = wb.create_sheet(f"{form}-{rater}" if rater else form)
        sh.append([*CSV_COLUMNS, "prompt", "allowed"])
        for row, (iid, stage, system, q) in enumerate(expected(manifest, form, rater), start=2):
            allowed = {
                "scale": ",".join(str(v) for v in q.values()),
                "set": "|".join(manifest["systems"]),
                "text": "free text",
            }[q.kind]
            sh.append(
                [cell_escape(v) for v in (form, rater, iid, stage, system, q.qid, None, q.prompt, allowed)]
            )
            if q.kind == "scale":
                dv = DataValidation(type="list", formula1=f'"{allowed}"', allow_blank=not q.required)
                sh.add_data_validation(dv)
                dv.add(f"G{row}")
    wb.properties.created = wb.properties.modified = _EPOCH
    buf = io.BytesIO()
    wb.save(buf)
    _write_stable_zip(buf.getvalue(), path)


def _write_stable_zip(data: bytes, path: Path) -> None:
    """Rewrite a zip with fixed entry timestamps (and the save time openpyxl stamps into
    docProps/core.xml) so reruns are byte-identical."""
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>2000-01-01T00:00:00Z", body)
            dst.writestr(fixed, body)


def write_forms(manifest: dict, out: Path) -> list[str]:
    """manifest.json, expert.html, multicochrane.html, layperson-<rater>.html, forms.xlsx."""
    write_json(out / "manifest.json", manifest)
    files = ["expert.html", "multicochrane.html"]
    (out / "expert.html").write_text(render_html(manifest, "expert"), encoding="utf-8")
    (out / "multicochrane.html").write_text(render_html(manifest, "multicochrane"), encoding="utf-8")
    for rater in sorted(manifest["layperson_assignment"]):
        name = f"layperson-{rater}.html"
        (out / name).write_text(render_html(manifest, "layperson", rater), encoding="utf-8")
        files.append(name)
    write_workbook(manifest, out / "forms.xlsx")
    return files + ["forms.xlsx", "manifest.json"]
