"""Reader for MedLane-format annotation files (Luo et al., COLING 2022).

Training files: records of 3 lines (source, target, second-person target)
separated by a blank line. Evaluation files: a source line then up to 4
reference lines prefixed `1 `..`4 `, with terms annotated inline as
`abbr[full form]`. Real files have records with only 2 references, prefixes
glued to the first word (`170 yo` = prefix `1` + `70 yo`) and trailing blank
lines; all of these parse. Records that cannot be parsed raise
`MedLaneFormatError`, or are appended to `rejects` when a list is given (each
record and reject carries `ordinal`, its 0-based position among the file's
records, so outputs stay line-aligned). The authors' full test file also has
reference lines without any prefix, and records of two unprefixed lines: these
are rejected here (`bad_reference_prefix`). `read_medlane_authors` reads a file
the way the authors' scorer does instead (docs/metrics.md).

MedLane text derives from MIMIC-III: errors and rejects carry file:line
locators and lengths, never the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from medsimp.text.medlane_refs import TERM_RE  # `abbr[full form]`, one definition

# A reference line: prefix 1-4, then an optional space (real files glue some prefixes).
REF_RE = re.compile(r"^([1-4]) ?(.*)$")
MAX_REFERENCES = 4


class MedLaneFormatError(ValueError):
    """A MedLane record that cannot be parsed (message holds a locator, never text)."""


def _read_text(path: Path) -> str:
    """The file as text (a BOM dropped); a byte that is not UTF-8 is one clear error."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MedLaneFormatError(f"{path.name}: byte {exc.start} is not UTF-8") from None


def _blocks(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(1-based line of the first line, lines) for each blank-line separated block."""
    block: list[str] = []
    start = 0
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        line = line.rstrip()
        if not line.strip():
            if block:
                yield start, block
                block = []
            continue
        if not block:
            start = number
        block.append(line.strip())
    if block:
        yield start, block


def _fail(
    rejects: list[dict] | None, path: Path, line: int, reason: str, detail: str, ordinal: int | None = None
) -> None:
    reject: dict[str, Any] = {
        "source": "medlane",
        "locator": f"{path.name}:{line}",
        "reason": reason,
        "detail": detail,
    }
    if ordinal is not None:
        reject["ordinal"] = ordinal
    if rejects is None:
        raise MedLaneFormatError(f"{reject['locator']}: {reason} ({detail})")
    rejects.append(reject)


def expand_terms(text: str) -> str:
    """Replace each `abbr[full form]` by its full form (as MedLane's scorer does)."""
    return TERM_RE.sub(lambda m: m.group(2).strip(), text)


def find_terms(text: str) -> list[dict[str, str]]:
    """The `abbr[full form]` annotations of one line, in order."""
    return [{"abbreviation": m.group(1), "expansion": m.group(2).strip()} for m in TERM_RE.finditer(text)]


def read_medlane_train(path: str | Path, rejects: list[dict] | None = None) -> list[dict[str, Any]]:
    """Training records: `{line, source, target, target_second_person}` (line is 1-based)."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    for line, block in _blocks(path):
        if len(block) != 3:
            _fail(rejects, path, line, "wrong_line_count", f"{len(block)} lines, expected 3")
            continue
        records.append(
            {"line": line, "source": block[0], "target": block[1], "target_second_person": block[2]}
        )
    return records


def read_medlane_eval(path: str | Path, rejects: list[dict] | None = None) -> list[dict[str, Any]]:
    """Evaluation records.

    Each is `{line, source, references, reference_labels, raw_references, terms}`:
    `references` have annotations replaced by their full forms, `raw_references`
    keep them, `reference_labels` are the 1-4 prefixes as written, and `terms`
    lists `{abbreviation, expansion, reference_index}` (0-based position in
    `references`).
    """
    path = Path(path)
    records: list[dict[str, Any]] = []
    for ordinal, (line, block) in enumerate(_blocks(path)):
        refs = block[1:]
        if not 1 <= len(refs) <= MAX_REFERENCES:
            _fail(
                rejects,
                path,
                line,
                "wrong_reference_count",
                f"{len(refs)} references, expected 1-{MAX_REFERENCES}",
                ordinal,
            )
            continue
        matches = [REF_RE.match(r) for r in refs]
        bad = [i for i, m in enumerate(matches) if m is None or not m.group(2).strip()]
        if bad:
            _fail(
                rejects,
                path,
                line + bad[0] + 1,
                "bad_reference_prefix",
                f"reference line of length {len(refs[bad[0]])} lacks a 1-4 prefix or text",
                ordinal,
            )
            continue
        raw = [m.group(2).strip() for m in matches if m]
        terms = [{**t, "reference_index": i} for i, r in enumerate(raw) for t in find_terms(r)]
        records.append(
            {
                "line": line,
                "ordinal": ordinal,
                "source": block[0],
                "references": [expand_terms(r) for r in raw],
                "reference_labels": [int(m.group(1)) for m in matches if m],
                "raw_references": raw,
                "terms": terms,
            }
        )
    return records


def read_medlane_authors(path: str | Path) -> tuple[list[dict[str, Any]], list[dict]]:
    """An evaluation file read as the authors' scorer reads it (`bleu_eval_new.py`:
    `get_score` and `obtain`), step by step.

    The whole text is lowercased and split on `"\n\n"`; the first `len(blocks) // 2`
    blocks (a trailing empty block counts) are the validation half, the rest the test
    half. A block with fewer than 2 lines, or a source or first reference line shorter
    than 3 characters, is skipped (returned in the second list with its line number).
    Every other line is a reference with its first two characters cut off, whether or
    not they are a `1 `..`4 ` prefix; all lines are kept (the scorer uses the first 4
    for BLEU/ROUGE/CIDEr and all of them for HIT). Records are
    `{line, ordinal, block, split, source, references}`; `ordinal` counts kept records.
    """
    path = Path(path)
    blocks = _read_text(path).lower().split("\n\n")
    half = len(blocks) // 2
    records: list[dict[str, Any]] = []
    skipped: list[dict] = []
    line = 1
    for number, para in enumerate(blocks):
        lines = para.split("\n")
        if len(lines) < 2 or len(lines[0]) < 3 or len(lines[1]) < 3:
            if para.strip():
                skipped.append(
                    {
                        "source": "medlane",
                        "locator": f"{path.name}:{line}",
                        "reason": "skipped_by_authors_reader",
                        "detail": f"{len(lines)} lines; source or first reference under 3 characters",
                    }
                )
        else:
            records.append(
                {
                    "line": line,
                    "ordinal": len(records),
                    "block": number,
                    "split": "validation" if number < half else "test",
                    "source": lines[0],
                    "references": [ln[2:] for ln in lines[1:]],
                }
            )
        line += len(lines) + 1
    return records, skipped


def split_eval(records: list[dict], n_validation: int = 1015) -> tuple[list[dict], list[dict]]:
    """MedLane's split of its evaluation file: the first `n_validation` records, the rest."""
    return records[:n_validation], records[n_validation:]
