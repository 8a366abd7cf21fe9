"""PLABA (Attal et al. 2023) JSON -> documents and gold sentence-aligned pairs. No Beam here.

Shape: `{question_id: {"question": str, pmid: {"Title": str, "abstract": {n: sentence},
"translation1": {n: text}, "translation2"?: {...}}}}`. An adaptation number that is
missing or empty is a deleted sentence (1 -> 0); a value holding several sentences is a
split (1 -> N). Adaptation k is document `<question_id>:<pmid>` for k = 1 and
`<question_id>:<pmid>:a<k>` for k > 1 (the simple side of each adaptation is its own document).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from pipelines.sources.records import FormatError, check_text, guarded, loads, members, value_end
from pipelines.sources.rows import document_rows, sentence_id

SOURCE = "plaba"
_ADAPTATION = re.compile(r"^translation([1-9][0-9]{0,2})$")
_NUMBER = re.compile(r"0|[1-9][0-9]{0,5}")  # a sentence number as PLABA writes it: plain ASCII digits
_ID = re.compile(r"[0-9]{1,20}")


@dataclass(frozen=True)
class PlabaDoc:
    question_id: str
    question: str
    pmid: str
    title: str
    abstract: tuple[tuple[int, str], ...]
    adaptations: tuple[tuple[int, dict[int, str]], ...]

    @property
    def doc_id(self) -> str:
        return f"{self.question_id}:{self.pmid}"


def adaptation_doc_id(doc: PlabaDoc, k: int) -> str:
    return doc.doc_id if k == 1 else f"{doc.doc_id}:a{k}"


def _numbered(value, name: str) -> dict[int, str]:
    """{"1": text, ...} -> {1: text}. A key that is not plain ASCII digits is never folded
    into another: `ambiguous_sentence_number` when its value repeats a key ("01", "١" beside
    "1"), else `bad_sentence_number` ("²", " 1", "1.5")."""
    if not isinstance(value, dict):
        raise FormatError(f"bad_{name}", f"{name} must map sentence numbers to text")
    out: dict[int, str] = {}
    loose = []
    for index, (key, text) in enumerate(value.items(), start=1):
        if text is not None and not isinstance(text, str):
            raise FormatError(f"bad_{name}", f"{name} member {index} must be a string")
        if _NUMBER.fullmatch(key):
            out[int(key)] = check_text(text or "", name)
        else:
            loose.append(index)
    for index in loose:
        key = list(value)[index - 1]
        try:
            number = int(key)
        except ValueError:
            number = None
        if number in out:
            raise FormatError(
                "ambiguous_sentence_number",
                f"{name} member {index} names sentence {number} again in another spelling",
            )
        raise FormatError(
            "bad_sentence_number", f"{name} member {index} is not a plain ASCII sentence number"
        )
    return out


def parse_document(question_id: str, question: str, pmid: str, entry) -> PlabaDoc:
    if not isinstance(entry, dict):
        raise FormatError("not_an_object", f"pmid entry is {type(entry).__name__}")
    abstract = _numbered(entry.get("abstract"), "abstract")
    if not any(t.strip() for t in abstract.values()):
        raise FormatError("empty_abstract")
    adaptations = []
    for key in sorted(entry):
        match = _ADAPTATION.match(key)
        if match:
            numbered = _numbered(entry[key], key)
            extra = sorted(set(numbered) - set(abstract))
            if extra:
                raise FormatError("unknown_sentence_number", f"{key} has numbers {extra[:5]} not in abstract")
            adaptations.append((int(match.group(1)), numbered))
    if not adaptations:
        raise FormatError("no_adaptation", "no translationN field")
    title = entry.get("Title")
    if title is not None and not isinstance(title, str):
        raise FormatError("bad_title", "Title must be a string")
    return PlabaDoc(
        question_id,
        question,
        pmid,
        check_text(title or "", "Title"),
        tuple(sorted(abstract.items())),
        tuple(sorted(adaptations, key=lambda a: a[0])),
    )


def top_members(text: str) -> list[tuple[str, int, int]]:
    """(question id, value start, value end) of the file's top-level object; FormatError
    `bad_json` when the file is not one JSON object (a whole-file fault)."""
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] != "{":
        raise FormatError("bad_json", "the top level must be an object of question ids")
    if text[value_end(text, start) :].strip():
        raise FormatError("bad_json", "text after the top-level object")
    return list(members(text, start))


def _label(key: str, index: int) -> str:
    """A key as shown in a locator: PLABA ids are digits; anything else by its position."""
    return key if _ID.fullmatch(key) else f"@{index}"


def _question(text: str, start: int) -> tuple[str, list[tuple[str, int, int]]]:
    if text[start] != "{":
        raise FormatError("bad_question", "question block must be an object with a string 'question'")
    block = list(members(text, start))
    counts = Counter(key for key, _, _ in block)
    if counts["question"] > 1:
        raise FormatError("duplicate_key", "the question block repeats 'question'")
    question = next((loads(text[s:e]) for key, s, e in block if key == "question"), "")
    if not isinstance(question, str):
        raise FormatError("bad_question", "'question' must be a string")
    check_text(question, "question")
    return question, [m for m in block if m[0] != "question"]


def _entry(qid: str, question: str, pmid: str, raw: str) -> PlabaDoc:
    return parse_document(check_text(qid, "question id"), question, check_text(pmid, "pmid"), loads(raw))


def iter_documents(text: str, name: str) -> Iterator[tuple[str, PlabaDoc | FormatError]]:
    """(locator `file#question_id/pmid`, document or error) for every PubMed entry of the
    file's text. Each entry is parsed on its own, so a bad one costs only itself; a
    question id or pmid that appears twice is a `duplicate_key` for each occurrence (never
    overwritten). The unit is the entry; a question block that cannot be read counts once."""
    top = top_members(text)
    qcounts = Counter(key for key, _, _ in top)
    order = sorted(range(len(top)), key=lambda i: (len(top[i][0]), top[i][0], i))
    for qindex in order:
        qid, start, _ = top[qindex]
        qlabel = f"{name}#{_label(qid, qindex + 1)}"
        if qcounts[qid] > 1:
            yield qlabel, FormatError("duplicate_key", f"question id appears {qcounts[qid]} times")
            continue
        block = guarded(_question, text, start)
        if isinstance(block, FormatError):
            yield qlabel, block
            continue
        question, entries = block
        pcounts = Counter(key for key, _, _ in entries)
        for pindex, (pmid, s, e) in sorted(enumerate(entries, start=1), key=lambda m: (m[1][0], m[0])):
            locator = f"{qlabel}/{_label(pmid, pindex)}"
            if pcounts[pmid] > 1:
                yield locator, FormatError("duplicate_key", f"pmid appears {pcounts[pmid]} times")
                continue
            yield locator, guarded(_entry, qid, question, pmid, text[s:e])


def document_sentence_rows(doc: PlabaDoc, locator: str) -> list[dict]:
    """Abstract sentences (as numbered, not re-split) and adaptation sentences (split)."""
    base = {"question_id": doc.question_id, "pmid": doc.pmid}
    rows = []
    for index, (number, text) in enumerate((n, t) for n, t in doc.abstract if t.strip()):
        rows.append(
            {
                "sentence_id": sentence_id(SOURCE, doc.doc_id, "complex", "en", index),
                "source": SOURCE,
                "doc_id": doc.doc_id,
                "side": "complex",
                "language": "en",
                "section": "",
                "sentence_index": index,
                "char_start": 0,
                "char_end": len(text),
                "text": text,
                "locator": locator,
                **base,
                "sentence_number": number,
                "adaptation": 0,
            }
        )
    for k, numbered in doc.adaptations:
        doc_id = adaptation_doc_id(doc, k)
        offset = 0
        for number, _ in doc.abstract:
            text = numbered.get(number, "")
            part = document_rows(
                SOURCE,
                doc_id,
                "simple",
                "en",
                [("", text)],
                locator,
                {**base, "sentence_number": number, "adaptation": k},
                offset,
            )
            offset += len(part)
            rows += part
    return rows


def gold_pairs(doc: PlabaDoc, rows: list[dict]) -> list[dict]:
    """One pair per abstract sentence and adaptation: 1 -> 0 (deleted), 1 -> 1, 1 -> N (split)."""
    complex_rows = {r["sentence_number"]: r for r in rows if r["side"] == "complex"}
    simple: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        if r["side"] == "simple":
            simple.setdefault((r["adaptation"], r["sentence_number"]), []).append(r)
    pairs = []
    for k, _ in doc.adaptations:
        for number, crow in sorted(complex_rows.items()):
            srows = simple.get((k, number), [])
            pairs.append(
                {
                    "pair_id": f"{adaptation_doc_id(doc, k)}:{number}",
                    "question_id": doc.question_id,
                    "pmid": doc.pmid,
                    "adaptation": k,
                    "sentence_number": number,
                    "complex_id": crow["sentence_id"],
                    "complex_text": crow["text"],
                    "simple_ids": [r["sentence_id"] for r in srows],
                    "simple_text": " ".join(r["text"] for r in srows),
                    "n_simple": len(srows),
                    "alignment": "1-0" if not srows else ("1-1" if len(srows) == 1 else "1-N"),
                }
            )
    return pairs
