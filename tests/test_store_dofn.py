"""The jobs' workers reach the object store whatever started them (pipelines.jobs.store_dofn):
a DoFn built in the launcher after `use_store`, unpickled in a fresh process whose Beam
FileSystems have no options (what Beam's Python worker pool gives its workers), reads and
writes `s3://` on moto's S3 API (in-process server on loopback) with the launcher's endpoint
and region and the worker's own credentials; no secret is pickled; a worker's own settings win.
"""

from __future__ import annotations

import base64
import bz2
import inspect
import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.internal import pickler
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, S3Options

from medsimp.params_schema import Beam
from pipelines.jobs import store_dofn
from pipelines.jobs.sorted_io import _MergeShardFn, table_bytes
from pipelines.jobs.store import use_store
from pipelines.jobs.store_dofn import FilesFn, StoreDoFn, reach_store
from pipelines.sources.tables import read_rows

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "worker-store"
SECRET = "launcher-secret-never-pickled"
SCHEMA = pa.schema([("doc_id", pa.string()), ("n", pa.int64())])
ROWS = [{"doc_id": f"d{i}", "n": i} for i in range(5)]

# A worker as Beam's Python worker pool starts one: a fresh interpreter, no pipeline options on
# its FileSystems; it runs each (DoFn, element) it is handed as a runner would (setup, then
# process) and prints what process yields.
WORKER = """
import json, sys
from apache_beam.internal import pickler
from pipelines.jobs.store_dofn import filesystem_options
assert filesystem_options() is None, "a fresh worker has no options"
for fn, element in pickler.loads(open(sys.argv[1], "rb").read()):
    fn.setup()
    print(json.dumps(list(fn.process(element)), default=str))
"""


@pytest.fixture
def fresh_filesystems():
    """This process's FileSystems options as they were, after the test (use_store sets them)."""
    before = store_dofn.filesystem_options()
    yield
    FileSystems.set_options(before)


@pytest.fixture
def store():
    """moto's S3 API on loopback with an empty bucket; yields (endpoint, client)."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield endpoint, client
    finally:
        server.stop()


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_a_worker_without_options_reads_and_writes_the_store_with_the_launchers_settings(
    store, fresh_filesystems, tmp_path
):
    endpoint, client = store
    client.put_object(Bucket=BUCKET, Key="in/table.parquet", Body=table_bytes(ROWS, SCHEMA))
    run = f"s3://{BUCKET}/out/.part-00000-run.run"
    client.put_object(
        Bucket=BUCKET,
        Key="out/.part-00000-run.run",
        Body=b"".join(pickle.dumps(r) for r in ROWS),  # a run: rows in sort order
    )
    # the launcher: the job's store settings from --beam-arg (credentials among them)
    args = [f"--s3_endpoint_url={endpoint}", "--s3_region_name=us-east-1"]
    use_store(Beam(), [*args, "--s3_access_key_id=testing", f"--s3_secret_access_key={SECRET}"], {})
    merge = _MergeShardFn(f"s3://{BUCKET}/out", "part", 1, SCHEMA, lambda r: r["n"], "parquet")
    read = FilesFn(read_rows, ["doc_id", "n"])
    shipped = pickler.dumps([(merge, (0, [run])), (read, f"s3://{BUCKET}/in/table.parquet")])
    raw = bz2.decompress(base64.b64decode(shipped))  # what the runner stages (Beam's pickler: bz2)
    assert endpoint.encode() in raw and SECRET.encode() not in raw
    assert read.store == merge.store == {"s3_endpoint_url": endpoint, "s3_region_name": "us-east-1"}
    (tmp_path / "work").write_bytes(shipped)
    # the worker: credentials in its environment, no endpoint there (only the carried one)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(tmp_path / "work")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    merged, rows = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    shard = f"s3://{BUCKET}/out/part-00000-of-00001.parquet"
    assert merged == [shard]  # written by the worker through medsimp's store client
    body = client.get_object(Bucket=BUCKET, Key="out/part-00000-of-00001.parquet")["Body"].read()
    assert pq.read_table(io.BytesIO(body)).to_pylist() == ROWS  # the run, read back through Beam's S3
    assert rows == ROWS  # a parquet table read through Beam's S3 filesystem


def test_a_worker_keeps_its_own_settings_and_is_given_those_it_lacks(fresh_filesystems):
    carried = {"s3_endpoint_url": "http://store.example:9000", "s3_region_name": "eu-west-1"}
    FileSystems.set_options(None)  # a worker of Beam's Python pool: no options
    reach_store(carried)
    s3 = store_dofn.filesystem_options().view_as(S3Options)
    assert (s3.s3_endpoint_url, s3.s3_region_name) == ("http://store.example:9000", "eu-west-1")
    # a worker given options (the local runner's: the log level; a cluster's: the job's)
    FileSystems.set_options(PipelineOptions(["--s3_region_name=us-east-2", "--s3_access_key_id=mine"]))
    reach_store(carried)
    s3 = store_dofn.filesystem_options().view_as(S3Options)
    assert (s3.s3_endpoint_url, s3.s3_region_name, s3.s3_access_key_id) == (
        "http://store.example:9000",
        "us-east-2",
        "mine",
    )


def test_the_settings_carried_are_the_launchers_and_never_a_secret(fresh_filesystems):
    FileSystems.set_options(None)
    assert StoreDoFn().store == {}  # no store set up: nothing to carry (a worker's defaults)
    secrets = ["--s3_access_key_id=KEY", f"--s3_secret_access_key={SECRET}", "--s3_session_token=TOKEN"]
    use_store(
        Beam(), ["--s3_endpoint_url=http://s:1", "--s3_disable_ssl", "--s3_verify=ca.pem", *secrets], {}
    )
    assert StoreDoFn().store == {
        "s3_endpoint_url": "http://s:1",
        "s3_verify": "ca.pem",
        "s3_disable_ssl": True,
    }
    assert set(store_dofn.CARRIED) <= set(S3Options().get_all_options()) - {
        "s3_access_key_id",
        "s3_secret_access_key",
        "s3_session_token",
    }


def _store_dofns() -> list[type]:
    import pipelines.jobs.align
    import pipelines.jobs.cochrane
    import pipelines.jobs.link
    import pipelines.jobs.msd
    import pipelines.jobs.notes
    import pipelines.jobs.plaba  # noqa: F401

    found, todo = [], [StoreDoFn]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in found if c.__module__.startswith("pipelines.jobs.")]


def test_every_store_dofn_calls_the_base_and_no_job_uses_a_beam_file_source():
    """A StoreDoFn subclass that defines __init__ or setup calls the base's (else its worker
    would not reach the store); Beam's own file sources and sinks would read or write in
    workers the jobs' settings do not reach."""
    classes = {c.__name__ for c in _store_dofns()}
    assert {"_SpillRunsFn", "_MergeShardFn", "_MergeGroupsFn", "AlignDocFn", "LinkFn", "FilesFn"} <= classes
    for cls in _store_dofns():
        for method in ("__init__", "setup"):
            if method in vars(cls) and cls is not StoreDoFn:
                assert f"super().{method}()" in inspect.getsource(vars(cls)[method]), (cls, method)
    for path in sorted((ROOT / "pipelines" / "jobs").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for source in ("beam.io.ReadFrom", "beam.io.WriteTo", "ReadFromParquet(", "WriteToParquet("):
            assert source not in text, (path.name, source)
