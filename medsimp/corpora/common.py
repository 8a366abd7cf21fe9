"""Shared pieces of the dataset builders: the built-dataset record, input readers, splits, types."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medsimp.params_schema import PlabaSplit, Split

SPLITS = ("train", "validation", "test")


class BuildError(ValueError):
    """A builder cannot run on its inputs (missing directory, missing columns)."""


PHYSIONET_LICENSE = "physionet-credentialed-health-data-1.5.0"
PHYSIONET_LICENSE_LINK = (
    "https://physionet.org/about/licenses/physionet-credentialed-health-data-license-150/"
)


@dataclass(frozen=True)
class HubCard:
    """What a dataset card tells the Hub and its readers beyond the data: licence name and link
    (for `license: other`), task categories and tags, and the intended-use and
    limitations-and-biases sections."""

    license_name: str
    license_link: str
    intended_use: str
    limitations: str
    tags: tuple[str, ...] = ()
    task_categories: tuple[str, ...] = ("text-generation",)
    languages: tuple[str, ...] = ("en",)  # for tables without a `language` column


@dataclass(frozen=True)
class StreamedSplit:
    """A split a builder does not hold: `chunks()` yields its rows in order as Arrow tables of
    `schema` (each at most CHUNK_ROWS rows), afresh on every call."""

    schema: pa.Schema
    chunks: Callable[[], Iterator[pa.Table]]


@dataclass
class BuiltDataset:
    """Everything `write_builder` needs: tables per config and split, and the card facts.

    A split is a table, or a `StreamedSplit` read from scratch files the builder keeps until
    the dataset is closed: use it as a context manager (`with build_dataset(...) as ds:`).
    """

    name: str
    title: str
    description: str
    citation: str
    license: str
    access: str
    configs: dict[str, dict[str, pa.Table]]
    config_descriptions: dict[str, str]
    feature_descriptions: dict[str, str]
    counts: Mapping[str, int | float | None]  # numbers; a statistic without data is None
    default_config: str
    hub: HubCard
    mimic_derived: bool = False  # the builder's own non-Parquet inputs are MIMIC-derived
    lineage: tuple[str, ...] | None = None  # set by `medsimp build` from the inputs (medsimp.lineage)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # crf_score of every kept automatic English row (keep true, all splits, sorted): the card's
    # expected precision of the kept rows (alignment.calibration)
    aligner_scores: list[float] = field(default_factory=list)
    resources: ExitStack = field(default_factory=ExitStack)  # closed with the dataset

    def __enter__(self) -> BuiltDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.resources.close()


def read_parquet_dir(
    path: str | Path, columns: Iterable[str] | None = None, project: bool = False
) -> pa.Table:
    """All `*.parquet` files under `path` (sorted by name) as one table; `columns` must be
    present, and with `project` they are the only ones read."""
    path = Path(path)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path] if path.exists() else []
    if not files:
        raise BuildError(f"no parquet files at {path} (run the upstream stage first)")
    if project and columns is not None:
        wanted = list(columns)  # each part's share of them; the union is checked below
        tables = [
            pq.read_table(f, columns=[c for c in wanted if c in pq.read_schema(f).names]) for f in files
        ]
    else:
        tables = [pq.read_table(f) for f in files]
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    if columns is not None:
        missing = sorted(set(columns) - set(table.column_names))
        if missing:
            raise BuildError(f"{path} lacks columns {missing}")
    return table


def iter_parquet_dir(path: str | Path, schema: pa.Schema, batch_rows: int) -> Iterator[pa.Table]:
    """The rows of all `*.parquet` files under `path` (sorted by name), `batch_rows` at a time,
    as tables of `schema`'s columns in its order (a column a file lacks is null there). Every
    column must be in some file; a file's values are cast to `schema`'s types."""
    path = Path(path)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path] if path.exists() else []
    if not files:
        raise BuildError(f"no parquet files at {path} (run the upstream stage first)")
    names = [pq.read_schema(f).names for f in files]
    missing = sorted(set(schema.names) - {n for file_names in names for n in file_names})
    if missing:
        raise BuildError(f"{path} lacks columns {missing}")
    for f, file_names in zip(files, names):
        present = [n for n in schema.names if n in file_names]
        for batch in pq.ParquetFile(f).iter_batches(
            batch_size=batch_rows, columns=present, use_threads=False
        ):
            arrays = []
            for fld in schema:
                if fld.name not in file_names:
                    arrays.append(pa.nulls(batch.num_rows, fld.type))
                    continue
                column = batch.column(fld.name)
                try:
                    arrays.append(column.cast(fld.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    raise BuildError(
                        f"{f.name}: column {fld.name} is {column.type}, not {fld.type}"
                    ) from None
            yield pa.Table.from_arrays(arrays, schema=schema)


def _only(table: pa.Table, ids: set[str] | None) -> pa.Table:
    """The rows of `table` whose sentence_id is in `ids` (all rows when `ids` is None)."""
    if ids is None:
        return table
    return table.filter(pc.is_in(table.column("sentence_id"), value_set=pa.array(list(ids), pa.string())))


def load_links(path: str | Path, ids: set[str] | None = None) -> dict[str, tuple[list[dict], dict | None]]:
    """sentence_id -> (concepts, readability) from a `medsimp link` output directory (only
    the sentences in `ids`, when given: a build holds what its pairs use, not the corpus)."""
    table = _only(read_parquet_dir(path, ["sentence_id", "concepts", "readability"], project=True), ids)
    return {
        sid: (c or [], r)
        for sid, c, r in zip(
            table.column("sentence_id").to_pylist(),
            table.column("concepts").to_pylist(),
            table.column("readability").to_pylist(),
        )
    }


def load_texts(path: str | Path, ids: set[str] | None = None) -> dict[str, str]:
    """sentence_id -> text from a common sentence table directory (only `ids`, when given)."""
    table = _only(read_parquet_dir(path, ["sentence_id", "text"], project=True), ids)
    return dict(zip(table.column("sentence_id").to_pylist(), table.column("text").to_pylist()))


def side_annotations(
    ids: list[str], texts: dict[str, str], links: dict[str, tuple]
) -> tuple[list[dict], list[Any], int]:
    """For sentences joined by a space: concepts with spans shifted into the joined text,
    readability per sentence (None where unlinked), and the number of unlinked sentences."""
    concepts: list[dict] = []
    readability: list[Any] = []
    offset, missing = 0, 0
    for sid in ids:
        link = links.get(sid)
        if link is None:
            missing += 1
            readability.append(None)
        else:
            for c in link[0]:
                concepts.append({**c, "start": c["start"] + offset, "end": c["end"] + offset})
            readability.append(link[1])
        offset += len(texts[sid]) + 1
    return concepts, readability, missing


def unit_hash(key: str, seed: int) -> float:
    """A number in [0, 1) from sha256(seed:key): stable on every machine and run."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def seeded_split(keys: Iterable[str], validation: float, test: float, seed: int) -> dict[str, str]:
    """Assign each key to a split by its own `unit_hash`: test below `test`, validation below
    `test + validation`, train above.

    A key's split depends only on the key and the seed, so a refresh that adds reviews never
    moves an existing one (small samples are then completed by `cover_splits`).
    """
    if validation < 0 or test < 0 or validation + test >= 1:
        raise BuildError(f"split ratios validation={validation} test={test} leave no training keys")
    out = {}
    for key in set(keys):
        u = unit_hash(key, seed)
        out[key] = "test" if u < test else "validation" if u < test + validation else "train"
    return out


