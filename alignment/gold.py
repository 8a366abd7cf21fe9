"""Gold alignment readers: PLABA, MultiCochrane MC-CLEAN, wiki-auto TSV, Vecalign block files.

Every document-level reader returns `DocPair`s: the complex and simple sentence lists
and the gold set of aligned `(complex_index, simple_index)` pairs (0-based).
"""

from __future__ import annotations

import csv
import functools
import json
import re
from ast import literal_eval
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from medsimp.text import multilingual

Block = tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class DocPair:
    """One complex/simple document pair with gold sentence pairs."""

    doc_id: str
    complex: list[str]
    simple: list[str]
    pairs: frozenset[tuple[int, int]] = field(default_factory=frozenset)
    group: str = ""  # e.g. the PLABA question: splits keep a group on one side

    def to_json(self) -> dict:
        return {
            "doc_id": self.doc_id,
            "group": self.group,
            "complex": self.complex,
            "simple": self.simple,
            "pairs": sorted([list(p) for p in self.pairs]),
        }

    @classmethod
    def from_json(cls, row: dict) -> DocPair:
        return cls(
            str(row["doc_id"]),
            list(row["complex"]),
            list(row["simple"]),
            frozenset((int(c), int(s)) for c, s in row.get("pairs", [])),
            str(row.get("group", "")),
        )


class GoldFormatError(ValueError):
    """A gold file that does not have the expected shape."""


def _numbered(d: dict, where: str) -> list[tuple[int, str]]:
    if not isinstance(d, dict):
        raise GoldFormatError(f"{where}: expected an object of numbered sentences")
    try:
        return sorted((int(k), v) for k, v in d.items())
    except ValueError:
        raise GoldFormatError(f"{where}: sentence numbers must be integers") from None


PLABA_SENTENCES = ("spacy", "multilingual")


@functools.lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def plaba_sentences(text: str, splitter: str = "spacy") -> list[str]:
    """The sentences of one PLABA adaptation value. `spacy` (the default): spaCy's rule
    sentencizer. `multilingual`: the toolkit's splitter (`medsimp.text.multilingual`); on
    PLABA dev it reads 4 of 1,251 values otherwise (it splits "1) ..., 2) ..." enumerations
    into items and "vitamin D. The", and joins a stray "macrolide. antibiotics.") and the
    CRF's pair F1 drops 0.3-0.6 points against that gold (docs/alignment.md), so it is not
    the default."""
    if splitter == "multilingual":
        return [s.text for s in multilingual.split_sentences(text, "en")]
    if splitter != "spacy":
        raise ValueError(f"unknown PLABA sentence splitter {splitter!r} ({', '.join(PLABA_SENTENCES)})")
    text = text.strip()
    if not text:
        return []
    return [s.text.strip() for s in _sentencizer()(text).sents if s.text.strip()]


def read_plaba(
    path: str | Path, rejects: list[dict] | None = None, sentences: str = "spacy"
) -> list[DocPair]:
    """PLABA `data.json`: abstract sentence n aligns with every sentence of translationK[n]
    (split by `plaba_sentences(..., sentences)`).

    A missing or empty number is a deletion; a value with several sentences is a split
    (1 complex -> N simple). Each translationK gives its own document pair.
    A malformed abstract raises GoldFormatError, or is appended to `rejects`
    ({locator, reason}) and skipped when a list is given.
    """
    if sentences not in PLABA_SENTENCES:
        raise ValueError(f"unknown PLABA sentence splitter {sentences!r} ({', '.join(PLABA_SENTENCES)})")
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    docs: list[DocPair] = []
    for qid in sorted(data, key=str):
        if not isinstance(data[qid], dict):
            if rejects is None:
                raise GoldFormatError(f"{path}: {qid}: expected an object")
            rejects.append({"locator": f"{path}: {qid}", "reason": "expected an object"})
            continue
        for pmid, rec in sorted(data[qid].items()):
            if not isinstance(rec, dict) or "abstract" not in rec:
                continue
            where = f"{path}: {qid}/{pmid}"
            try:
                docs.extend(_plaba_pairs(rec, str(qid), str(pmid), where, sentences))
            except GoldFormatError as exc:
                if rejects is None:
                    raise
                rejects.append({"locator": where, "reason": str(exc)})
    return docs


