"""QuickUMLS index building (with QuickUMLS's own installer) and concept linking. No Beam here.

Offline setup: QuickUMLS loads the spaCy pipeline named in
`quickumls.constants.SPACY_LANGUAGE_MAP` (and would `spacy download` it) and NLTK
stopwords. It only needs tokenisation, so we save `spacy.blank(<lang>)` pipelines into the
project cache and point the map at them; stopwords come from `ensure_nltk_data()`.
An index directory (the `umls_index` stage's DVC output) holds only `index.json`: fingerprint,
per-language term counts, installer options and the MRCONSO/MRSTY it came from. The QuickUMLS
installations (one per UMLS language, `ENG/`, `SPA/`, ...) live in a content-addressed store,
`<MEDSIMP_CACHE>/quickumls/<fingerprint>/`: QuickUMLS's installer writes different bytes on
every run (UnQLite/LevelDB files), so they must not be a hashed output; the fingerprint is
the sha256 of the inputs and options, so the same inputs always find the same installation.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medsimp.params_schema import Link
from medsimp.resources import cache_dir, ensure_nltk_data

# ISO 639-1 -> UMLS LAT codes that QuickUMLS can tokenise.
UMLS_LANGUAGE = {
    "en": "ENG",
    "es": "SPA",
    "fr": "FRE",
    "de": "GER",
    "it": "ITA",
    "pt": "POR",
    "nl": "DUT",
    "da": "DAN",
    "fi": "FIN",
    "sv": "SWE",
    "pl": "POL",
    "ru": "RUS",
    "tr": "TUR",
    "hu": "HUN",
    "no": "NOR",
    "el": "GRE",
}
SPACY_LANG = {lat: iso for iso, lat in UMLS_LANGUAGE.items()}
MANIFEST = "index.json"


def prepare_quickumls(lats: list[str]) -> None:
    """Saved blank spaCy pipelines + NLTK stopwords, and QuickUMLS's model map pointed at them."""
    import spacy
    from quickumls import constants

    ensure_nltk_data()
    for lat in lats:
        iso = SPACY_LANG[lat]
        path = cache_dir() / "spacy" / f"blank_{iso}"
        if not (path / "config.cfg").exists():
            tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            spacy.blank(iso).to_disk(tmp)
            if path.exists():
                shutil.rmtree(tmp)
            else:
                os.replace(tmp, path)
        constants.SPACY_LANGUAGE_MAP[lat] = str(path)


def file_digest(*paths: str | os.PathLike) -> str:
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _fingerprint(digest: str, options: Mapping[str, Any], languages: list[str]) -> str:
    return hashlib.sha256(json.dumps([digest, options, languages]).encode()).hexdigest()[:16]


def mrconso_languages(mrconso: str) -> Counter:
    """Rows per LAT code in MRCONSO.RRF."""
    counts: Counter = Counter()
    with open(mrconso, encoding="utf-8") as fh:
        for line in fh:
            fields = line.split("|")
            if len(fields) > 14:
                counts[fields[1]] += 1
    return counts


def build_index(
    mrconso: str,
    mrsty: str,
    dest: str | Path,
    languages: list[str],
    lowercase: bool = True,
    normalize_unicode: bool = False,
) -> dict[str, Any]:
    """Write `dest/index.json` and make sure the store holds its installation; return it."""
    present = mrconso_languages(mrconso)
    unknown = sorted(set(languages) - set(SPACY_LANG))
    if unknown:
        raise ValueError(f"umls.languages {unknown} are not UMLS LAT codes QuickUMLS tokenises")
    options = {"lowercase": lowercase, "normalize_unicode": normalize_unicode}
    installed = sorted(lat for lat in languages if present[lat])
    manifest: dict[str, Any] = {
        "fingerprint": _fingerprint(file_digest(mrconso, mrsty), options, installed),
        "languages": {lat: {"terms": present[lat]} for lat in installed},
        "options": options,
        "skipped_languages": sorted(lat for lat in languages if not present[lat]),
        # file names only: a folder as typed would make the bytes depend on where the command ran
        "sources": {"mrconso": os.path.basename(mrconso), "mrsty": os.path.basename(mrsty)},
    }
    store = cache_dir() / "quickumls" / manifest["fingerprint"]
    if not store.is_dir():
        _install(manifest, store, mrconso, mrsty)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    return manifest


