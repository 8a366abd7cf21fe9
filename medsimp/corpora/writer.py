"""Write a built dataset as a Hugging Face dataset folder: parquet files + README.md card.

Layout: `<config>/<split>-<sha256[:16]>.parquet`, `README.md` (YAML `configs:` so
`datasets.load_dataset(folder, config)` works offline), `stats.json` and
`dead_letter/part-00000.jsonl`. Files are written with pinned parquet settings
and no timestamps, so the same inputs and params give byte-identical folders.
The content hash in each file name matters: `datasets` keys its cache of a local
folder on the card's YAML (data file patterns), not on the files' content, so a
rebuilt folder with unchanged names would load stale cached data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from medsimp import code_graph, lineage
from medsimp import resources as packaged
from medsimp.atomic import atomic_dir, write_json, write_jsonl
from medsimp.corpora.common import (
    PHYSIONET_LICENSE,
    PHYSIONET_LICENSE_LINK,
    SPLITS,
    BuiltDataset,
    StreamedSplit,
)
from medsimp.stats import check_reconciles

PARQUET_SETTINGS: dict[str, Any] = {  # the writer's settings (part of the output bytes)
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "version": "2.6",
    "data_page_version": "1.0",
    "store_schema": True,
}
ROW_GROUP_SIZE = 2_000  # rows per row group (part of the bytes; the writer holds one group)


def git_revision(cwd: str | Path = ".") -> str:
    """The commit the build ran at (`unknown` outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


# The command whose code a card's hash covers: `medsimp build` (the entry point and every module
# it imports, with the packaged resources they read) and the builder it runs: the build@<name>
# stage's code deps, but the params sections that stage lists only for their values (the
# upstream stages'), which are on the card as params hashes instead.
BUILD_COMMAND = "medsimp.cli.commands.build"


def code_hash(*builders: str) -> str:
    """sha256 (first 16 hex digits) of the code that builds a corpus: the import closure of
    `medsimp build` and the modules of `builders` (`medsimp.corpora.<name>`, which it imports by
    name) (`medsimp.code_graph`; module names and bytes, then packaged resources by
    name and bytes, sorted), read where Python imports them from, so a checkout and an
    installed wheel of the same commit agree, and code the build never runs (the annotator
    page, the trainer) does not change the card.

    A card records this instead of the git revision: a DVC output cannot carry the commit that
    records its own hash in dvc.lock (the lock is written before that commit exists), so a
    revision on the card would make every fresh clone's `dvc repro` rewrite dvc.lock. The
    build's run record (`metrics/build-<name>.json.run.json`) keeps the git revision."""
    modules, names = code_graph.closure(["medsimp.cli", BUILD_COMMAND, *builders])
    files = [(f"module {name}", path) for name, path in modules.items()]
    for name in names:
        found = packaged.path(name)
        entries = sorted(found.rglob("*")) if found.is_dir() else [found]
        files += [
            (
                f"resource {name}/{p.relative_to(found).as_posix()}"
                if found.is_dir()
                else f"resource {name}",
                p,
            )
            for p in entries
            if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
        ]
    digest = hashlib.sha256()
    for key, path in sorted(files):
        digest.update(f"{key}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class WrittenSplit:
    """What the card needs of a written split: its rows, file (None when empty: no file),
    schema, languages (of a `language` column) and first row."""

    rows: int
    path: str | None
    schema: pa.Schema
    languages: frozenset[str]
    first_row: dict[str, Any] | None


Written = dict[tuple[str, str], WrittenSplit]


def _chunks(split: pa.Table | StreamedSplit) -> Iterator[pa.Table]:
    if isinstance(split, StreamedSplit):
        yield from split.chunks()
    else:
        yield split


def write_split(split: pa.Table | StreamedSplit, folder: Path, stem: str, metadata: dict) -> WrittenSplit:
    """Write one split to `folder/<stem>-<sha256[:16]>.parquet` (nothing for no rows), holding
    one row group at a time. Each row group is written as one contiguous table, so the bytes
    are those of `pq.write_table(all rows, row_group_size=ROW_GROUP_SIZE, **PARQUET_SETTINGS)`
    however the split was chunked (dictionary-encoded pages follow a table's chunks)."""
    schema = (
        split.schema.with_metadata({**(split.schema.metadata or {}), **metadata})
        if metadata
        else split.schema
    )
    partial = folder / f"{stem}.partial"
    partial.parent.mkdir(parents=True, exist_ok=True)
    rows, first = 0, None
    languages: set[str] = set()
    held: list[pa.Table] = []
    held_rows = 0
    with pq.ParquetWriter(partial, schema, **PARQUET_SETTINGS) as writer:
        for chunk in _chunks(split):
            if first is None and chunk.num_rows:
                first = chunk.slice(0, 1).to_pylist()[0]
            if "language" in chunk.column_names:
                languages.update(str(v) for v in chunk.column("language").unique().to_pylist() if v)
            rows += chunk.num_rows
            while chunk.num_rows:
                take = min(ROW_GROUP_SIZE - held_rows, chunk.num_rows)
                held.append(chunk.slice(0, take))
                held_rows, chunk = held_rows + take, chunk.slice(take)
                if held_rows == ROW_GROUP_SIZE:
                    writer.write_table(pa.concat_tables(held).combine_chunks(), row_group_size=ROW_GROUP_SIZE)
                    held, held_rows = [], 0
        if held:
            writer.write_table(pa.concat_tables(held).combine_chunks(), row_group_size=ROW_GROUP_SIZE)
    if not rows:
        partial.unlink()
        if partial.parent != folder:
            with contextlib.suppress(OSError):  # a config folder with no file in it: gone
                partial.parent.rmdir()
        return WrittenSplit(0, None, split.schema, frozenset(), None)
    digest = hashlib.sha256()
    with partial.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    path = f"{stem}-{digest.hexdigest()[:16]}.parquet"
    partial.replace(folder / path)
    return WrittenSplit(rows, path, split.schema, frozenset(languages), first)


def write_splits(ds: BuiltDataset, folder: Path) -> Written:
    """Every config's splits under `folder/<config>/`, in sorted order."""
    metadata = lineage.metadata(ds.lineage) if ds.lineage is not None else {}
    return {
        (cfg, split): write_split(data, folder, f"{cfg}/{split}", metadata)
        for cfg, splits in sorted(ds.configs.items())
        for split, data in sorted(splits.items())
    }


def split_counts(written: Written) -> dict[str, dict[str, int]]:
    """Rows per config and split."""
    by_config: dict[str, dict[str, int]] = {}
    for (cfg, split), w in sorted(written.items()):
        by_config.setdefault(cfg, {})[split] = w.rows
    return {cfg: {s: counts[s] for s in _split_order(counts)} for cfg, counts in by_config.items()}


def _split_order(splits: Mapping[str, Any]) -> list[str]:
    return [s for s in SPLITS if s in splits] + sorted(set(splits) - set(SPLITS))


def _yaml_header(ds: BuiltDataset, provenance: dict[str, Any], written: Written) -> dict[str, Any]:
    configs = []
    for cfg in sorted(ds.configs):
        files = [
            {"split": s, "path": written[(cfg, s)].path}
            for s in _split_order(ds.configs[cfg])
            if written[(cfg, s)].path
        ]
        if not files:
            continue
        entry: dict[str, Any] = {"config_name": cfg, "data_files": files}
        if cfg == ds.default_config:
            entry["default"] = True
        configs.append(entry)
    languages = sorted({lang for w in written.values() for lang in w.languages})
    restricted = lineage.is_restricted(ds.lineage)
    header: dict[str, Any] = {
        "pretty_name": ds.title,
        "license": ds.license,
        "license_name": PHYSIONET_LICENSE if restricted else ds.hub.license_name,
        "license_link": PHYSIONET_LICENSE_LINK if restricted else ds.hub.license_link,
        "language": languages or list(ds.hub.languages),
        "task_categories": list(ds.hub.task_categories),
        "size_categories": [
            size_category(max((sum(counts.values()) for counts in split_counts(written).values()), default=0))
        ],
        "tags": sorted({"medsimp", *ds.hub.tags}),
    }
    if ds.license != "other":
        del header["license_name"], header["license_link"]
    if restricted:  # the Hub asks for these before it shows a gated dataset's files
        header["extra_gated_prompt"] = GATED_PROMPT
        header["extra_gated_fields"] = dict(GATED_FIELDS)
    header["configs"] = configs
    header["medsimp"] = {
        "builder": ds.name,
        "mimic_derived": lineage.is_restricted(ds.lineage),
        "lineage": list(ds.lineage) if ds.lineage is not None else None,
        **provenance,
    }
    return header


GATED_PROMPT = (
    "This dataset derives from MIMIC clinical notes (PhysioNet Credentialed Health Data License 1.5.0). "
    "Only credentialed PhysioNet users who signed the data use agreement of the source database may "
    "access it; do not share it or send it to online services that retain data."
)
GATED_FIELDS = (
    ("PhysioNet username", "text"),
    ("I am a credentialed PhysioNet user and signed the source database's data use agreement", "checkbox"),
    ("I will not share this data nor send it to services that retain it", "checkbox"),
)
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
WITHHELD = "<MIMIC-derived text withheld from the card>"


def size_category(rows: int) -> str:
    """The Hub's `size_categories` bucket of a row count."""
    return next(
        (label for bound, label in _SIZES if rows < bound), "1M<n<10M" if rows < 10_000_000 else "n>1T"
    )


def _example_value(value: Any, restricted: bool) -> Any:
    if isinstance(value, str):
        return WITHHELD if restricted and value else value if len(value) <= 240 else value[:240] + "..."
    if isinstance(value, list):
        shown = [_example_value(v, restricted) for v in value[:3]]
        return shown + ([f"... {len(value) - 3} more"] if len(value) > 3 else [])
    if isinstance(value, dict):
        return {k: _example_value(v, restricted) for k, v in value.items()}
    return value


def example_instance(ds: BuiltDataset, written: Written) -> tuple[str, str, dict[str, Any]] | None:
    """(config, split, first row) of the default config, strings withheld when restricted."""
    for split in _split_order(ds.configs.get(ds.default_config, {})):
        row = written[(ds.default_config, split)].first_row
        if row is not None:
            return ds.default_config, split, _example_value(row, lineage.is_restricted(ds.lineage))
    return None


def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _features_section(ds: BuiltDataset) -> str:
    by_schema: dict[str, tuple[pa.Schema, list[str]]] = {}
    for cfg in sorted(ds.configs):
        splits = list(ds.configs[cfg].values())
        if splits:
            schema = splits[0].schema
            by_schema.setdefault(str(schema), (schema, []))[1].append(cfg)
    parts = []
    for schema, cfgs in by_schema.values():
        rows = [[f"`{f.name}`", f"`{f.type}`", ds.feature_descriptions.get(f.name, "")] for f in schema]
        parts.append(
            f"Configs {', '.join(f'`{c}`' for c in cfgs)}:\n\n"
            + _md_table(["feature", "type", "meaning"], rows)
        )
    return "\n\n".join(parts)


def _example_section(ds: BuiltDataset, written: Written) -> str:
    example = example_instance(ds, written)
    if example is None:
        return "The default config has no rows."
    config, split, row = example
    note = " (MIMIC-derived: text fields withheld)" if lineage.is_restricted(ds.lineage) else ""
    return (
        f"The first row of `{config}` / `{split}`{note}:\n\n```json\n"
        + json.dumps(row, ensure_ascii=False, indent=2, sort_keys=False)
        + "\n```"
    )


def render_card(ds: BuiltDataset, provenance: dict[str, Any], written: Written) -> str:
    """The README.md dataset card; every count in it comes from the written files."""
    counts = split_counts(written)
    split_names = [s for s in SPLITS if any(s in c for c in counts.values())]
    config_rows = [
        [f"`{cfg}`", ds.config_descriptions.get(cfg, "")] + [counts[cfg].get(s, 0) for s in split_names]
        for cfg in sorted(counts)
    ]
    body = [
        "---",
        yaml.safe_dump(
            _yaml_header(ds, provenance, written), sort_keys=False, allow_unicode=True, width=100
        ).rstrip(),
        "---",
        "",
        f"# {ds.title}",
        "",
        ds.description.strip(),
        "",
        "## Configs and splits",
        "",
        _md_table(["config", "content"] + split_names, config_rows),
        "",
        f'Load a config offline with `datasets.load_dataset("builders/{ds.name}", "{ds.default_config}")`.',
        "",
        "## Features",
        "",
        _features_section(ds),
        "",
        "## Example instance",
        "",
        _example_section(ds, written),
        "",
        "## Intended use",
        "",
        ds.hub.intended_use.strip(),
        "",
        "## Limitations and biases",
        "",
        ds.hub.limitations.strip(),
        "",
        "## Source and citation",
        "",
        "```bibtex",
        ds.citation.strip(),
        "```",
        "",
        "## License and access terms",
        "",
        ds.access.strip(),
        "",
        "## How it was built",
        "",
        _md_table(["what", "value"], [[k, f"`{v}`"] for k, v in provenance.items()]),
        "",
        _md_table(["count", "value"], [[k, v] for k, v in sorted(ds.counts.items())]),
    ]
    if ds.notes:
        body += ["", *[f"- {n}" for n in ds.notes]]
    return "\n".join(body) + "\n"


def write_builder(ds: BuiltDataset, out_dir: str | Path, provenance: dict[str, Any]) -> dict:
    """Write the dataset folder atomically; return the stats written to `stats.json`."""
    check_reconciles(ds.counts, "read", ["kept", "filtered", "rejected"])
    with atomic_dir(out_dir, lineage=ds.lineage) as tmp:
        written = write_splits(ds, tmp)
        stats = {"builder": ds.name, **ds.counts, "splits": split_counts(written)}
        (tmp / "README.md").write_text(render_card(ds, provenance, written), encoding="utf-8")
        write_json(tmp / "stats.json", stats)
        write_jsonl(
            tmp / "dead_letter" / "part-00000.jsonl",
            sorted(ds.rejects, key=lambda r: json.dumps(r, sort_keys=True)),
        )
    return stats
