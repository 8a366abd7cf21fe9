"""Cochrane review formats: the canonical JSONL, the Devaraj et al. line format, DOI join.

Canonical JSONL (docs/formats.md): one object per review and language,
`{"doi", "version"?, "language", "title"?, "abstract"?: [{"heading", "text"}],
"pls": [{"heading", "text"}] | "text"}`. Devaraj format: `X.source` (abstract),
`X.target` (English PLS) and `X.doi`, one document per line, line-aligned.
No Beam pipeline here (files open through Beam's FileSystems): `pipelines/jobs/cochrane.py` runs them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import zip_longest

from apache_beam.io.filesystems import FileSystems

from medsimp.errors import InputError
from medsimp.reviews import review_key
from pipelines.sources.files import iter_lines, list_files
from pipelines.sources.records import FormatError, check_text, guarded, int_field, loads
from pipelines.sources.rows import locator_key

__all__ = [
    "FormatError",
    "ReviewRecord",
    "Review",
    "split_doi",
    "normalise_doi",
    "doi_key",
    "parse_canonical",
    "parse_canonical_line",
    "devaraj_prefixes",
    "canonical_files",
    "read_devaraj",
    "join_reviews",
]

_DOI_VERSION = re.compile(r"\.pub(\d+)$", re.IGNORECASE)
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_LANGUAGE = re.compile(r"^[a-z]{2}$")
_DOI = re.compile(r"^10\.[^\s/]{1,32}/[^\s]{1,256}$")
# One review in one language is tens of KB (the longest Cochrane abstracts about 30,000
# characters); a record past this is a dead letter `record_too_large` before it is parsed,
# so one huge record costs neither minutes of sentence splitting nor GBs of memory.
MAX_RECORD_CHARS = 1_000_000


@dataclass(frozen=True)
class Section:
    heading: str
    text: str


@dataclass(frozen=True)
class ReviewRecord:
    """One review in one language, as read (DOI already normalised)."""

    doi: str
    version: int
    language: str
    title: str
    abstract: tuple[Section, ...]
    pls: tuple[Section, ...]
    locator: str
    split: str | None = None  # the input's own split (train/validation/test), None when it gives none


# The input's own split of a review: a canonical record's `split` field, a Devaraj file's name
SPLIT_NAMES = {
    "train": "train",
    "val": "validation",
    "validation": "validation",
    "dev": "validation",
    "test": "test",
}


@dataclass
class Review:
    """A review after the DOI join: English abstract, PLS per language."""

    doi: str
    title: str
    abstract: ReviewRecord
    pls: dict[str, ReviewRecord] = field(default_factory=dict)


def split_doi(doi: str) -> tuple[str, int]:
    """`10.1002/14651858.CD011364.pub2` -> (`10.1002/14651858.CD011364`, 2); no suffix is version 1.

    FormatError `bad_doi` for what is not a DOI (`10.<registrant>/<suffix>`, no spaces) or a
    version suffix past int32."""
    doi = _DOI_PREFIX.sub("", doi.strip())
    if not _DOI.match(doi):
        raise FormatError("bad_doi", f"not a DOI ({len(doi)} characters)")
    match = _DOI_VERSION.search(doi)
    if match:
        version = int(match.group(1))
        return doi[: match.start()], int_field(version, "the DOI's .pubN suffix", "bad_doi", 1)
    return doi, 1


def doi_key(doi: str) -> str:
    """The join key of a DOI: the review's identity (`medsimp.reviews.review_key`: DOIs are
    case-insensitive, and a review's versions and URL forms share its CD number)."""
    return review_key(doi)


def normalise_doi(doi: str) -> str:
    """The DOI without a URL prefix or a `.pubN` version suffix."""
    return split_doi(doi)[0]


