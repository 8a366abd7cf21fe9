"""PLABA (Attal et al. 2023) JSON -> documents and gold sentence-aligned pairs. No Beam here.

Shape: `{question_id: {"question": str, pmid: {"Title": str, "abstract": {n: sentence},
"translation1": {n: text}, "translation2"?: {...}}}}`. An adaptation number that is
missing or empty is a deleted sentence (1 -> 0); a value holding several sentences is a
split (1 -> N). Adaptation k is document `<question_id>:<pmid>` for k = 1 and
`<question_id>:<pmid>:a<k>` for k > 1 (the simple side of each adaptation is its own document).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from medsimp.pipelines.cochrane_formats import FormatError
from medsimp.pipelines.sentence_rows import document_rows, sentence_id

SOURCE = "plaba"
_ADAPTATION = re.compile(r"^translation(\d+)$")


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
    if not isinstance(value, dict):
        raise FormatError(f"bad_{name}", f"{name} must map sentence numbers to text")
    out: dict[int, str] = {}
    for key, text in value.items():
        if not str(key).strip().isdigit():
            raise FormatError(f"bad_{name}", f"{name} key {str(key)[:20]!r} is not a sentence number")
        if text is not None and not isinstance(text, str):
            raise FormatError(f"bad_{name}", f"{name}[{key}] must be a string")
        out[int(key)] = text or ""
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
    title = entry.get("Title") or ""
    return PlabaDoc(question_id, question, pmid, title if isinstance(title, str) else "",
                    tuple(sorted(abstract.items())), tuple(sorted(adaptations, key=lambda a: a[0])))


def iter_documents(data, name: str) -> Iterator[tuple[str, PlabaDoc | FormatError]]:
    """(locator `file#question_id/pmid`, document or error) for every PubMed entry."""
    if not isinstance(data, dict):
        yield f"{name}#", FormatError("not_an_object", "top level must map question ids")
        return
    for qid in sorted(data, key=lambda q: (len(q), q)):
        block = data[qid]
        if not isinstance(block, dict) or not isinstance(block.get("question", ""), str):
            yield f"{name}#{qid}", FormatError("bad_question", "question block must be an object "
                                                                "with a string 'question'")
            continue
        for pmid in sorted(k for k in block if k != "question"):
            locator = f"{name}#{qid}/{pmid}"
            try:
                yield locator, parse_document(str(qid), block.get("question", ""), str(pmid), block[pmid])
            except FormatError as exc:
                yield locator, exc


def document_sentence_rows(doc: PlabaDoc, locator: str) -> list[dict]:
    """Abstract sentences (as numbered, not re-split) and adaptation sentences (split)."""
    base = {"question_id": doc.question_id, "pmid": doc.pmid}
    rows = []
    for index, (number, text) in enumerate((n, t) for n, t in doc.abstract if t.strip()):
        rows.append({
            "sentence_id": sentence_id(SOURCE, doc.doc_id, "complex", "en", index),
            "source": SOURCE, "doc_id": doc.doc_id, "side": "complex", "language": "en",
            "section": "", "sentence_index": index, "char_start": 0, "char_end": len(text),
            "text": text, "locator": locator, **base, "sentence_number": number, "adaptation": 0})
    for k, numbered in doc.adaptations:
        doc_id = adaptation_doc_id(doc, k)
        offset = 0
        for number, _ in doc.abstract:
            text = numbered.get(number, "")
            part = document_rows(SOURCE, doc_id, "simple", "en", [("", text)], locator,
                                 {**base, "sentence_number": number, "adaptation": k}, offset)
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
            pairs.append({
                "pair_id": f"{adaptation_doc_id(doc, k)}:{number}",
                "question_id": doc.question_id, "pmid": doc.pmid, "adaptation": k,
                "sentence_number": number, "complex_id": crow["sentence_id"],
                "complex_text": crow["text"], "simple_ids": [r["sentence_id"] for r in srows],
                "simple_text": " ".join(r["text"] for r in srows), "n_simple": len(srows),
                "alignment": "1-0" if not srows else ("1-1" if len(srows) == 1 else "1-N"),
            })
    return pairs
