"""Per-note logic of the notes job (plain Python, no Beam): sections -> sentences -> Algorithm 1.

`section_record(note, extractor)` gives a small picklable record (note provenance plus
its target sections); `NoteProcessor.sentence_rows(record)` gives one row of the common
sentence table (docs/architecture.md) per sentence, with provenance and the selection
features. The Beam job and the benchmark baseline both call these.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from medsimp.params_schema import Notes
from medsimp.text.sentences import splitter
from pipelines.sources.noteevents import Note
from pipelines.text.sections import SectionExtractor
from pipelines.text.selection import Selector, load_lexicons

SOURCE = "notes"


def section_record(note: Note, extractor: SectionExtractor) -> dict:
    """Provenance and target sections of a note (`sections` may be empty)."""
    sections = [(s.name, s.text, s.start) for s in extractor.extract(note.text)]
    return {
        "note_id": note.note_id,
        "subject_id": note.subject_id,
        "hadm_id": note.hadm_id,
        "category": note.category,
        "locator": note.locator,
        "sections": sections,
    }


class NoteProcessor:
    """Sentence splitting and Algorithm 1 configured by the `notes` params and lexicons."""

    def __init__(self, params: Notes, abbreviations: list[str], common_words: list[str]):
        self.split = splitter(params.splitter)
        self.selector = Selector(
            abbreviations,
            common_words,
            case_sensitive=params.case_sensitive,
            min_tokens=params.min_tokens,
            min_ratio=float(params.min_ratio),
            max_ratio=float(params.max_ratio),
            abbreviation_counting=params.abbreviation_counting,
            selection_rule=params.selection_rule,
        )

    def sentence_rows(self, record: Mapping) -> list[dict]:
        """Every sentence of the record's sections, numbered across sections."""
        rows: list[dict] = []
        doc = record["note_id"]
        subject, hadm, category = record["subject_id"], record["hadm_id"], record["category"]
        counts = self.selector.counts
        for name, text, start in record["sections"]:
            for a, b in self.split(text):
                sentence = text[a:b]
                index = len(rows)
                n, abb, unc, ratio, keep = counts(sentence)
                rows.append(
                    {
                        "sentence_id": f"{SOURCE}:{doc}:complex:en:{index}",
                        "source": SOURCE,
                        "doc_id": doc,
                        "side": "complex",
                        "language": "en",
                        "section": name,
                        "sentence_index": index,
                        "char_start": a,
                        "char_end": b,
                        "text": sentence,
                        "note_id": doc,
                        "subject_id": subject,
                        "hadm_id": hadm,
                        "category": category,
                        "section_start": start,
                        "n": n,
                        "abb": abb,
                        "unc": unc,
                        "ratio": ratio,
                        "keep": keep,
                    }
                )
        return rows


def score_lines(params: Notes, base: str | Path, file: str) -> None:
    """`medsimp select`: Algorithm 1's features of each non-blank line of `file` (`-` = stdin),
    one JSON line each on stdout (`base`: the params file's folder, for the lexicons)."""
    selector = NoteProcessor(params, *load_lexicons(params, base)).selector
    stream = sys.stdin if file == "-" else open(file, encoding="utf-8")
    with stream:
        for line in stream:
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            out = {"text": text, **selector.features(text).as_dict()}
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
