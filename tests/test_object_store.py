"""Job outputs in an object store, against a real S3 API: moto's server on loopback, reached
only through the standard AWS environment variables (issue 36 item 2).

`cochrane --output s3://...` publishes the bytes a local run writes; a killed run publishes
nothing; a prefix medsimp did not write is never touched; a store that cannot be reached is one
line, exit 2, in bounded time, with no local folder named after the URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback import free_port, wait_for_port

boto3 = pytest.importorskip("boto3")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "cochrane.jsonl"
BUCKET = "medsimp-tests"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on a free loopback port; yields the AWS environment that reaches it."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        wait_for_port(port, server, log, timeout=30)
        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield env, client
    finally:
        server.terminate()
        server.wait(timeout=30)


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**env, **extra, "PYTHONPATH": str(ROOT)}


def _cli(env: dict[str, str], cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", "--params", str(ROOT / "params.yaml"), *args],
        cwd=cwd,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _objects(client, prefix: str) -> dict[str, bytes]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return {k[len(prefix) :]: client.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys}


def _keys(client, prefix: str) -> list[str]:
    """The keys under `prefix` (a listing only: objects may vanish between a list and a get)."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"][len(prefix) :] for page in pages for o in page.get("Contents", [])]


def _marker(client, prefix: str) -> dict:
    return json.loads(client.get_object(Bucket=BUCKET, Key=f"{prefix}/.medsimp-output")["Body"].read())


def _published(client, prefix: str) -> dict[str, bytes]:
    run = _marker(client, prefix)["run"]
    return _objects(client, f"{prefix}/runs/{run}/")


def _local(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".medsimp-output"
    }


def _one_line_exit_2(result: subprocess.CompletedProcess, says: str) -> None:
    assert result.returncode == 2, result.stderr[-1500:]
    last = result.stderr.strip().splitlines()[-1]
    assert says in last, result.stderr[-1500:]
    assert "Traceback" not in result.stderr


def test_cochrane_to_s3_publishes_the_bytes_of_a_local_run(s3, tmp_path):
    env, client = s3
    local = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", "local")
    assert local.returncode == 0, local.stderr[-1500:]
    remote = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", f"s3://{BUCKET}/same")
    assert remote.returncode == 0, remote.stderr[-1500:]
    expected = _local(tmp_path / "local")
    assert expected and _published(client, "same") == expected
    marker = _marker(client, "same")
    assert marker["command"] == "cochrane" and marker["lineage"] == ["cochrane"]
    assert marker["files"] == {rel: len(data) for rel, data in expected.items()}
    first = marker["run"]
    # a rerun publishes a new run with the same bytes and deletes the old one
    again = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", f"s3://{BUCKET}/same")
    assert again.returncode == 0, again.stderr[-1500:]
    assert _marker(client, "same")["run"] != first
    assert _published(client, "same") == expected
    assert not any(key.startswith(f"runs/{first}/") for key in _objects(client, "same/"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local"], "a local folder was made for the URL"


def test_a_killed_run_publishes_nothing(s3, tmp_path):
    env, client = s3
    done = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", f"s3://{BUCKET}/killed")
    assert done.returncode == 0, done.stderr[-1500:]
    before_marker, before = _marker(client, "killed"), _published(client, "killed")
    half = tmp_path / "half.jsonl"  # other input: a run that published would change the bytes
    half.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:12]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medsimp.cli",
            "--params",
            str(ROOT / "params.yaml"),
            "--set",
            "beam.num_workers=2",
        ]
        + ["cochrane"]
        + ["--input", str(half), "--output", f"s3://{BUCKET}/killed"],
        cwd=tmp_path,
        env=_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    try:  # kill the run (launcher and workers) once it has written under its own run prefix
        while not any(
            key.startswith("runs/") and not key.startswith(f"runs/{before_marker['run']}/")
            for key in _keys(client, "killed/")
        ):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run wrote nothing under a new run prefix"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert _marker(client, "killed") == before_marker
    assert _published(client, "killed") == before
    orphans = {k.split("/")[1] for k in _keys(client, "killed/") if k.startswith("runs/")}
    assert len(orphans) == 2, orphans  # the published run and the killed one's orphan
    # the next run publishes and sweeps the orphan
    rerun = _cli(env, tmp_path, "cochrane", "--input", str(half), "--output", f"s3://{BUCKET}/killed")
    assert rerun.returncode == 0, rerun.stderr[-1500:]
    runs = {k.split("/")[1] for k in _keys(client, "killed/") if k.startswith("runs/")}
    assert runs == {_marker(client, "killed")["run"]}
    assert _published(client, "killed") != before


def test_a_prefix_medsimp_did_not_write_is_never_touched(s3, tmp_path):
    env, client = s3
    client.put_object(Bucket=BUCKET, Key="theirs/data.csv", Body=b"a,b\n1,2\n")
    result = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", f"s3://{BUCKET}/theirs")
    _one_line_exit_2(result, "medsimp did not write")
    assert _objects(client, "theirs/") == {"data.csv": b"a,b\n1,2\n"}


