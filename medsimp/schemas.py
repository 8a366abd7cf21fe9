"""Arrow schemas of every table that crosses a stage boundary (docs/architecture.md).

Source jobs write sentence tables (`sentence_schema`: the common columns plus a source's
own), `link` adds concepts and readability, `align` writes pair tables that `filter` extends,
PLABA and MSD write their gold pairs and groups, and the notes job writes its sentence table
with Algorithm 1's counts. Builder folders define their published columns beside their
dataset cards (`medsimp.corpora`), from the concept and readability types here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

_STR_LIST = pa.list_(pa.string())

# --- sentence tables (cochrane, msd, plaba, and the notes job's columns) ---
BASE_FIELDS = [
    pa.field("sentence_id", pa.string()),
    pa.field("source", pa.string()),
    pa.field("doc_id", pa.string()),
    pa.field("side", pa.string()),
    pa.field("language", pa.string()),
    pa.field("section", pa.string()),
    pa.field("sentence_index", pa.int32()),
    pa.field("char_start", pa.int32()),
    pa.field("char_end", pa.int32()),
    pa.field("text", pa.string()),
    pa.field("locator", pa.string()),
]


def sentence_schema(*extra: pa.Field) -> pa.Schema:
    """The common columns plus a source's extra columns."""
    return pa.schema(BASE_FIELDS + list(extra))


COCHRANE_SENTENCES = sentence_schema(
    pa.field("doi", pa.string()),
    pa.field("version", pa.int32()),
    pa.field("title", pa.string()),
    pa.field("split", pa.string()),  # the input's own split of the review (train/validation/test) or null
)
MSD_GOLD_CONCEPT = pa.struct(
    [
        pa.field("start", pa.int32()),
        pa.field("end", pa.int32()),
        pa.field("term", pa.string()),
        pa.field("cui", pa.string()),
    ]
)
MSD_SENTENCES = sentence_schema(
    pa.field("topic", pa.string()),
    pa.field("title", pa.string()),
    pa.field("pcio", pa.string()),
    pa.field("gold_concepts", pa.list_(MSD_GOLD_CONCEPT)),
)
MSD_GROUPS = pa.schema(
    [
        pa.field("group_id", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("pcio", pa.string()),
        pa.field("complex_ids", _STR_LIST),
        pa.field("simple_ids", _STR_LIST),
        pa.field("n_complex", pa.int32()),
        pa.field("n_simple", pa.int32()),
    ]
)
_PLABA_IDS = [pa.field("question_id", pa.string()), pa.field("pmid", pa.string())]
PLABA_SENTENCES = sentence_schema(
    *_PLABA_IDS, pa.field("sentence_number", pa.int32()), pa.field("adaptation", pa.int32())
)
PLABA_PAIRS = pa.schema(
    [
        pa.field("pair_id", pa.string()),
        *_PLABA_IDS,
        pa.field("adaptation", pa.int32()),
        pa.field("sentence_number", pa.int32()),
        pa.field("complex_id", pa.string()),
        pa.field("complex_text", pa.string()),
        pa.field("simple_ids", _STR_LIST),
        pa.field("simple_text", pa.string()),
        pa.field("n_simple", pa.int32()),
        pa.field("alignment", pa.string()),
    ]
)
RADIOLOGY_SENTENCES = sentence_schema(
    pa.field("exam", pa.string()),
    pa.field("body_parts", _STR_LIST),
    pa.field("finding_words", _STR_LIST),
    pa.field("negated", pa.bool_()),
    pa.field("n_duplicates", pa.int32()),
    pa.field("duplicate_doc_ids", _STR_LIST),
)
NOTES_SENTENCES = pa.schema(
    [f for f in BASE_FIELDS if f.name != "locator"]
    + [
        pa.field("note_id", pa.string()),
        pa.field("subject_id", pa.int64()),
        pa.field("hadm_id", pa.int64()),
        pa.field("category", pa.string()),
        pa.field("section_start", pa.int32()),
        pa.field("n", pa.int32()),
        pa.field("abb", pa.int32()),
        pa.field("unc", pa.int32()),
        pa.field("ratio", pa.float64()),
        pa.field("keep", pa.bool_()),
    ]
)

# --- link: UMLS concepts and readability per sentence and per document side ---
CONCEPT = pa.struct(
    [
        pa.field("start", pa.int32()),
        pa.field("end", pa.int32()),
        pa.field("term", pa.string()),
        pa.field("cui", pa.string()),
        pa.field("semtypes", _STR_LIST),
        pa.field("similarity", pa.float64()),
    ]
)
_SCORES = [pa.field(n, pa.float64()) for n in ("fkgl", "gunning_fog", "coleman_liau", "ari")]
READABILITY = pa.struct(_SCORES + [pa.field("n_tokens", pa.int32())])
DOC_READABILITY = pa.struct(_SCORES + [pa.field("n_tokens", pa.int32()), pa.field("n_sentences", pa.int32())])
_KEYS = [pa.field(n, pa.string()) for n in ("source", "doc_id", "side", "language")]
LINKED_SENTENCES = pa.schema(
    [
        pa.field("sentence_id", pa.string()),
        *_KEYS,
        pa.field("section", pa.string()),
        pa.field("sentence_index", pa.int32()),
        pa.field("text", pa.string()),
        pa.field("concepts", pa.list_(CONCEPT)),
        pa.field("readability", READABILITY),
    ]
)
LINKED_DOCUMENTS = pa.schema(
    [
        pa.field("doc_key", pa.string()),
        *_KEYS,
        pa.field("linked", pa.bool_()),
        pa.field("n_concepts", pa.int32()),
        pa.field("readability", DOC_READABILITY),
    ]
)

# --- align and filter: aligned (complex, simple) pairs ---
PAIRS = pa.schema(
    [
        pa.field("pair_id", pa.string()),
        pa.field("doi", pa.string()),
        pa.field("language", pa.string()),
        pa.field("complex_ids", _STR_LIST),
        pa.field("simple_ids", _STR_LIST),
        pa.field("pivot_ids", _STR_LIST),
        pa.field("complex_text", pa.string()),
        pa.field("simple_text", pa.string()),
        pa.field("pivot_text", pa.string()),
        pa.field("section", pa.string()),
        pa.field("method", pa.string()),
        pa.field("crf_score", pa.float64()),
        pa.field("vecalign_score", pa.float64()),
    ]
)
FILTERED_PAIRS = pa.schema(list(PAIRS) + [pa.field("overlap_r", pa.float64()), pa.field("keep", pa.bool_())])


def pair_sort_key(row: Mapping[str, Any]) -> tuple[str, str, int]:
    """A pair table's row order (`<doi>:<language>:<n>`, n numerically): align writes its pairs in
    it and filter keeps it, so both stages share it from here rather than filter importing the
    align job (and with it the aligners)."""
    doi, lang, n = row["pair_id"].rsplit(":", 2)
    return (doi, lang, int(n))