def _plaba_pairs(rec: dict, qid: str, pmid: str, where: str, sentences: str) -> list[DocPair]:
    """One DocPair per expert adaptation of one PLABA abstract."""
    numbered = _numbered(rec["abstract"], f"{where}/abstract")
    index = {n: i for i, (n, _) in enumerate(numbered)}
    complex_ = [t for _, t in numbered]
    docs = []
    for tkey in sorted(k for k in rec if k.startswith("translation")):
        simple: list[str] = []
        pairs = set()
        for n, text in _numbered(rec[tkey], f"{where}/{tkey}"):
            if n not in index:
                raise GoldFormatError(f"{where}/{tkey} sentence {n} not in abstract")
            for sent in plaba_sentences(text or "", sentences):
                pairs.add((index[n], len(simple)))
                simple.append(sent)
        docs.append(DocPair(f"{qid}:{pmid}:{tkey}", complex_, simple, frozenset(pairs), qid))
    return docs


_MC_COMPLEX = ("abstract", "complex", "source", "src")
_MC_SIMPLE = ("pls", "simple", "target", "tgt")
_MC_PAIRS = ("alignments", "alignment", "pairs", "labels")


def _pick(rec: dict, keys: tuple[str, ...], what: str, where: str):
    for k in keys:
        if k in rec:
            return rec[k]
    raise GoldFormatError(f"{where}: no {what} field (tried {', '.join(keys)})")