def test_another_commands_prefix_needs_force(s3, tmp_path):
    env, client = s3
    made = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", f"s3://{BUCKET}/shared")
    assert made.returncode == 0, made.stderr[-1500:]
    before = _objects(client, "shared/")
    plaba = _cli(env, tmp_path, "plaba", "--output", f"s3://{BUCKET}/shared")
    _one_line_exit_2(plaba, "--force")
    assert _objects(client, "shared/") == before


def test_mimic_derived_output_never_goes_to_a_store(s3, tmp_path):
    env, client = s3
    notes = ROOT / "data" / "sample" / "NOTEEVENTS.csv"
    result = _cli(env, tmp_path, "notes", "--input", str(notes), "--output", f"s3://{BUCKET}/notes")
    _one_line_exit_2(result, "MIMIC-derived text never leaves the machine")
    assert _objects(client, "notes/") == {} and list(tmp_path.iterdir()) == []


DOWN = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}  # a closed loopback port


@pytest.mark.parametrize(
    "flag, url, env, says",
    [
        ("--output", "gs://bucket/x", {}, "apache-beam[gcp]"),
        ("--output", "s3://bucket/x", DOWN, "--output s3://bucket/x: the store did not answer"),
        ("--input", "s3://bucket/x.jsonl", DOWN, "--input s3://bucket/x.jsonl: the store did not answer"),
    ],
    ids=["gs-without-the-gcp-extra", "s3-endpoint-down", "s3-input-endpoint-down"],
)
def test_an_unreachable_store_is_one_line_in_bounded_time(flag, url, env, says, tmp_path):
    keys = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    args = {"--input": str(SAMPLE), "--output": "out", flag: url}
    started = time.monotonic()
    result = _cli(
        {**keys, **env}, tmp_path, "cochrane", *[a for pair in args.items() for a in pair], timeout=120
    )
    _one_line_exit_2(result, says)
    assert time.monotonic() - started < 60
    assert list(tmp_path.iterdir()) == [], "a local folder was made for the URL"


def test_a_store_that_accepts_but_never_answers_is_one_line_within_a_minute(tmp_path):
    """An endpoint that takes the connection and then says nothing (a hung proxy, a stuck
    server): the store client's read timeout and bounded tries end it (Beam's client waited
    on it for minutes)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes each connection; nothing ever reads or answers
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        started = time.monotonic()
        result = _cli(
            env, tmp_path, "cochrane", "--input", "s3://bucket/x.jsonl", "--output", "out", timeout=120
        )
        _one_line_exit_2(result, "--input s3://bucket/x.jsonl: the store did not answer (ReadTimeoutError")
        assert time.monotonic() - started < 60
    assert list(tmp_path.iterdir()) == []


def test_align_train_self_trains_on_a_table_in_the_store_as_on_a_local_one(s3, tmp_path):
    """`align train`'s self-training pool read through Beam's FileSystems: the published run of
    `cochrane --output s3://...` gives the model a local table gives, byte for byte; and
    `align corpus` on it aligns what it aligns on the local table."""
    env, client = s3
    for out in ("local", f"s3://{BUCKET}/pool"):
        made = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", out)
        assert made.returncode == 0, made.stderr[-1500:]
    gold = tmp_path / "gold.jsonl"  # two gold reviews: the sample's others are the pool
    lines = (ROOT / "data" / "sample" / "align_gold.jsonl").read_text(encoding="utf-8").splitlines(True)
    gold.write_text("".join(lines[:2]), encoding="utf-8")
    run = _marker(client, "pool")["run"]
    models = {}
    for name, table in (("local", "local"), ("store", f"s3://{BUCKET}/pool/runs/{run}")):
        args = ["--set", "align.crf.epochs=5", "--set", f"cache.dir={tmp_path / 'cache'}", "align", "train"]
        args += ["--gold", str(gold), "--input", table, "--output", f"m-{name}"]
        trained = _cli(env, tmp_path, *args)
        assert trained.returncode == 0, trained.stderr[-1500:]
        models[name] = (tmp_path / f"m-{name}" / "model.pt").read_bytes()
        stats = json.loads((tmp_path / f"m-{name}" / "stats.json").read_text())["self_training"]
        assert stats["pool_used"] > 0 and stats["pseudo_pairs"] > 0
    assert models["store"] == models["local"]
    # `align corpus --input s3://...` (exit 4 before: the store settings never reached Beam)
    for name, table in (("local", "local"), ("store", f"s3://{BUCKET}/pool/runs/{run}")):
        args = [
            "--set",
            f"cache.dir={tmp_path / ('cache-corpus-' + name)}",
            "align",
            "corpus",
            "--input",
            table,
        ]
        aligned = _cli(env, tmp_path, *args, "--output", f"aligned-{name}", "--model", "m-local")
        assert aligned.returncode == 0, aligned.stderr[-1500:]
    assert _local(tmp_path / "aligned-store") == _local(tmp_path / "aligned-local") != {}


def _uploads(client) -> list[str]:
    """The keys of the multipart uploads left unfinished in the bucket."""
    return [u["Key"] for u in client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]


def _clean_sample(tmp_path: Path) -> Path:
    """The sample without its five bad records: a clean input, whose dead-letter file is empty."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(line for n, line in enumerate(lines, 1) if n not in {7, 12, 13, 14, 15}))
    return clean


