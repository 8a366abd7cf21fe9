"""Beam jobs with input and output on a non-local filesystem: a small in-memory Beam
`FileSystem` under the `memfs://` scheme. Any local-file API touching these paths (open,
os.listdir, glob, pathlib, pq.read_table(path)) fails, so a local-path assumption is loud."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystem import CompressedFile, CompressionTypes, FileMetadata, FileSystem

from medsimp.config import load_params
from medsimp.params_schema import Beam, Filter
from medsimp.schemas import PAIRS
from pipelines.jobs import cochrane, msd
from pipelines.jobs import filter as filter_job
from pipelines.jobs import notes as notes_job
from pipelines.jobs import plaba as plaba_job
from pipelines.sources.files import list_files, parquet_lineage
from pipelines.text.selection import load_lexicons

ROOT = Path(__file__).resolve().parents[1]
BEAM = Beam(runner="FnApiRunner", num_workers=1)  # in-process workers share the store


class MemoryFileSystem(FileSystem):
    """Files as bytes in one process-wide dict; folders are only prefixes, as on object stores."""

    FILES: dict[str, bytes] = {}

    @classmethod
    def scheme(cls):
        return "memfs"

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/"), *(p.strip("/") for p in paths)])

    def split(self, path):
        head, _, tail = path.rstrip("/").rpartition("/")
        return head, tail

    def mkdirs(self, path):
        pass

    def has_dirs(self):
        return False

    def _list(self, dir_or_prefix):
        for path, data in sorted(self.FILES.items()):
            if path.startswith(dir_or_prefix):
                yield FileMetadata(path, len(data))

    def create(self, path, mime_type="application/octet-stream", compression_type=CompressionTypes.AUTO):
        files = self.FILES

        class _Sink(io.BytesIO):
            def close(self):
                files[path] = self.getvalue()
                super().close()

        return _Sink()

    def open(self, path, mime_type="application/octet-stream", compression_type=CompressionTypes.AUTO):
        if path not in self.FILES:
            raise FileNotFoundError(path)
        raw = io.BytesIO(self.FILES[path])
        kind = self._get_compression_type(path, compression_type)
        return raw if kind == CompressionTypes.UNCOMPRESSED else CompressedFile(raw, compression_type=kind)

    def copy(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.FILES[dst] = self.FILES[src]

    def rename(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.FILES[dst] = self.FILES.pop(src)

    def exists(self, path):
        return path in self.FILES

    def size(self, path):
        return len(self.FILES[path])

    def last_updated(self, path):
        return 0.0

    def checksum(self, path):
        return str(len(self.FILES[path]))

    def metadata(self, path):
        return FileMetadata(path, len(self.FILES[path]), 0.0)

    def delete(self, paths):
        for path in paths:
            self.FILES.pop(path, None)


@pytest.fixture()
def memfs():
    MemoryFileSystem.FILES.clear()
    yield MemoryFileSystem.FILES
    MemoryFileSystem.FILES.clear()


def _put(store: dict, name: str) -> str:
    store[f"memfs://in/{name}"] = (ROOT / "data" / "sample" / name).read_bytes()
    return f"memfs://in/{name}"


def _parquet_rows(store: dict, folder: str) -> list[dict]:
    files = [
        p
        for p in sorted(store)
        if p.startswith(folder + "/") and p.endswith(".parquet") and "/" not in p.removeprefix(folder + "/")
    ]
    assert files, f"no parquet under {folder}"
    return [r for f in files for r in pq.read_table(io.BytesIO(store[f])).to_pylist()]


def _stats(store: dict, out: str) -> dict:
    return json.loads(store[f"{out}/stats.json"])


def test_the_store_is_not_local(memfs):
    memfs["memfs://in/a/x.txt"] = b"x"
    assert list_files("memfs://in/a/*") == ["memfs://in/a/x.txt"]
    assert not Path("memfs://in/a/x.txt").exists()


def test_source_jobs_read_and_write_memfs(memfs):
    params = load_params(ROOT / "params.yaml")
    for job, name, section_name in (
        (cochrane, "cochrane.jsonl", "cochrane"),
        (msd, "msd.jsonl", "msd"),
        (plaba_job, "plaba.json", "plaba"),
    ):
        out = f"memfs://out/{section_name}"
        stats = job.run(_put(memfs, name), out, getattr(params, section_name), BEAM, [], None)
        assert _stats(memfs, out)["read"] == stats["read"] > 0
        rows = _parquet_rows(memfs, f"{out}/sentences")
        assert rows and {r["source"] for r in rows} == {section_name}
        assert parquet_lineage(f"{out}/sentences") == (section_name,)
    assert any(p.startswith("memfs://out/cochrane/dead_letter/") for p in memfs)


def test_msd_lists_a_memfs_folder(memfs):
    memfs["memfs://in/msd/a.jsonl"] = (ROOT / "data/sample/msd.jsonl").read_bytes()
    memfs["memfs://in/msd/.hidden"] = b"ignored"
    assert msd.input_files("memfs://in/msd") == ["memfs://in/msd/a.jsonl"]


def test_cochrane_devaraj_triples_on_memfs(memfs):
    fix = ROOT / "tests" / "fixtures" / "sources" / "devaraj"
    for f in fix.iterdir():
        memfs[f"memfs://in/devaraj/{f.name}"] = f.read_bytes()
    specs = cochrane.input_specs("memfs://in/devaraj")
    assert specs == [("devaraj", "memfs://in/devaraj/val")]
    assert [loc for loc, _ in cochrane.read_spec(specs[0])][:2] == ["val.doi:1", "val.doi:2"]


def test_filter_reads_and_writes_memfs(memfs):
    """The filter job over an aligned-pairs table that lives on memfs."""
    import pyarrow as pa

    row = {
        "pair_id": "10.1/x:en:0",
        "doi": "10.1/x",
        "language": "en",
        "complex_ids": ["a"],
        "simple_ids": ["b"],
        "pivot_ids": [],
        "complex_text": "Asthma is common in children.",
        "simple_text": "Asthma is common in kids.",
        "pivot_text": "",
        "section": "",
        "method": "crf",
        "crf_score": 0.9,
        "vecalign_score": None,
    }
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([row], schema=PAIRS), sink)
    memfs["memfs://in/align/pairs/part-00000-of-00001.parquet"] = sink.getvalue()
    stats = filter_job.run("memfs://in/align", "memfs://out/filter", Filter(threshold=0.5), BEAM, [], None)
    assert stats["read"] == 1 == stats["kept"] + stats["filtered"]
    assert [r["pair_id"] for r in _parquet_rows(memfs, "memfs://out/filter/pairs")] == ["10.1/x:en:0"]


def test_notes_job_reads_and_writes_memfs(memfs):
    params = load_params(ROOT / "params.yaml").notes
    path = _put(memfs, "NOTEEVENTS.csv")
    files = [(path, "NOTEEVENTS.csv", len(memfs[path]))]
    stats = notes_job.run(files, "memfs://out/notes", params, BEAM, [], None, load_lexicons(params, ROOT))
    rows = _parquet_rows(memfs, "memfs://out/notes/sentences")
    assert any(r["keep"] for r in rows) and len(rows) == stats["sentences"]
    assert list_files("memfs://out/notes/dead_letter/*.jsonl")
    assert json.loads(memfs["memfs://out/notes/stats.json"])["rejected"] == stats["rejected"] > 0


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_link_reads_and_writes_memfs(memfs, tmp_path):
    """link over a memfs sentence table (the QuickUMLS index is a local worker resource)."""
    from pipelines.jobs import link
    from pipelines.text.umls import build_index

    params = load_params(ROOT / "params.yaml")
    umls = ROOT / "data" / "sample" / "umls"
    build_index(str(umls / "MRCONSO.RRF"), str(umls / "MRSTY.RRF"), tmp_path / "index", ["ENG"])
    cochrane.run(_put(memfs, "cochrane.jsonl"), "memfs://out/cochrane", params.cochrane, BEAM, [], None)
    stats = link.run(
        "memfs://out/cochrane",
        "memfs://out/linked",
        str(tmp_path / "index"),
        params.link,
        params.readability,
        str(tmp_path / "cache"),
        1,
        BEAM,
        [],
        None,
    )
    rows = _parquet_rows(memfs, "memfs://out/linked")
    assert len(rows) == stats["kept"] > 0 and any(r["concepts"] for r in rows)
    assert parquet_lineage("memfs://out/linked") == ("cochrane",)