def read_mc_clean(path: str | Path) -> list[DocPair]:
    """MultiCochrane MC-CLEAN `mc_human.json` (assumed shape, see docs/alignment.md).

    A list of documents, or a dict keyed by DOI, each with sentence lists for the abstract
    (`abstract`|`complex`|`source`) and the PLS (`pls`|`simple`|`target`) and
    `alignments` as `[complex_index, simple_index]` pairs. A list of pair-level rows
    with a `label` field is read as wiki-auto-style rows instead.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = list(data.items()) if isinstance(data, dict) else [(None, r) for r in data]
    if items and isinstance(items[0][1], dict) and "label" in items[0][1]:
        rows = [[r["label"], r["simple_id"], r["complex_id"], r["simple"], r["complex"]] for _, r in items]
        return _docs_from_rows(rows, str(path))
    docs = []
    for n, (key, rec) in enumerate(items):
        where = f"{path}#{n}"
        doi = str(rec.get("doi") or key or n)
        complex_ = list(_pick(rec, _MC_COMPLEX, "abstract sentences", where))
        simple = list(_pick(rec, _MC_SIMPLE, "PLS sentences", where))
        pairs = frozenset((int(c), int(s)) for c, s in _pick(rec, _MC_PAIRS, "alignments", where))
        bad = [p for p in pairs if not (0 <= p[0] < len(complex_) and 0 <= p[1] < len(simple))]
        if bad:
            raise GoldFormatError(f"{where}: alignment {bad[0]} out of range")
        docs.append(DocPair(doi, complex_, simple, pairs, doi))
    return docs


_ID = re.compile(r"^(.*?)((?:-\d+)+)$")
ALIGNED_LABELS = frozenset({"aligned", "partialaligned"})


def _split_id(sid: str, where: str) -> tuple[str, tuple[int, ...]]:
    m = _ID.match(sid)
    if not m:
        raise GoldFormatError(f"{where}: sentence id {sid!r} does not end in -<number>")
    return m.group(1), tuple(int(x) for x in m.group(2).strip("-").split("-"))


def _docs_from_rows(rows: list[list[str]], where: str) -> list[DocPair]:
    groups: dict[tuple[str, str], dict] = {}
    for n, row in enumerate(rows):
        label, sid, cid, stext, ctext = row[:5]
        sdoc, spos = _split_id(sid, f"{where}:{n + 1}")
        cdoc, cpos = _split_id(cid, f"{where}:{n + 1}")
        g = groups.setdefault((cdoc, sdoc), {"c": {}, "s": {}, "p": set()})
        g["c"][cpos] = ctext
        g["s"][spos] = stext
        if label.strip().lower().replace("_", "") in ALIGNED_LABELS:
            g["p"].add((cpos, spos))
    docs = []
    for (cdoc, sdoc), g in sorted(groups.items()):
        cpos, spos = sorted(g["c"]), sorted(g["s"])  # type: ignore[assignment]
        ci, si = {p: i for i, p in enumerate(cpos)}, {p: i for i, p in enumerate(spos)}
        pairs = frozenset((ci[c], si[s]) for c, s in g["p"])
        docs.append(
            DocPair(f"{cdoc}|{sdoc}", [g["c"][p] for p in cpos], [g["s"][p] for p in spos], pairs, cdoc)
        )
    return docs


def read_wiki_auto(path: str | Path) -> list[DocPair]:
    """wiki-auto / wiki-manual TSV: label, simple id, complex id, simple, complex.

    Ids end in `-<para>-<sent>` style numbers that order the sentences; the prefix names
    the document. `aligned` and `partialAligned` count as aligned (as Jiang et al. 2020).
    Only sentences that occur in some row are known, so documents are partial.
    """
    with open(path, encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if r]
    if rows and rows[0][0].strip().lower() == "label":
        rows = rows[1:]
    short = [i for i, r in enumerate(rows) if len(r) < 5]
    if short:
        raise GoldFormatError(f"{path}:{short[0] + 1}: expected 5 tab-separated fields")
    return _docs_from_rows(rows, str(path))


def parse_blocks(lines: list[str], where: str = "<alignments>") -> list[Block]:
    """Vecalign format lines `[i, j]:[k]` (an optional `:score` is ignored)."""
    blocks: list[Block] = []
    for n, line in enumerate(lines):
        fields = [x.strip() for x in line.split(":") if x.strip()]
        if not fields:
            continue
        try:
            src, tgt = literal_eval(fields[0]), literal_eval(fields[1])
        except (ValueError, SyntaxError, IndexError) as exc:
            raise GoldFormatError(f"{where}:{n + 1}: cannot parse {line.strip()!r}") from exc
        blocks.append((tuple(int(i) for i in src), tuple(int(i) for i in tgt)))
    return blocks


def read_blocks(path: str | Path) -> list[Block]:
    """Read a Vecalign-format alignment file."""
    return parse_blocks(Path(path).read_text(encoding="utf-8").splitlines(), str(path))


def read_gold(path: str | Path, fmt: str = "auto") -> list[DocPair]:
    """Document pairs from a gold file: `plaba`, `mc_clean`, `wiki_auto` or `jsonl` (DocPair rows)."""
    path = Path(path)
    if fmt == "auto":
        fmt = {".tsv": "wiki_auto", ".jsonl": "jsonl"}.get(path.suffix, "")
        if not fmt:
            head = json.loads(path.read_text(encoding="utf-8"))
            first = next(iter(head.values())) if isinstance(head, dict) and head else None
            fmt = "plaba" if isinstance(first, dict) and "question" in first else "mc_clean"
    readers = {
        "plaba": read_plaba,
        "mc_clean": read_mc_clean,
        "wiki_auto": read_wiki_auto,
        "jsonl": lambda p: [
            DocPair.from_json(json.loads(line))
            for line in Path(p).read_text(encoding="utf-8").splitlines()
            if line.strip()
        ],
    }
    if fmt not in readers:
        raise GoldFormatError(f"unknown gold format {fmt!r} (plaba, mc_clean, wiki_auto, jsonl)")
    return readers[fmt](path)


def gold_sources(gold: str | Path | Sequence[str | Path]) -> list[str | Path]:
    """`align.gold` as a list: one path (str) or several."""
    return [gold] if isinstance(gold, str | Path) else list(gold)


def read_golds(gold: str | Path | Sequence[str | Path], fmt: str = "auto") -> list[DocPair]:
    """Document pairs of several gold sources, in order (`align.gold` may be one path or a
    list). Each source is read by `read_gold(path, fmt)` (`auto` detects per file). A later
    source's document with the same `doc_id` replaces the earlier one in place, so a
    re-annotated document corrects the base gold instead of being counted twice, and the
    base gold's other documents stay."""
    docs: dict[str, DocPair] = {}
    for path in gold_sources(gold):
        for doc in read_gold(path, fmt):
            docs[doc.doc_id] = doc
    return list(docs.values())