def test_a_clean_input_publishes_an_empty_dead_letter_file_and_leaves_no_upload(s3, tmp_path):
    """An empty file is an empty object (Beam's S3 writer made it a multipart upload with no
    part, which S3 refuses: "internal error S3ClientError", and an abandoned upload)."""
    env, client = s3
    clean = _clean_sample(tmp_path)
    local = _cli(env, tmp_path, "cochrane", "--input", str(clean), "--output", "local")
    assert local.returncode == 0, local.stderr[-1500:]
    remote = _cli(env, tmp_path, "cochrane", "--input", str(clean), "--output", f"s3://{BUCKET}/clean")
    assert remote.returncode == 0, remote.stderr[-1500:]
    expected = _local(tmp_path / "local")
    assert expected["dead_letter/part-00000-of-00001.jsonl"] == b""
    assert _published(client, "clean") == expected
    assert _uploads(client) == []


def test_a_failed_write_leaves_no_object_and_no_upload(s3, monkeypatch):
    """store.create_file on s3://: a file of several parts that fails half-way is aborted
    (no object, no unfinished upload); one that completes is the bytes written; an upload a
    killed writer left under a run prefix is aborted when the prefix is cleaned up."""
    env, client = s3
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from pipelines.jobs import objstore, store

    monkeypatch.setattr(store, "PART_BYTES", 5 << 20)  # S3's smallest part: two parts, quickly
    data = os.urandom(7 << 20)
    with (
        pytest.raises(RuntimeError, match="half-way"),
        store.create_file(f"s3://{BUCKET}/fail/big.bin") as fh,
    ):
        fh.write(data)
        assert _uploads(client) == ["fail/big.bin"]  # the first part is up
        raise RuntimeError("half-way")
    assert _keys(client, "fail/") == [] and _uploads(client) == []
    with store.create_file(f"s3://{BUCKET}/fail/big.bin") as fh:
        fh.write(data[:3])
        fh.write(data[3:])
    assert _objects(client, "fail/") == {"big.bin": data} and _uploads(client) == []
    # a writer killed mid-file leaves its upload; cleaning up its run prefix aborts it
    started = client.create_multipart_upload(Bucket=BUCKET, Key="fail/runs/dead/part.parquet")
    objstore._delete_runs(f"s3://{BUCKET}/fail", only="dead")
    assert _uploads(client) == [] and started["UploadId"]


@pytest.mark.parametrize("flag", ["--input", "--output"])
def test_a_missing_bucket_is_one_line_naming_it(s3, tmp_path, flag):
    env, client = s3
    url = "s3://no-such-bucket/x" + ("/cochrane.jsonl" if flag == "--input" else "")
    args = {"--input": str(SAMPLE), "--output": "out", flag: url}
    started = time.monotonic()
    result = _cli(env, tmp_path, "cochrane", *[a for pair in args.items() for a in pair])
    _one_line_exit_2(result, f"{flag} {url}: the bucket 'no-such-bucket' does not exist")
    assert time.monotonic() - started < 60
    assert list(tmp_path.iterdir()) == [] and _uploads(client) == []


def test_link_reads_a_table_in_the_store_as_a_local_one(s3, tmp_path):
    """`link --input s3://...` (the store settings reach Beam's S3 filesystem in the launcher:
    it failed with exit 4, "Must provide one of client or options") links what a local table links."""
    env, client = s3
    for out in ("local", f"s3://{BUCKET}/linkin"):
        made = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", out)
        assert made.returncode == 0, made.stderr[-1500:]
    index = _cli(env, tmp_path, "umls-index", "--output", "umls")
    assert index.returncode == 0, index.stderr[-1500:]
    run = _marker(client, "linkin")["run"]
    for name, table in (("local", "local"), ("store", f"s3://{BUCKET}/linkin/runs/{run}")):
        args = ["--set", f"cache.dir={tmp_path / ('cache-' + name)}", "link", "--input", table]
        linked = _cli(env, tmp_path, *args, "--output", f"linked-{name}", "--index", "umls")
        assert linked.returncode == 0, linked.stderr[-1500:]
    assert _local(tmp_path / "linked-store") == _local(tmp_path / "linked-local") != {}