def exact_split(keys: Iterable[str], validation: float, test: float, seed: int) -> dict[str, str]:
    """Exact-ratio split: keys ordered by `unit_hash`, the first round(n * test) to test, the
    next round(n * validation) to validation (halves round up), the rest to train.

    Exact proportions, as a paper's 70/15/15 states them; unlike `seeded_split` a key can
    move when keys are added.
    """
    if validation < 0 or test < 0 or validation + test >= 1:
        raise BuildError(f"split ratios validation={validation} test={test} leave no training keys")
    ordered = sorted(set(keys), key=lambda k: (unit_hash(k, seed), k))
    n = len(ordered)
    n_test, n_val = int(n * test + 0.5), int(n * validation + 0.5)
    out = {k: "test" for k in ordered[:n_test]}
    out.update({k: "validation" for k in ordered[n_test : n_test + n_val]})
    out.update({k: "train" for k in ordered[n_test + n_val :]})
    return out


PRIORITY = ("train", "test", "validation")  # which split a small group gets first


def cover_splits(
    split_of: dict[str, str], groups: dict[str, set[str]], seed: int, fixed: Set[str] = frozenset()
) -> dict[str, str]:
    """Move keys so each group of n keys covers the first min(n, 3) splits of PRIORITY.

    Groups are e.g. the reviews of each language: with few reviews a seeded split can
    leave a language without training or test reviews. Groups are served smallest
    first; one key per covered split is locked, and a missing split takes the group's
    first unlocked key (`unit_hash` order), so a move never uncovers a split an
    earlier group relies on. Best effort (a group whose keys are all locked stays as
    is); corpora whose groups already cover their splits, as any sizeable one does,
    are left untouched. Keys in `fixed` (placed by a more authoritative source) count for
    coverage but never move.
    """
    out = dict(split_of)
    locked: set[str] = set(fixed)
    for name in sorted(groups, key=lambda g: (len(groups[g]), g)):
        keys = sorted(groups[name], key=lambda k: (unit_hash(k, seed), k))
        wanted = PRIORITY[: min(len(keys), 3)]
        missing = []
        for split in wanted:
            have = sorted((k for k in keys if out[k] == split), key=lambda k: k not in locked)
            if have:
                locked.add(have[0])
            else:
                missing.append(split)
        for split in missing:
            free = [k for k in keys if k not in locked]
            if free:
                out[free[0]] = split
                locked.add(free[0])
    return out


def table_from_rows(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows -> table with exactly `schema` (extra keys dropped, missing ones null)."""
    return pa.Table.from_pylist(rows, schema=schema)


CHUNK_ROWS = 1_000  # rows a builder holds as Python dicts at once (read, joined, or converted to Arrow)


def chunked_tables(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.Table]:
    """Rows -> tables of `schema` of CHUNK_ROWS rows each (the last may be shorter)."""
    it = iter(rows)
    while chunk := list(islice(it, CHUNK_ROWS)):
        yield table_from_rows(chunk, schema)


MIMIC_III_CITATION = """@article{johnson-etal-2016-mimic,
  title = {MIMIC-III, a freely accessible critical care database},
  author = {Johnson, Alistair E. W. and Pollard, Tom J. and Shen, Lu and Lehman, Li-wei H.
    and Feng, Mengling and Ghassemi, Mohammad and Moody, Benjamin and Szolovits, Peter
    and Celi, Leo Anthony and Mark, Roger G.},
  journal = {Scientific Data}, volume = {3}, pages = {160035}, year = {2016}
}"""


def split_units(units: set[str], split_cfg: Split | PlabaSplit, group: str) -> dict[str, str]:
    """Seeded train/validation/test split of `units` (params `split`), covering every split
    the number of units allows (see `cover_splits`)."""
    seed = split_cfg.seed
    return cover_splits(
        seeded_split(units, float(split_cfg.validation), float(split_cfg.test), seed),
        {group: units},
        seed,
    )