def _sections(value, name: str) -> tuple[Section, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (Section("", check_text(value, name)),) if value.strip() else ()
    if not isinstance(value, list):
        raise FormatError(f"bad_{name}", f"{name} must be a list of sections or a string")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise FormatError(f"bad_{name}", f"{name}[{i}] needs a string 'text'")
        heading = item.get("heading") or ""
        if not isinstance(heading, str):
            raise FormatError(f"bad_{name}", f"{name}[{i}].heading must be a string")
        if item["text"].strip():
            out.append(Section(check_text(heading.strip(), name), check_text(item["text"], name)))
    return tuple(out)


def parse_canonical(obj, locator: str) -> ReviewRecord:
    """Validate one decoded canonical object."""
    if not isinstance(obj, dict):
        raise FormatError("not_an_object", type(obj).__name__)
    doi = obj.get("doi")
    if not isinstance(doi, str) or not doi.strip():
        raise FormatError("missing_doi")
    base, version = split_doi(doi)
    if obj.get("version") is not None:
        version = int_field(obj["version"], "version", "bad_version", 1)
    language = obj.get("language")
    if not isinstance(language, str) or not _LANGUAGE.match(language):
        raise FormatError("bad_language", "language must be an ISO 639-1 code")
    title = obj.get("title") or ""
    if not isinstance(title, str):
        raise FormatError("bad_title", "title must be a string")
    abstract = _sections(obj.get("abstract"), "abstract")
    pls = _sections(obj.get("pls"), "pls")
    if not abstract and not pls:
        raise FormatError("empty_record", "neither abstract nor pls has text")
    split = obj.get("split")
    if split is not None and (not isinstance(split, str) or split.strip().lower() not in SPLIT_NAMES):
        raise FormatError("bad_split", f"split must be one of {', '.join(SPLIT_NAMES)}")
    return ReviewRecord(
        base,
        version,
        language,
        check_text(title, "title"),
        abstract,
        pls,
        locator,
        SPLIT_NAMES[split.strip().lower()] if split is not None else None,
    )


def _check_size(text: str, what: str) -> None:
    if len(text) > MAX_RECORD_CHARS:
        raise FormatError("record_too_large", f"{what} has {len(text)} characters (limit {MAX_RECORD_CHARS})")


def parse_canonical_line(line: str, locator: str) -> ReviewRecord:
    _check_size(line, "the line")
    return parse_canonical(loads(line), locator)


def devaraj_prefixes(path: str, canonical: bool = False) -> list[str]:
    """Prefixes `dir/split` of complete Devaraj triples in a folder, or the given prefix.
    `canonical`: the folder may hold canonical `*.jsonl` files instead (`canonical_files`)."""
    exts = (".source", ".target", ".doi")
    found = set(list_files(FileSystems.join(path.rstrip("/"), "*")))
    if found:
        prefixes = sorted(
            p[: -len(".source")]
            for p in found
            if p.endswith(".source") and all(p[: -len(".source")] + ext in found for ext in exts)
        )
        if not prefixes and not (canonical and canonical_files(path)):
            raise InputError(
                f"{path}: no X.source/X.target/X.doi triple"
                + (" and no canonical *.jsonl file" if canonical else "")
                + " in this folder"
            )
        return prefixes
    missing = [path + ext for ext in exts if not FileSystems.exists(path + ext)]
    if missing:
        raise InputError(f"Devaraj prefix {path}: missing {', '.join(missing)}")
    return [path]


def canonical_files(folder: str) -> list[str]:
    """The canonical JSONL files (`*.jsonl`) directly in a folder, sorted."""
    return sorted(p for p in list_files(FileSystems.join(folder.rstrip("/"), "*")) if p.endswith(".jsonl"))


def _devaraj_record(name: str, number: int, doi, source, target) -> ReviewRecord:
    locator = f"{name}.doi:{number}"
    if doi is None or source is None or target is None:
        raise FormatError("line_counts_differ", "the .doi, .source and .target files differ in length")
    for text, ext in ((doi, "doi"), (source, "source"), (target, "target")):
        if isinstance(text, UnicodeDecodeError):
            raise FormatError("bad_utf8", f".{ext} line: invalid byte at column {text.start}")
    for text, ext in ((doi, "doi"), (source, "source"), (target, "target")):
        _check_size(text, f"the .{ext} line")
    if not doi.strip():
        raise FormatError("missing_doi")
    if not source.strip() or not target.strip():
        raise FormatError("empty_record", "empty source or target line")
    base, version = split_doi(doi)
    return ReviewRecord(
        base,
        version,
        "en",
        "",
        (Section("", check_text(source, "source")),),
        (Section("", check_text(target, "target")),),
        locator,
        SPLIT_NAMES.get(name) if name in ("train", "val", "test") else None,  # Devaraj's file names
    )


def read_devaraj(prefix: str) -> Iterator[tuple[str, ReviewRecord | FormatError]]:
    """(locator `X.doi:N`, record or error) for each line of a Devaraj triple, read in step
    (any newline convention; a last line without a newline counts)."""
    name = FileSystems.split(prefix)[1]
    streams = (iter_lines(prefix + ext) for ext in (".doi", ".source", ".target"))
    for number, lines in enumerate(zip_longest(*streams), start=1):
        doi, source, target = (line[1] if line else None for line in lines)
        yield f"{name}.doi:{number}", guarded(_devaraj_record, name, number, doi, source, target)


def join_reviews(
    records: Iterable[ReviewRecord],
) -> tuple[Review | None, list[ReviewRecord], list[ReviewRecord]]:
    """Join one DOI's records (same `doi_key`): (review or None, superseded, orphaned records).

    Per language the highest version wins (ties: first locator); older versions and
    duplicates are superseded. The English record must carry an abstract, else every
    record of the DOI is orphaned (nothing to align to). The review's DOI is spelled as
    its English record spells it.
    """
    best: dict[str, ReviewRecord] = {}
    superseded: list[ReviewRecord] = []
    for rec in sorted(records, key=lambda r: (r.language, -r.version, locator_key(r.locator))):
        if rec.language in best:
            superseded.append(rec)
        else:
            best[rec.language] = rec
    english = best.get("en")
    if english is None or not english.abstract:
        return None, [], sorted(best.values(), key=lambda r: locator_key(r.locator)) + superseded
    review = Review(english.doi, english.title, english)
    review.pls = {lang: rec for lang, rec in sorted(best.items()) if rec.pls}
    unused = [rec for lang, rec in best.items() if not rec.pls and lang != "en"]
    return review, superseded + unused, []
