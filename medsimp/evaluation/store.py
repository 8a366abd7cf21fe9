"""`medsimp evaluate files` with files in an object store: `--hyp`, `--ref` and `--src` may be
`s3://` files, read from a local copy (`pipelines.jobs.objstore.download`: the published run
when the URL is under a prefix a medsimp command published to); `--json`, `--sentence-level`
and `--report` may be `s3://` files of one folder, written in a local scratch folder, then
uploaded to a fresh run prefix of that folder and published whole (`objstore.publish`; a reader
follows its `.medsimp-output` marker: `objstore.download("s3://b/eval/scores.json", ...)`).

What may go there (docs/refresh.md "Outputs in an object store"), checked before the store is
written: an input whose lineage is known (a file in a medsimp output folder or published
prefix, a builder's card and tables, MedLane, which is MIMIC-derived) must be public data, and
so must any input in a medsimp output; a plain text file outside every medsimp output
(`objstore.in_output`: the user's own system outputs and references) passes, and the marker
then records `unknown`, since the scores, the per-line scores and a report without
`--report-text` carry numbers and system names, no text. A report with `--report-text` carries
text: then every input must be of known public lineage. A refusal is one line, exit 2, and
nothing is written to the store.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from medsimp import lineage
from medsimp.atomic import current_command, is_url
from medsimp.errors import MedsimpError, UsageError
from medsimp.report.data import read_card

if TYPE_CHECKING:
    from medsimp.evaluation.files import FilesRequest, Scored
    from medsimp.params_schema import Beam

TEXT_FLAGS = ("--hyp", "--ref", "--src")  # the inputs that may be s3:// files


def inputs_of(request: FilesRequest) -> list[tuple[str, str]]:
    """(flag, path) of every input `request` names."""
    against = request.against
    named = [("--hyp", path) for _, path in request.systems] + [("--ref", r) for r in against.refs]
    named += [(flag, path) for flag, path in (("--src", against.src), ("--medlane", against.medlane),
              ("--dataset", against.dataset)) if path]  # fmt: skip
    return named


def outputs_of(request: FilesRequest) -> dict[str, str]:
    """Output flag -> URL of every output `request` names in an object store."""
    named = (
        ("--json", request.json),
        ("--sentence-level", request.sentence_level),
        ("--report", request.report),
    )
    return {flag: path for flag, path in named if path and is_url(path)}


def uses_store(request: FilesRequest) -> bool:
    return bool(outputs_of(request)) or any(is_url(path) for _, path in inputs_of(request))


def _folder(outputs: dict[str, str], inputs: list[tuple[str, str]]) -> str:
    """The one folder the object-store outputs are published in (each file's parent), after
    checking that their names differ and that it holds no input (its old runs are deleted)."""
    folders = {flag: url.rsplit("/", 1) for flag, url in outputs.items()}
    shown = ", ".join(f"{flag} {url}" for flag, url in outputs.items())
    if any(not parts[1] or parts[0].endswith(":/") for parts in folders.values()):
        raise UsageError(f"{shown}: name a file in a bucket (s3://bucket/folder/scores.json)")
    if len({parts[0] for parts in folders.values()}) > 1:
        raise UsageError(
            f"{shown}: the object-store outputs of one command go in one folder (published together)"
        )
    if len({parts[1] for parts in folders.values()}) < len(folders):
        raise UsageError(f"{shown}: name one file: one output would replace the other; give each its own")
    folder = next(iter(folders.values()))[0]
    for flag, path in inputs:
        if path.startswith(folder + "/"):
            raise UsageError(
                f"{shown}: its folder {folder} holds the input {flag} {path}; write to another folder"
            )
    return folder


def check_lineage(request: FilesRequest, folder: str, flag: str) -> list[str]:
    """The lineage tags the published folder records (module docstring), or one line, exit 2,
    before the store is written: MedLane, a MIMIC-derived builder (its card), an input whose
    recorded lineage is not public, or with `--report-text` any input of unknown lineage."""
    from pipelines.jobs import objstore

    text = bool(request.report and is_url(request.report) and request.report_text)
    local_only = f"{flag} {folder}: this output goes to local folders only"
    against = request.against
    if against.medlane:
        raise UsageError(
            f"{local_only}: its input --medlane {against.medlane} is MedLane, MIMIC-derived (lineage: "
            f"{lineage.MIMIC_III}); MIMIC-derived text never leaves the machine (docs/refresh.md)"
        )
    if against.dataset and (read_card(Path(against.dataset)).get("medsimp") or {}).get("mimic_derived", True):
        raise UsageError(
            f"{local_only}: the builder --dataset {against.dataset} is MIMIC-derived (its card); "
            "MIMIC-derived text never leaves the machine (docs/refresh.md)"
        )
    named = inputs_of(request)
    stdin = [f for f, path in named if path == "-"]
    if stdin and text:
        raise UsageError(
            f"{local_only}: --report-text puts text in the report, and {stdin[0]} - (standard input) "
            "records no lineage (docs/refresh.md)"
        )
    try:
        tags = objstore.check_public(folder, [(f, p) for f, p in named if p != "-"], flag, not text)
    except UsageError as exc:
        raise UsageError(f"{exc}{'; --report-text puts its text in the report' if text else ''}") from None
    return lineage.marker_tags(None) if stdin else tags


def evaluate_in_store(
    request: FilesRequest, beam: Beam | None, evaluate: Callable[[FilesRequest], Scored]
) -> Scored:
    """`evaluate(request)` on local copies of its object-store inputs, its object-store outputs
    written locally, then published in their folder (module docstring); `beam`: params `beam`
    (how the store is reached)."""
    from pipelines.jobs import objstore
    from pipelines.jobs.store import check_store

    outputs, named = outputs_of(request), inputs_of(request)
    for flag, path in named:
        if is_url(path) and flag not in TEXT_FLAGS:
            raise UsageError(f"{flag} {path}: a local path only; {', '.join(TEXT_FLAGS)} may be s3:// files")
    folder = _folder(outputs, named) if outputs else ""
    objstore.stage_input(beam, (), {})  # the store reached with the params' Beam options
    tags = check_lineage(request, folder, next(iter(outputs))) if outputs else []  # before any write
    with tempfile.TemporaryDirectory(prefix="medsimp-evaluate-") as scratch:
        local: dict[str, str] = {}
        for n, (flag, url) in enumerate((f, p) for f, p in named if is_url(p) and p not in local):
            check_store(url, flag)  # its bucket answers, in bounded time
            local[url] = objstore.download(url, os.path.join(scratch, "in", str(n)), flag)
            if os.path.isdir(local[url]):
                raise UsageError(f"{flag} {url}: a folder in the store; name its files (one per {flag})")
        built = os.path.join(scratch, "out")
        here = {url: os.path.join(built, url.rsplit("/", 1)[1]) for url in outputs.values()}
        against = request.against
        copy = replace(
            request,
            systems=[(name, local.get(path, path)) for name, path in request.systems],
            against=replace(
                against,
                refs=tuple(local.get(r, r) for r in against.refs),
                src=local.get(against.src, against.src) if against.src else None,
            ),
            json=here.get(request.json or "", request.json),
            sentence_level=here.get(request.sentence_level or "", request.sentence_level),
            report=here.get(request.report or "", request.report),
        )
        if not outputs:
            return _named(evaluate, copy, local, here)
        with objstore.publish(folder, current_command(), tags, flag=next(iter(outputs))) as prefix:
            scored = _named(evaluate, copy, local, here)
            objstore.upload(built, prefix)
        return scored


def _named(
    evaluate: Callable[[FilesRequest], Scored],
    copy: FilesRequest,
    local: dict[str, str],
    here: dict[str, str],
) -> Scored:
    """`evaluate(copy)`, its one-line errors naming the URLs, not the local copies."""
    try:
        return evaluate(copy)
    except MedsimpError as exc:
        message = str(exc)
        for url, path in sorted({**local, **here}.items(), key=lambda item: -len(item[1])):
            message = message.replace(path, url)
        raise type(exc)(message) from None