def installation(manifest: Mapping[str, Any], sources: tuple[str, str] | None = None) -> Path:
    """The store folder of `manifest`'s QuickUMLS installations, built (atomically, so parallel
    workers are safe) when missing from `sources` (MRCONSO.RRF, MRSTY.RRF: params `umls.mrconso`,
    `umls.mrsty` resolved against the params file's folder), which must be the files the index
    was built from (its fingerprint)."""
    store = cache_dir() / "quickumls" / manifest["fingerprint"]
    if store.is_dir():
        return store
    if sources is None or not all(os.path.isfile(s) for s in sources):
        raise FileNotFoundError(
            f"QuickUMLS index {manifest['fingerprint']} is not in {store.parent} and its sources "
            f"({', '.join(sources or manifest['sources'].values())}) are missing: run `medsimp umls-index`"
        )
    mrconso, mrsty = sources
    options, languages = manifest["options"], sorted(manifest["languages"])
    if _fingerprint(file_digest(mrconso, mrsty), options, languages) != manifest["fingerprint"]:
        raise FileNotFoundError(
            f"QuickUMLS index {manifest['fingerprint']} is not in {store.parent} and {mrconso}, {mrsty} "
            "are not the files it was built from: run `medsimp umls-index`"
        )
    _install(manifest, store, mrconso, mrsty)
    return store


def _install(manifest: Mapping[str, Any], store: Path, mrconso: str, mrsty: str) -> None:
    """Run QuickUMLS's installer per language of `manifest` into `store`, atomically."""
    from quickumls import install

    prepare_quickumls(sorted(manifest["languages"]))
    store.parent.mkdir(parents=True, exist_ok=True)
    options = manifest["options"]
    with (
        tempfile.TemporaryDirectory() as src,
        tempfile.TemporaryDirectory(dir=store.parent, prefix=f".{store.name}.tmp-") as tmp,
    ):
        os.symlink(os.path.abspath(mrconso), os.path.join(src, "MRCONSO.RRF"))
        os.symlink(os.path.abspath(mrsty), os.path.join(src, "MRSTY.RRF"))
        for lat in sorted(manifest["languages"]):
            target = Path(tmp) / "index" / lat
            target.mkdir(parents=True)  # the installer asks on stdin when it must create it
            argv = ["quickumls-install", src, str(target), "-E", lat]
            argv += ["-L"] if options["lowercase"] else []
            argv += ["-U"] if options["normalize_unicode"] else []
            saved, sys.argv = sys.argv, argv
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    install.main()
            finally:
                sys.argv = saved
        with contextlib.suppress(OSError):  # another worker won the race: theirs is the same index
            os.rename(Path(tmp) / "index", store)


DEMO_TERMS = 100_000  # MRCONSO rows; a UMLS release has millions, the embedded demo about 1,300


def index_terms(manifest: dict[str, Any]) -> int:
    """The MRCONSO terms of an index, over its languages."""
    return sum(int(v.get("terms", 0)) for v in manifest.get("languages", {}).values())


def demo_note(manifest: dict[str, Any]) -> list[str]:
    """The summary warning for a demo-sized index (the embedded starter vocabulary)."""
    terms = index_terms(manifest)
    if terms >= DEMO_TERMS:
        return []
    return [
        f"the UMLS index holds only {terms} terms: a demo vocabulary, not a UMLS release, so "
        "concept links are a smoke test; point umls.mrconso and umls.mrsty at a licensed UMLS "
        "release (META/MRCONSO.RRF, META/MRSTY.RRF)"
    ]


def read_manifest(index_dir: str | Path) -> dict[str, Any]:
    path = Path(index_dir) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: build the index with `medsimp umls-index`")
    return json.loads(path.read_text(encoding="utf-8"))


NEGATING_PREFIXES = frozenset(
    {"a", "an", "non", "non-", "un", "in", "im", "ir", "il", "dis", "des", "dé", "dés", "no", "no-"}
)


