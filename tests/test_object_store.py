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


def test_store_settings_given_only_as_beam_options_reach_the_local_runners_workers(s3, tmp_path):
    """The endpoint and region only as `--beam-arg=--s3_*` (the environment holds just the
    credentials), on the local runner's two worker processes: the workers write where the
    launcher reads, the bytes of a local run (they went to AWS itself before, exit 4: Beam's
    worker got the log level as its only option; pipelines.jobs.store_dofn)."""
    env, client = s3
    local = _cli(env, tmp_path, "cochrane", "--input", str(SAMPLE), "--output", "local")
    assert local.returncode == 0, local.stderr[-1500:]
    credentials = {name: env[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    options = [
        f"--beam-arg=--s3_endpoint_url={env['AWS_ENDPOINT_URL']}",
        "--beam-arg=--s3_region_name=us-east-1",
    ]
    done = _cli(
        credentials,
        tmp_path,
        *("--set", "beam.num_workers=2", "cochrane", "--input", str(SAMPLE)),
        *("--output", f"s3://{BUCKET}/options", *options),
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert _published(client, "options") == _local(tmp_path / "local") != {}


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
    """`align train`'s self-training pool read through Beam's FileSystems: the prefix
    `cochrane --output s3://...` published to (its marker followed to the run) gives the model a
    local table gives, byte for byte; and
    `align corpus` on it aligns what it aligns on the local table."""
    env, client = s3
    english = _english_sample(tmp_path)  # English only: the pool is English, and no Vecalign run
    for out in ("local", f"s3://{BUCKET}/pool"):
        made = _cli(env, tmp_path, "cochrane", "--input", str(english), "--output", out)
        assert made.returncode == 0, made.stderr[-1500:]
    gold = tmp_path / "gold.jsonl"  # two gold reviews: the sample's others are the pool
    lines = (ROOT / "data" / "sample" / "align_gold.jsonl").read_text(encoding="utf-8").splitlines(True)
    gold.write_text("".join(lines[:2]), encoding="utf-8")
    models = {}  # the store table named by its prefix: the marker leads to the published run
    for name, table in (("local", "local"), ("store", f"s3://{BUCKET}/pool")):
        args = ["--set", "align.crf.epochs=5", "--set", f"cache.dir={tmp_path / 'cache'}", "align", "train"]
        args += ["--gold", str(gold), "--input", table, "--output", f"m-{name}"]
        trained = _cli(env, tmp_path, *args)
        assert trained.returncode == 0, trained.stderr[-1500:]
        models[name] = (tmp_path / f"m-{name}" / "model.pt").read_bytes()
        stats = json.loads((tmp_path / f"m-{name}" / "stats.json").read_text())["self_training"]
        assert stats["pool_used"] > 0 and stats["pseudo_pairs"] > 0
    assert models["store"] == models["local"]
    # `align corpus --input s3://...` (exit 4 before: the store settings never reached Beam),
    # a run named by hand read as given
    run = _marker(client, "pool")["run"]
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


def _english_sample(tmp_path: Path) -> Path:
    """The sample's English records (and its bad ones): the English chain, without Vecalign."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    english = tmp_path / "english.jsonl"
    english.write_text("".join(line for line in lines if '"language": "en"' in line), encoding="utf-8")
    return english


def test_a_file_of_several_parts_publishes_whole_and_one_failing_half_way_leaves_nothing(
    s3, tmp_path, monkeypatch
):
    """At the real part size (`store.PART_BYTES`, not lowered): a file of four parts put in a
    run prefix (`objstore.upload`) and published reads back byte-identical, as one object of four
    parts; a run whose file fails after two parts have gone up publishes nothing: the marker
    still names the first run, no object of the failed run and no unfinished upload is left."""
    env, client = s3
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from apache_beam.io.filesystems import FileSystems

    from pipelines.jobs import objstore, store

    store.use_store(None, (), {})
    data = os.urandom(3 * store.PART_BYTES + 12345)
    (tmp_path / "out" / "table").mkdir(parents=True)
    (tmp_path / "out" / "table" / "big.parquet").write_bytes(data)
    url = f"s3://{BUCKET}/multipart"
    with objstore.publish(url, "cochrane", ["cochrane"]) as prefix:
        objstore.upload(str(tmp_path / "out"), prefix)
    run = _marker(client, "multipart")["run"]
    read, files = objstore.published_files(url)
    assert files == {"table/big.parquet": len(data)}
    with FileSystems.open(FileSystems.join(read, "table/big.parquet")) as fh:
        assert fh.read() == data
    head = client.head_object(Bucket=BUCKET, Key=f"multipart/runs/{run}/table/big.parquet")
    assert head["ContentLength"] == len(data) and head["ETag"].endswith('-4"')  # four parts
    assert _uploads(client) == []
    with (
        pytest.raises(RuntimeError, match="half-way"),
        objstore.publish(url, "cochrane", ["cochrane"]) as prefix,
    ):
        with store.create_file(FileSystems.join(prefix, "table/big.parquet")) as fh:
            fh.write(data[: 2 * store.PART_BYTES + 1])
            assert _uploads(client) == [
                "multipart/" + prefix.split("/multipart/", 1)[1] + "/table/big.parquet"
            ]
            raise RuntimeError("half-way")
    assert _marker(client, "multipart")["run"] == run
    assert {k.split("/")[0] for k in _keys(client, "multipart/runs/")} == {run}
    assert _uploads(client) == []
    assert objstore.download(url, str(tmp_path / "back")) == str(tmp_path / "back")
    assert (tmp_path / "back" / "table" / "big.parquet").read_bytes() == data


def test_a_builder_and_its_report_of_public_data_publish_to_the_store(s3, tmp_path):
    """`build multicochrane` from local tables to `s3://` publishes the local build's bytes, and
    `report` of that published builder (read from a local copy) into `s3://` publishes the local
    report's bytes but for the builder folder it names (the URL). A report of a MIMIC-derived
    builder never goes there (tests/test_output_urls.py)."""
    env, client = s3
    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "builders"))
    import upstream

    cfg = upstream.write_cochrane(tmp_path / "up")
    sets = [a for key, value in cfg.items() for a in ("--set", f"build.multicochrane.{key}={value}")]
    sets += ["--set", "build.multicochrane.split={seed: 13, validation: 0.2, test: 0.2}"]
    for out in (str(tmp_path / "mc"), f"s3://{BUCKET}/mc"):
        built = _cli(env, tmp_path, *sets, "build", "multicochrane", "--output", out)
        assert built.returncode == 0, built.stderr[-1500:]
    expected = _local(tmp_path / "mc")
    assert len(expected) > 4 and _published(client, "mc") == expected
    assert _marker(client, "mc")["lineage"] == ["cochrane"] and _marker(client, "mc")["command"] == (
        "build multicochrane"
    )
    sentences = ["--sentences", cfg["sentences"]]
    for folder, out in (
        (str(tmp_path / "mc"), str(tmp_path / "report")),
        (f"s3://{BUCKET}/mc", f"s3://{BUCKET}/report"),
    ):
        made = _cli(env, tmp_path, "report", folder, *sentences, "--output", out)
        assert made.returncode == 0, made.stderr[-1500:]
    local = _local(tmp_path / "report")
    published = {
        rel: data.replace(f"s3://{BUCKET}/mc".encode(), str(tmp_path / "mc").encode())
        for rel, data in _published(client, "report").items()
    }
    assert set(local) == {"index.html", "report.md", "report.json"} and published == local
    assert json.loads(_published(client, "report")["report.json"])["folder"] == f"s3://{BUCKET}/mc"
    assert _marker(client, "report")["lineage"] == ["cochrane"]


EVAL_LINES = {
    "hyp": [
        "the patient was given water and rest after the long walk home",
        "her blood pressure was high so the doctor gave her a new pill",
        "he has a cough and a fever and will see the doctor again next week",
    ],
    "ref": [
        "the patient was given fluids and rest after the long walk home",
        "her blood pressure was high so the doctor prescribed a new medicine",
        "he has a cough and a fever and will return to the clinic next week",
    ],
    "src": [
        "the patient received intravenous fluids and bed rest following prolonged ambulation",
        "owing to hypertension the physician prescribed a new antihypertensive agent",
        "he presents with cough and pyrexia and will be reassessed at follow-up next week",
    ],
}
EVAL = ["evaluate", "files", "--select", "bleu,sari,fkgl"]


def _eval_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / f"{name}.txt" for name in EVAL_LINES}
    for name, path in paths.items():
        path.write_text("\n".join(EVAL_LINES[name]) + "\n", encoding="utf-8")
    return paths


def test_evaluate_files_scores_store_files_and_publishes_its_scores_whole(s3, tmp_path, monkeypatch):
    """`evaluate files` with `--hyp/--ref/--src s3://...` (plain text a user keeps in a bucket,
    no lineage) writes the JSON and per-line scores a run on the same local files writes, byte
    for byte; `--json s3://...` and `--sentence-level s3://...` of one folder, from local files
    or from the bucket's, are published there whole (marker `evaluate files`, lineage `unknown`,
    a manifest of both) with the local bytes, and read back through the marker
    (`objstore.download` of the file's URL)."""
    env, client = s3
    files = _eval_files(tmp_path / "in")
    for name, path in files.items():
        client.put_object(Bucket=BUCKET, Key=f"evalin/{name}.txt", Body=path.read_bytes())
    local = [a for name in ("hyp", "ref", "src") for a in (f"--{name}", str(files[name]))]
    remote = [a for name in ("hyp", "ref", "src") for a in (f"--{name}", f"s3://{BUCKET}/evalin/{name}.txt")]
    outputs = {"--json": "scores.json", "--sentence-level": "lines.jsonl"}
    runs = {
        "local": (local, {flag: str(tmp_path / name) for flag, name in outputs.items()}),
        "from-store": (remote, {flag: str(tmp_path / f"store-{name}") for flag, name in outputs.items()}),
        "to-store": (local, {flag: f"s3://{BUCKET}/evalout/{name}" for flag, name in outputs.items()}),
        "store-to-store": (
            remote,
            {flag: f"s3://{BUCKET}/evalboth/{name}" for flag, name in outputs.items()},
        ),
    }
    for inputs, where in runs.values():
        done = _cli(env, tmp_path, *EVAL, *inputs, *[a for item in where.items() for a in item])
        assert done.returncode == 0, done.stderr[-1500:]
    expected = {name: (tmp_path / name).read_bytes() for name in outputs.values()}
    assert json.loads(expected["scores.json"])["n"] == 3 and expected["lines.jsonl"].count(b"\n") == 3
    assert {name: (tmp_path / f"store-{name}").read_bytes() for name in outputs.values()} == expected
    assert _published(client, "evalout") == expected and _published(client, "evalboth") == expected
    assert _marker(client, "evalboth")["lineage"] == ["unknown"]
    marker = _marker(client, "evalout")
    assert marker["command"] == "evaluate files" and marker["lineage"] == ["unknown"]
    assert marker["files"] == {name: len(data) for name, data in expected.items()}
    assert sorted(_keys(client, "evalout/")) == sorted(
        [".medsimp-output", *(f"runs/{marker['run']}/{name}" for name in expected)]
    )
    for name, value in env.items():  # this process reads the store too
        monkeypatch.setenv(name, value)
    from pipelines.jobs import objstore
    from pipelines.jobs.store import use_store

    use_store(None, (), {})  # Beam's S3 filesystem, as the commands set it up
    back = objstore.download(f"s3://{BUCKET}/evalout/scores.json", str(tmp_path / "back"))
    assert Path(back).read_bytes() == expected["scores.json"]


def test_evaluate_files_of_data_not_public_never_reaches_the_store(s3, tmp_path):
    """An `s3://` output of `evaluate files` whose inputs are known not to be public data is one
    line, exit 2, and nothing is written to the bucket: outputs of a model whose folder records a
    MIMIC lineage, a MedLane file (MIMIC-derived), and `--report-text` (text in the report) of
    plain text files that record no lineage."""
    env, client = s3
    files = _eval_files(tmp_path / "in")
    model = tmp_path / "model"
    (model / "predictions").mkdir(parents=True)
    (model / ".medsimp-output").write_text(
        json.dumps({"command": "train", "lineage": ["mimic-iii"], "tool": "medsimp"})
    )
    (model / "predictions" / "test.txt").write_bytes(files["hyp"].read_bytes())
    medlane = tmp_path / "medlane.json"
    medlane.write_text("[]\n")
    refs = ["--ref", str(files["ref"]), "--src", str(files["src"])]
    cases = [
        (
            ["--hyp", str(model / "predictions" / "test.txt"), *refs, "--json"],
            "is not public data (lineage: mimic-iii)",
        ),
        (["--hyp", str(files["hyp"]), "--medlane", str(medlane), "--json"], "is MedLane, MIMIC-derived"),
        (["--hyp", str(files["hyp"]), *refs, "--report-text", "--report"], "--report-text puts its text"),
    ]
    for n, (argv, says) in enumerate(cases):
        refused = _cli(env, tmp_path, *EVAL, *argv, f"s3://{BUCKET}/refused{n}/out")
        _one_line_exit_2(refused, says)
        assert "local folders only" in refused.stderr.strip().splitlines()[-1]
        assert _keys(client, f"refused{n}") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "medlane.json", "model"]
