"""Cochrane review formats: the canonical JSONL, the Devaraj et al. line format, DOI join.

Canonical JSONL (docs/formats.md): one object per review and language,
`{"doi", "version"?, "language", "title"?, "abstract"?: [{"heading", "text"}],
"pls": [{"heading", "text"}] | "text"}`. Devaraj format: `X.source` (abstract),
`X.target` (English PLS) and `X.doi`, one document per line, line-aligned.
No Beam here: the job in `pipelines/cochrane.py` calls these functions.
"""
from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO
from dataclasses import dataclass, field

from medsimp.errors import InputError
from medsimp.pipelines.sentence_rows import locator_key

_DOI_VERSION = re.compile(r"\.pub(\d+)$", re.IGNORECASE)
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_LANGUAGE = re.compile(r"^[a-z]{2}$")


class FormatError(ValueError):
    """A record that cannot be used; `reason` is a short stable code for dead letters."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


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


@dataclass
class Review:
    """A review after the DOI join: English abstract, PLS per language."""
    doi: str
    title: str
    abstract: ReviewRecord
    pls: dict[str, ReviewRecord] = field(default_factory=dict)


def split_doi(doi: str) -> tuple[str, int]:
    """`10.1002/14651858.CD011364.pub2` -> (`10.1002/14651858.CD011364`, 2); no suffix is version 1."""
    doi = _DOI_PREFIX.sub("", doi.strip())
    match = _DOI_VERSION.search(doi)
    if match:
        return doi[: match.start()], int(match.group(1))
    return doi, 1


def normalise_doi(doi: str) -> str:
    """The DOI without a URL prefix or a `.pubN` version suffix."""
    return split_doi(doi)[0]


def _sections(value, name: str) -> tuple[Section, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (Section("", value),) if value.strip() else ()
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
            out.append(Section(heading.strip(), item["text"]))
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
        if not isinstance(obj["version"], int) or obj["version"] < 1:
            raise FormatError("bad_version", "version must be a positive integer")
        version = obj["version"]
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
    return ReviewRecord(base, version, language, title, abstract, pls, locator)


def parse_canonical_line(line: str, locator: str) -> ReviewRecord:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise FormatError("bad_json", f"{exc.msg} at column {exc.colno}") from None
    return parse_canonical(obj, locator)


def _local_glob(pattern: str) -> list[str]:
    return sorted(glob.glob(pattern))


def _local_open(path: str) -> BinaryIO:
    return open(path, "rb")


def devaraj_prefixes(path: str, listing: Callable[[str], list[str]] = _local_glob) -> list[str]:
    """Prefixes `dir/split` of complete Devaraj triples in a directory, or the given prefix.
    `listing(glob)` lists matching files (the Beam job passes one over Beam's FileSystems)."""
    sources = listing(os.path.join(path, "*.source"))
    if sources or os.path.isdir(path):
        prefixes = [s[: -len(".source")] for s in sorted(sources)]
        prefixes = [p for p in prefixes if all(listing(p + ext) for ext in (".target", ".doi"))]
        if not prefixes:
            raise InputError(f"no X.source/X.target/X.doi triple in {path}")
        return prefixes
    missing = [path + ext for ext in (".source", ".target", ".doi") if not listing(path + ext)]
    if missing:
        raise InputError(f"Devaraj prefix {path}: missing {', '.join(missing)}")
    return [path]


def _lines(path: str, opener: Callable[[str], BinaryIO]) -> list[str]:
    with opener(path) as fh:
        text = fh.read().decode("utf-8")
    return text.split("\n")[:-1] if text else []


def read_devaraj(prefix: str, opener: Callable[[str], BinaryIO] = _local_open
                 ) -> Iterator[tuple[str, ReviewRecord | FormatError]]:
    """(locator, record or error) for each line of a Devaraj triple (locator `X.doi:N`).
    `opener` opens a file for binary reading (the Beam job passes Beam's FileSystems.open)."""
    dois, sources, targets = (_lines(prefix + ext, opener) for ext in (".doi", ".source", ".target"))
    name = os.path.basename(prefix)
    for i in range(max(len(dois), len(sources), len(targets))):
        locator = f"{name}.doi:{i + 1}"
        if i >= min(len(dois), len(sources), len(targets)):
            yield locator, FormatError("line_counts_differ",
                                       f"doi={len(dois)} source={len(sources)} target={len(targets)} lines")
            continue
        doi, source, target = dois[i].strip(), sources[i].rstrip("\r"), targets[i].rstrip("\r")
        if not doi:
            yield locator, FormatError("missing_doi")
            continue
        if not source.strip() or not target.strip():
            yield locator, FormatError("empty_record", "empty source or target line")
            continue
        base, version = split_doi(doi)
        yield locator, ReviewRecord(base, version, "en", "", (Section("", source),),
                                    (Section("", target),), locator)


def join_reviews(doi: str, records: Iterable[ReviewRecord]
                 ) -> tuple[Review | None, list[ReviewRecord], list[ReviewRecord]]:
    """Join one DOI's records: (review or None, superseded records, orphaned records).

    Per language the highest version wins (ties: first locator); older versions and
    duplicates are superseded. The English record must carry an abstract, else every
    record of the DOI is orphaned (nothing to align to).
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
    review = Review(doi, english.title, english)
    review.pls = {lang: rec for lang, rec in sorted(best.items()) if rec.pls}
    unused = [rec for lang, rec in best.items() if not rec.pls and lang != "en"]
    return review, superseded + unused, []