def negation_flip(text: str, term: str) -> bool:
    """True when a word of `text` and the same-position word of `term` differ only by a
    negating prefix ("symptomatic" / "asymptomatic", "infeccioso" / "no infeccioso" is not a
    flip since the word counts differ): character-trigram similarity cannot see that."""
    words, term_words = text.lower().split(), term.lower().split()
    if len(words) != len(term_words):
        return False
    for a, b in zip(words, term_words):
        short, long = sorted((a, b), key=len)
        if short != long and long.endswith(short) and long[: len(long) - len(short)] in NEGATING_PREFIXES:
            return True
    return False


# The `link` params that decide what the matchers return: with the index fingerprint, they key
# the link stage's document cache.
MATCHER_SETTINGS = (
    "overlapping_criteria",
    "threshold",
    "similarity_name",
    "window",
    "min_match_length",
    "accepted_semtypes",
    "reject_negation_flips",
)


def matcher_settings(params: Link) -> dict[str, Any]:
    """The matcher settings of the `link` section, as plain values (a cache key's part)."""
    return params.model_dump(include=set(MATCHER_SETTINGS))


_LOADING = threading.Lock()  # QuickUMLS matchers are built one at a time in a process (ConceptLinker.load)


class ConceptLinker:
    """QuickUMLS matchers per language; `link(text, lang)` -> best concept per mention.

    `params` (the `link` section): overlapping_criteria, threshold, similarity_name,
    window, min_match_length, accepted_semtypes (a list, or null for all types),
    reject_negation_flips (drop candidates whose term negates the text, see `negation_flip`).

    A language's matcher (its spaCy tokenizer and databases) loads at its first `link` or
    `load`: the French tokenizer alone costs about 3 CPU-s (its exception patterns compile into
    one large regular expression), which an English-only table, or a run whose documents all come
    from the cache, never needs.
    """

    def __init__(self, index_dir: str | Path, params: Link):
        self.manifest = read_manifest(index_dir)
        self.store = installation(self.manifest)
        self.params = params
        self.reject_flips = params.reject_negation_flips
        self.languages = {SPACY_LANG[lat]: lat for lat in self.manifest["languages"]}
        self.matchers: dict[str, Any] = {}

    def load(self, language: str):
        """The QuickUMLS matcher of `language` (an ISO code `has_language` accepts), loaded once.
        Loading redirects stdout (QuickUMLS prints) and may save a blank spaCy pipeline: one
        thread at a time (Beam's multi-threaded workers run a DoFn instance per thread)."""
        found = self.matchers.get(language)
        if found is None:
            from quickumls import QuickUMLS

            with _LOADING:
                lat = self.languages[language]
                prepare_quickumls([lat])
                semtypes = self.params.accepted_semtypes  # null: every type
                with contextlib.redirect_stdout(io.StringIO()):
                    found = QuickUMLS(
                        str(self.store / lat),
                        overlapping_criteria=self.params.overlapping_criteria,
                        threshold=float(self.params.threshold),
                        window=self.params.window,
                        similarity_name=self.params.similarity_name,
                        min_match_length=self.params.min_match_length,
                        accepted_semtypes=set(semtypes) if semtypes is not None else None,
                    )
            self.matchers[language] = found
        return found

    @property
    def fingerprint(self) -> str:
        return self.manifest["fingerprint"]

    def has_language(self, language: str) -> bool:
        return language in self.languages

    def link(self, text: str, language: str) -> list[dict]:
        """Concepts {start, end, term, cui, semtypes, similarity}, one per mention, by start."""
        matches = self.load(language).match(text, best_match=True, ignore_syntax=False)
        out = []
        for candidates in matches:
            if self.reject_flips:
                candidates = [m for m in candidates if not negation_flip(m["ngram"], m["term"])]
                if not candidates:
                    continue
            best = min(candidates, key=lambda m: (-(m["similarity"] + m["preferred"]), m["cui"]))
            out.append(
                {
                    "start": int(best["start"]),
                    "end": int(best["end"]),
                    "term": best["term"],
                    "cui": best["cui"],
                    "semtypes": sorted(best["semtypes"]),
                    "similarity": round(float(best["similarity"]), 6),
                }
            )
        return sorted(out, key=lambda c: (c["start"], c["end"], c["cui"]))
