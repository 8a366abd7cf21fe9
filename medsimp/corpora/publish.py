"""The publish guard and upload: push a built dataset folder to a Hugging Face Hub dataset
repository, never MIMIC-derived data.

The guard reads the data, never a flag: every file that would be uploaded must be a Parquet
table whose schema carries a known lineage (`medsimp.lineage`) with no MIMIC source, or the
card / stats file; no string in them may show MIMIC's de-identification placeholders
(`[** ... **]`). MIMIC-derived corpora are never published to a hub: share them through
PhysioNet (docs/mimic.md). The check runs before any network call, and only the files it
checked are uploaded, one explicit path each, from a re-encoded copy of what it read (no glob
patterns; symbolic links, hidden and special files are refused). `medsimp publish` parses the
flags and calls `publish`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from medsimp import lineage
from medsimp.errors import InputError, Refused, UsageError
from medsimp.markers import MARKER, marker_of

TEXT_FILES = ("README.md", "stats.json")  # checked for MIMIC shapes; every other file is Parquet


def builder_folder(name_or_path: str) -> Path:
    """`builders/<name>` for a bare name, else the path itself."""
    path = Path(name_or_path)
    return path if path.is_dir() or len(path.parts) > 1 else Path("builders") / name_or_path


GLOB_CHARS = set("*?[]")  # hub upload patterns are globs: no file may be named like one


def upload_files(folder: Path) -> list[str]:
    """Relative paths that would be uploaded: every regular file but the output marker and
    dead letters (never uploaded). Refused: symbolic links, hidden entries, special files
    (FIFOs, devices) and names with glob characters."""
    out = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        base = Path(root)
        for name in sorted(dirs + names):
            path = base / name
            rel = path.relative_to(folder)
            if rel.parts[0] == "dead_letter" or rel.as_posix() == MARKER:
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise Refused(f"{rel} is a symbolic link; publish real files only")
            if name.startswith("."):
                raise Refused(f"{rel} is a hidden file or folder; remove it before publishing")
            if GLOB_CHARS & set(name):
                raise Refused(f"{rel}: file names with {''.join(sorted(GLOB_CHARS))} are refused")
            if stat.S_ISREG(mode):
                out.append(rel.as_posix())
            elif not stat.S_ISDIR(mode):
                raise Refused(f"{rel} is not a regular file")
        dirs[:] = sorted(d for d in dirs if (base / d).relative_to(folder).parts[0] != "dead_letter")
    return sorted(out)


def _open(path: Path):
    """`path` opened for reading without following a symbolic link; a regular file only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"{path.name} cannot be opened ({type(exc).__name__})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{path.name} is not a regular file")
    return os.fdopen(fd, "rb")


