"""MSD manual formats (Cao et al. 2020, expertise style transfer) and PCIO grouping. No Beam here.

Two line formats, detected per line:
- documented JSONL: `{"topic", "audience": "professional"|"consumer", "title"?, "icd9"?,
  "sections": [{"heading", "text"}]}`; doc_id pairs the two versions: with `pair_key`
  `title_icd9` (Cao et al.'s key) and both a title and an ICD-9 code, `<title slug>--icd9-<code>`;
  otherwise (or with `pair_key` `topic`) the topic slug.
- the MSD dataset: `{"text", "label": 0 (expert) | 1 (layman), "concepts": [{"range": [s, e],
  "term", "cui"}]}`; in a paired (test) file record 2n-1 pairs with record 2n (doc_id
  `<stem>-<n>`; blank lines are not records, so they shift nothing), elsewhere each line is its
  own document (doc_id `<stem>-L<line>`).
Section headings map to PCIO elements through the `msd.pcio` params table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pipelines.sources.records import FormatError, Line, check_text, int_field, loads
from pipelines.sources.rows import document_rows, locator_key

AUDIENCE_SIDE = {"professional": "complex", "consumer": "simple"}
LABEL_SIDE = {0: "complex", 1: "simple"}


@dataclass(frozen=True)
class GoldConcept:
    start: int
    end: int
    term: str
    cui: str


@dataclass(frozen=True)
class MsdRecord:
    """One side of one document, as read."""

    doc_id: str
    topic: str
    side: str
    title: str
    sections: tuple[tuple[str, str], ...]
    concepts: tuple[GoldConcept, ...]
    locator: str
    pair_index: int = 0  # 1-based line position inside a paired file's pair (1 or 2), else 0


def slug(topic: str) -> str:
    """`Asthma (Adults)` -> `asthma-adults`."""
    return re.sub(r"[^0-9a-z]+", "-", topic.lower()).strip("-")


def _optional_text(obj: dict, field: str, reason: str) -> str:
    value = obj.get(field)
    if value is not None and not isinstance(value, str):
        raise FormatError(reason, f"{field} must be a string")
    return check_text(value or "", field)


def _concepts(value, text_length: int) -> tuple[GoldConcept, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FormatError("bad_concepts", "concepts must be a list")
    out = []
    for i, c in enumerate(value):
        rng = c.get("range") if isinstance(c, dict) else None
        if not isinstance(rng, list) or len(rng) != 2:
            raise FormatError("bad_concepts", f"concepts[{i}] needs range [start, end]")
        start = int_field(rng[0], f"concepts[{i}].range[0]", "bad_concepts", 0, text_length)
        end = int_field(rng[1], f"concepts[{i}].range[1]", "bad_concepts", start, text_length)
        out.append(
            GoldConcept(
                start,
                end,
                _optional_text(c, "term", "bad_concepts"),
                _optional_text(c, "cui", "bad_concepts"),
            )
        )
    return tuple(out)


def document_key(topic: str, title: str, icd9: str, pair_key: str = "title_icd9") -> str:
    """The doc_id both versions of a document share: title + ICD-9 code when `pair_key` is
    `title_icd9` and the record has both, else the topic slug."""
    if pair_key == "title_icd9" and slug(title) and slug(icd9):
        return f"{slug(title)}--icd9-{slug(icd9)}"
    return slug(topic)


def parse_line(line: Line, stem: str, paired: bool, pair_key: str = "title_icd9") -> MsdRecord:
    """Parse one line of either format (a paired file pairs by `line.ordinal`; `pair_key`: how a
    documented record's doc_id is formed, `document_key`)."""
    obj = loads(line.text)
    if not isinstance(obj, dict):
        raise FormatError("not_an_object", type(obj).__name__)
    if "audience" in obj or "topic" in obj:
        topic, audience = obj.get("topic"), obj.get("audience")
        if not isinstance(topic, str) or not slug(topic):
            raise FormatError("missing_topic")
        if not isinstance(audience, str) or audience not in AUDIENCE_SIDE:
            raise FormatError("bad_audience", "audience must be professional or consumer")
        sections = obj.get("sections")
        if not isinstance(sections, list) or not all(
            isinstance(s, dict) and isinstance(s.get("text"), str) and isinstance(s.get("heading") or "", str)
            for s in sections
        ):
            raise FormatError("bad_sections", "sections must be a list of {heading, text}")
        kept = tuple(
            (check_text((s.get("heading") or "").strip(), "heading"), check_text(s["text"], "text"))
            for s in sections
            if s["text"].strip()
        )
        if not kept:
            raise FormatError("empty_record", "no section has text")
        title = _optional_text(obj, "title", "bad_title")
        return MsdRecord(
            document_key(topic, title, _optional_text(obj, "icd9", "bad_icd9"), pair_key),
            check_text(topic.strip(), "topic"),
            AUDIENCE_SIDE[audience],
            title,
            kept,
            (),
            line.locator,
        )
    text, label = obj.get("text"), obj.get("label")
    if not isinstance(text, str) or not text.strip():
        raise FormatError("empty_record", "text missing or empty")
    if type(label) is not int or label not in LABEL_SIDE:
        raise FormatError("bad_label", "label must be 0 (expert) or 1 (layman)")
    if paired:
        doc_id, pair_index = f"{stem}-{(line.ordinal + 1) // 2}", 2 - line.ordinal % 2
    else:
        doc_id, pair_index = f"{stem}-L{line.number}", 0
    return MsdRecord(
        doc_id,
        "",
        LABEL_SIDE[label],
        "",
        (("", check_text(text, "text")),),
        _concepts(obj.get("concepts"), len(text)),
        line.locator,
        pair_index,
    )


def pcio_lookup(table: Mapping[str, list[str]]) -> dict[str, str]:
    """Params `msd.pcio` ({element: [headings]}) -> {normalised heading: element}."""
    out: dict[str, str] = {}
    for element, headings in sorted(table.items()):
        for heading in headings:
            out[normalise_heading(heading)] = element
    return out


def normalise_heading(heading: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", heading.lower())).strip()


def pcio_of(heading: str, lookup: Mapping[str, str]) -> str:
    """The PCIO element of a section heading ("" when the table has no entry)."""
    return lookup.get(normalise_heading(heading), "")


def concepts_in(concepts: tuple[GoldConcept, ...], start: int, end: int) -> list[dict]:
    """Gold concepts inside [start, end), re-offset to the sentence."""
    return [
        {"start": c.start - start, "end": c.end - start, "term": c.term, "cui": c.cui}
        for c in concepts
        if start <= c.start and c.end <= end
    ]


def assemble(
    doc_id: str, records: list[MsdRecord], lookup: Mapping[str, str], source: str = "msd", *, splitter: str
) -> tuple[list[dict], list[dict], list[MsdRecord], list[tuple[MsdRecord, str]]]:
    """One document's records -> (sentence rows, candidate groups, filtered, rejected with reason).

    Sentences are cut by `splitter` (params `msd.splitter`). A paired document needs one expert
    and one layman line. Otherwise the first record
    per side (by locator) is kept and later duplicates are filtered. Candidate groups pair
    the sentences of both sides that share a PCIO element (a paired document is one group).
    """
    records = sorted(records, key=lambda r: (r.pair_index, locator_key(r.locator)))
    if any(r.pair_index for r in records):
        if len(records) != 2 or {r.side for r in records} != {"complex", "simple"}:
            return [], [], [], [(r, "bad_pair") for r in records]
    kept: dict[str, MsdRecord] = {}
    filtered = []
    for rec in records:
        if rec.side in kept:
            filtered.append(rec)
        else:
            kept[rec.side] = rec
    rows: list[dict] = []
    for side, rec in sorted(kept.items()):
        side_rows: list[dict] = []
        for heading, text in rec.sections:
            part = document_rows(
                source,
                doc_id,
                side,
                "en",
                [(heading, text)],
                rec.locator,
                {"topic": rec.topic, "title": rec.title, "pcio": pcio_of(heading, lookup) if heading else ""},
                len(side_rows),
                splitter,
            )
            for row in part:
                row["gold_concepts"] = concepts_in(rec.concepts, row["char_start"], row["char_end"])
            side_rows += part
        rows += side_rows
    groups = []
    paired = any(r.pair_index for r in records)
    elements = ["test_pair"] if paired else sorted({r["pcio"] for r in rows if r["pcio"]})
    for element in elements:
        members = [r for r in rows if paired or r["pcio"] == element]
        complex_ids = [r["sentence_id"] for r in members if r["side"] == "complex"]
        simple_ids = [r["sentence_id"] for r in members if r["side"] == "simple"]
        if complex_ids and simple_ids:
            groups.append(
                {
                    "group_id": f"{doc_id}:{element}",
                    "doc_id": doc_id,
                    "topic": members[0]["topic"],
                    "pcio": element,
                    "complex_ids": complex_ids,
                    "simple_ids": simple_ids,
                    "n_complex": len(complex_ids),
                    "n_simple": len(simple_ids),
                }
            )
    return rows, groups, filtered, []
