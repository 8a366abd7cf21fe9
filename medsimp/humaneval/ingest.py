"""Read filled response CSVs and validate them against the forms' manifest."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from medsimp.csvcells import csv_errors
from medsimp.humaneval.schema import CSV_COLUMNS, FORMS, SET_SEPARATOR, Question, expected


class IngestError(ValueError):
    """Invalid responses; `problems` lists every one as "file:line: message"."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s) in the responses:\n  {shown}{more}")


@dataclass(frozen=True)
class Answer:
    form: str
    rater_id: str
    item_id: str
    stage: str
    system: str
    question: str
    value: int | frozenset | str


def _parse(q: Question, raw: str, systems: list[str]) -> tuple[int | frozenset | str | None, str]:
    """(value, error message)."""
    if raw == "":
        return None, "missing answer" if q.required else ""
    if q.kind == "text":
        return raw, ""
    if q.kind == "set":
        members = frozenset(x for x in raw.split(SET_SEPARATOR) if x)
        unknown = sorted(members - set(systems))
        if unknown or not members:
            return None, f"set answer has unknown systems {unknown} (allowed: {systems})"
        return members, ""
    try:
        value = int(raw)
    except ValueError:
        return None, f"answer {raw!r} is not an integer"
    if value not in q.values():
        return None, f"answer {value} out of range {min(q.values())}..{max(q.values())}"
    return value, ""


def ingest(manifest: dict, files: list[Path]) -> list[Answer]:
    """Every answer of every file, or IngestError listing all problems (unknown form, item,
    system or question, out-of-range or missing answers, duplicate rows or raters)."""
    problems: list[str] = []
    answers: list[Answer] = []
    seen_rater: dict[tuple[str, str], str] = {}
    for path in sorted(files):
        with open(path, newline="", encoding="utf-8-sig") as fh, csv_errors(path):
            reader = csv.DictReader(fh)
            if tuple(reader.fieldnames or ()) != CSV_COLUMNS:
                problems.append(f"{path.name}:1: header must be {','.join(CSV_COLUMNS)}")
                continue
            rows = list(enumerate(reader, start=2))
        raters = {(r["form"], r["rater_id"]) for _, r in rows}
        for key in sorted(raters):
            if key in seen_rater:
                problems.append(
                    f"{path.name}: duplicate rater {key[1]!r} on the {key[0]} form "
                    f"(also in {seen_rater[key]})"
                )
            seen_rater[key] = path.name
        answers += _check_file(manifest, path.name, rows, problems)
    if problems:
        raise IngestError(problems)
    return sorted(answers, key=lambda a: (a.form, a.rater_id, a.item_id, a.stage, a.system, a.question))


def _check_file(manifest: dict, name: str, rows: list[tuple[int, dict]], problems: list[str]) -> list[Answer]:
    systems = manifest["systems"]
    out: list[Answer] = []
    by_rater: dict[tuple[str, str], dict[tuple[str, str, str, str], tuple[int, str]]] = {}
    for line, row in rows:
        form, rater = row["form"], row["rater_id"].strip()
        if form not in FORMS:
            problems.append(f"{name}:{line}: unknown form {form!r} (expected one of {list(FORMS)})")
            continue
        if not rater:
            problems.append(f"{name}:{line}: empty rater_id")
            continue
        if form == "layperson" and rater not in manifest["layperson_assignment"]:
            problems.append(
                f"{name}:{line}: layperson {rater!r} is not in the Latin-square "
                f"assignment ({sorted(manifest['layperson_assignment'])})"
            )
            continue
        seen = by_rater.setdefault((form, rater), {})
        key = (row["item_id"], row["stage"], row["system"], row["question"])
        if key in seen:
            problems.append(
                f"{name}:{line}: duplicate answer for item {key[0]!r} {key[1]} "
                f"{key[2] or '-'} {key[3]} (first at line {seen[key][0]})"
            )
            continue
        seen[key] = (line, row["answer"])
    for (form, rater), got in sorted(by_rater.items()):
        wanted = {(i, st, sy, q.qid): q for i, st, sy, q in expected(manifest, form, rater)}
        for key in sorted(set(got) - set(wanted)):
            problems.append(
                f"{name}:{got[key][0]}: unexpected row for {form} rater {rater!r}: "
                f"item {key[0]!r} stage {key[1]!r} system {key[2]!r} question {key[3]!r}"
            )
        for key, q in wanted.items():
            if key not in got:
                if q.required:
                    problems.append(
                        f"{name}: {form} rater {rater!r} has no row for item {key[0]!r} "
                        f"{key[1]} {key[2] or '-'} {key[3]}"
                    )
                continue
            line, raw = got[key]
            value, error = _parse(q, raw.strip(), systems)
            if error:
                problems.append(f"{name}:{line}: {form} rater {rater!r}, item {key[0]!r}, {key[3]}: {error}")
            elif value is not None:
                out.append(Answer(form, rater, key[0], key[1], key[2], key[3], value))
    return out