def _string_arrays(array):
    """Every string array inside `array` (nested, dictionary, extension types); binary
    data cannot be checked and is refused."""
    import pyarrow as pa

    t = array.type
    if isinstance(t, pa.ExtensionType):
        yield from _string_arrays(array.storage)
    elif pa.types.is_dictionary(t):
        yield from _string_arrays(array.dictionary)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        yield array
    elif (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        raise Refused("binary column")
    elif pa.types.is_map(t):
        yield from _string_arrays(array.keys)
        yield from _string_arrays(array.items)
    elif (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
        or pa.types.is_run_end_encoded(t)
    ):
        yield from _string_arrays(array.values)
    elif pa.types.is_struct(t) or pa.types.is_union(t):
        for i in range(t.num_fields):
            yield from _string_arrays(array.field(i))


def _copy_parquet(src: Path, rel: str, dest: Path) -> None:
    """Check one Parquet table and write a re-encoded copy of its checked content to `dest`
    (so bytes the check did not read, e.g. forged statistics, are never uploaded)."""
    import pyarrow.parquet as pq

    with _open(src) as fh:
        try:
            pf = pq.ParquetFile(fh)
            schema = pf.schema_arrow
        except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for any non-Parquet file
            raise Refused(f"{rel} is not a readable Parquet file ({type(exc).__name__})") from None
        tags = lineage.from_metadata(schema.metadata)
        if tags is None:
            raise Refused(f"{rel} has no lineage (medsimp.lineage); rebuild it with `medsimp build`")
        if lineage.is_restricted(tags):
            raise Refused(
                f"{rel} derives from MIMIC or a source not known to be public (lineage: "
                f"{lineage.describe(tags)}; public: {', '.join(sorted(lineage.PUBLIC))}): "
                "PhysioNet data is never published to a hub; share it through PhysioNet "
                "(docs/mimic.md)"
            )
        described = schema.to_string(
            show_field_metadata=True, show_schema_metadata=True, truncate_metadata=False
        )
        if lineage.has_mimic_shapes(described):
            raise Refused(
                f"{rel}: the schema (names or metadata) contains MIMIC de-identification placeholders"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(dest, schema) as writer:
            try:
                for batch in pf.iter_batches(batch_size=65536):
                    for name, column in zip(batch.schema.names, batch.columns):
                        try:
                            found = any(lineage.strings_have_mimic_shapes(a) for a in _string_arrays(column))
                        except Refused:
                            raise Refused(
                                f"{rel}: column {name} holds binary data, which "
                                "medsimp cannot check; publish text columns only"
                            ) from None
                        if found:
                            raise Refused(
                                f"{rel}: column {name} contains MIMIC de-identification placeholders"
                            )
                    writer.write_batch(batch)
            except Refused:
                raise
            except Exception as exc:  # a corrupt page
                raise Refused(f"{rel} is not a readable Parquet file ({type(exc).__name__})") from None


def _copy_text(src: Path, rel: str, dest: Path) -> None:
    """Check the card or stats file (UTF-8 text without NUL or placeholders) and copy it."""
    with _open(src) as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{rel} is not UTF-8 text") from None
    if "\x00" in text or lineage.has_mimic_shapes(text):
        raise Refused(f"{rel} contains MIMIC de-identification placeholders ([** ... **]) or binary data")
    dest.write_bytes(data)


def check_publishable(folder: Path, snapshot: Path | None = None) -> list[str]:
    """The files to upload; raise Refused unless each is provably free of MIMIC-derived text.

    With `snapshot`, the checked content is written there (what `run` uploads), so a file
    changed after the check is never what gets uploaded.
    """
    marker = marker_of(folder) or {}
    if "lineage" in marker and lineage.is_restricted(marker["lineage"]):
        raise Refused(
            f"{folder} derives from MIMIC or an unknown source (lineage in {MARKER}): "
            "PhysioNet data is never published to a hub; share it through PhysioNet "
            "(docs/mimic.md)"
        )
    files = upload_files(folder)
    if not any(f.endswith(".parquet") for f in files):
        raise Refused(f"{folder} holds no Parquet data; run `medsimp build` first")
    with tempfile.TemporaryDirectory(prefix="medsimp-publish-") as scratch:
        target = snapshot or Path(scratch)
        for rel in files:
            if rel in TEXT_FILES:
                _copy_text(folder / rel, rel, target / rel)
            elif rel.endswith(".parquet"):
                _copy_parquet(folder / rel, rel, target / rel)
            else:
                raise Refused(
                    f"{rel} is not a Parquet table whose lineage medsimp can check; "
                    "remove it or rebuild the folder with `medsimp build`"
                )
    return files


def publish(folder: Path, repo_id: str, private: bool = False) -> str:
    """Check `folder` (`check_publishable`), then upload the checked copy of its files to the hub
    dataset repository `repo_id` in one commit; the commit's URL. Refused, before any network
    call, unless every file is provably free of MIMIC-derived text; never pushes a `private`
    publish into an existing public repository."""
    if not (folder / "README.md").is_file():
        raise InputError(f"{folder} is not a built dataset folder (no README.md); run medsimp build")
    with tempfile.TemporaryDirectory(prefix="medsimp-publish-") as snapshot:
        files = check_publishable(folder, Path(snapshot))
        if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
            raise UsageError("publishing needs the network; run with HF_HUB_OFFLINE=0")
        from huggingface_hub import CommitOperationAdd, HfApi

        api = HfApi()
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if private and not api.dataset_info(repo_id).private:
            # create_repo ignores `private` for an existing repository: never push into a public one.
            raise Refused(f"{repo_id} already exists and is public; choose another --repo-id")
        # One explicit operation per checked file (no glob patterns), from the checked copy.
        ops = [
            CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(Path(snapshot) / rel)) for rel in files
        ]
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="dataset",
            operations=ops,
            commit_message=f"medsimp publish {folder.name}",
        )
    return info.commit_url
