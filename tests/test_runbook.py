"""docs/refresh.md's runbook runs as written: the English chain of its step 4 (the block after
`<!-- runbook-chain`), on the sample's English reviews, from `s3://` prefixes to an `s3://`
builder and report on moto's S3 server (default runner), and the published builder loads with
`datasets.load_dataset` from a downloaded copy. The same chain with a local folder for the store
(the store's model and index) writes, stage by stage, the bytes the store's prefixes hold (the
builder's card differs only in naming its inputs by URL), and its builder loads as the downloaded
one does. Step 3's portable runs of the chain's `filter` and
`cochrane` (medsimp's job server, Beam's Python worker pool, the credentials in the workers'
environment, the store settings as Beam's S3 options) publish the default runner's bytes: the
pool gives its workers' file systems no options, and the jobs' DoFns carry the store settings to
them (pipelines.jobs.store_dofn; docs/refresh.md, step 3).

Slow (moto's server, a wheel for the workers, the seven stages and five of them again locally); the fixtures are
tests/test_object_store.py's `s3` and tests/test_runners.py's `cluster`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from docs_blocks import ROOT, blocks, commands
from test_object_store import BUCKET, _cli, _english_sample, _local, _marker, _published, s3  # noqa: F401
from test_runners import cluster  # noqa: F401

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "refresh.md"
MARK = "<!-- runbook-chain"
# the runbook's placeholders -> this test's
STORE, SHARED = "s3://b/", "/shared/medsimp/"
PREFIX = f"s3://{BUCKET}/runbook/"


def runbook_chain() -> list[list[str]]:
    """The argv of each command in the fenced block that follows the runbook-chain mark."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    marks = [number for number, line in enumerate(lines, 1) if line.strip().startswith(MARK)]
    assert len(marks) == 1, f"{DOC.name}: expected one {MARK} mark, found {len(marks)}"
    block = next(b for b in blocks(DOC) if b.line > marks[0])
    assert block.line == marks[0] + 1, f"{DOC.name}:{marks[0]}: the mark must sit right above its block"
    return commands(block)


def _command(argv: list[str]) -> str:
    """`align train`, `build`, ... of a medsimp argv (global options skipped)."""
    words: list[str] = []
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--set":
            next(rest)
        elif arg.startswith("-") and words:
            break
        elif not arg.startswith("-"):
            words.append(arg)
    return " ".join(words[:2]) if words[0] == "align" else words[0]


def test_the_runbook_chain_is_the_english_chain_in_order():
    assert [_command(argv) for argv in runbook_chain()] == [
        "cochrane",
        "link",
        "align train",
        "align corpus",
        "filter",
        "build",
        "report",
    ]


def _ours(argv: list[str], names: dict[str, str]) -> list[str]:
    """A runbook argv (without `medsimp`) with its placeholders replaced by this test's."""
    args = []
    for arg in argv[1:]:
        for placeholder, mine in names.items():
            arg = arg.replace(placeholder, mine)
        args.append(arg)
    return args


def _portable(env: dict[str, str], cluster: dict) -> list[str]:  # noqa: F811
    """Step 3's flags: medsimp's job server and the external pool, two workers, and the store
    settings as Beam's S3 options too (step 2: the credentials among them serve the launcher;
    the workers take theirs from their environment, `pool_env`)."""
    return [
        *("--set", "beam.num_workers=2", *cluster["flags"]),
        f"--beam-arg=--s3_endpoint_url={env['AWS_ENDPOINT_URL']}",
        f"--beam-arg=--s3_access_key_id={env['AWS_ACCESS_KEY_ID']}",
        f"--beam-arg=--s3_secret_access_key={env['AWS_SECRET_ACCESS_KEY']}",
        f"--beam-arg=--s3_region_name={env['AWS_DEFAULT_REGION']}",
    ]


@pytest.fixture(scope="module")
def pool_env(s3):  # noqa: F811
    """The store's credentials, and no other AWS setting, in this process's environment while
    the module's `cluster` starts, so its job server and worker pool inherit them, as workers
    given credentials by their image would: the endpoint and region reach the workers only
    as the job's S3 options (`_portable`), carried by the jobs' DoFns."""
    env, _ = s3
    before = {name: os.environ.get(name) for name in {*env, *(n for n in os.environ if n.startswith("AWS_"))}}
    for name in before:
        os.environ.pop(name, None)
    os.environ.update({name: env[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")})
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def chain(s3, tmp_path_factory):  # noqa: F811
    """Every command of the runbook's chain, as written, on the default runner; yields the
    placeholders' values and the options that keep it small."""
    env, _ = s3
    tmp = tmp_path_factory.mktemp("runbook")
    english = _english_sample(tmp)
    gold = tmp / "gold.jsonl"  # two gold reviews: the sample's others are the chain's
    lines = (ROOT / "data" / "sample" / "align_gold.jsonl").read_text(encoding="utf-8").splitlines(True)
    gold.write_text("".join(lines[:2]), encoding="utf-8")
    shared = tmp / "shared"
    index = _cli(env, tmp, "umls-index", "--output", str(shared / "umls-index"))
    assert index.returncode == 0, index.stderr[-1500:]
    names = {STORE: PREFIX, SHARED: f"{shared}/", "reviews.jsonl": str(english), "gold.jsonl": str(gold)}
    # small: self-training on two reviews (the runbook's `align train --input` needs it on), a
    # short CRF training, one document cache
    small = ["--set", "align.self_training.max_documents=2", "--set", "align.crf.epochs=5"]
    small += ["--set", f"cache.dir={tmp / 'cache'}"]
    for argv in runbook_chain():
        assert argv[0] == "medsimp", argv
        done = _cli(env, tmp, *small, *_ours(argv, names), timeout=600)
        assert done.returncode == 0, (argv, done.stderr[-2000:])
    # the chain again with a local folder for the store: the store's model and index (not
    # trained again), a document cache of its own (both chains compute every document); no
    # report (it names its own folder)
    local = {**names, STORE: f"{tmp / 'local'}/"}
    own_cache = [*small[:-2], "--set", f"cache.dir={tmp / 'cache-local'}"]
    for argv in runbook_chain():
        if _command(argv) not in ("align train", "report"):
            done = _cli(env, tmp, *own_cache, *_ours(argv, local), timeout=600)
            assert done.returncode == 0, (argv, done.stderr[-2000:])
    return {"names": names, "small": small, "tmp": tmp, "local": tmp / "local"}


def test_the_runbook_chain_runs_from_the_store_to_the_store(s3, chain, tmp_path, monkeypatch):  # noqa: F811
    """Every stage published to its prefix, of public lineage; the report too; and the builder,
    downloaded as the runbook says, loads with `datasets.load_dataset`."""
    env, client = s3
    for stage in ("cochrane", "linked", "align", "filter", "multicochrane", "report"):
        marker = _marker(client, f"runbook/{stage}")
        assert marker["run"] and marker["lineage"] == ["cochrane"], (stage, marker)
    assert {"index.html", "report.md", "report.json"} <= set(_published(client, "runbook/report"))
    from datasets import load_dataset

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from pipelines.jobs import objstore
    from pipelines.jobs.store import use_store

    use_store(None, (), {})  # Beam's S3 filesystem, as the commands set it up
    folder = objstore.download(f"{PREFIX}multicochrane", str(tmp_path / "multicochrane"))
    assert _local(Path(folder)) == _published(client, "runbook/multicochrane")
    for config in ("en", "en-filtered"):
        ours = load_dataset(folder, config, cache_dir=str(tmp_path / "hf"))
        theirs = load_dataset(
            str(chain["local"] / "multicochrane"), config, cache_dir=str(tmp_path / "hf-local")
        )
        assert {s: ours[s].to_list() for s in ours} == {s: theirs[s].to_list() for s in theirs}
        assert sum(ours[split].num_rows for split in ours) > 0, config


def test_every_stage_in_the_store_holds_the_bytes_the_chain_writes_locally(s3, chain):  # noqa: F811
    """`link`, `align corpus` and `filter` published the local chain's files byte for byte (they
    read `s3://` inputs: the prefixes the stages before them published to, the marker leading to
    the run), of public lineage and named by their command; `build multicochrane` too, but for
    its card, which names its inputs by URL (so the params hashes of build and of align, whose
    output the card reads, differ): all else in it, their content hashes too, is equal.
    (Before: "local folders only" for every output after cochrane; build read an s3:// input as
    a local path.)"""
    _, client = s3
    local = chain["local"]
    for stage, command in (("linked", "link"), ("align", "align corpus"), ("filter", "filter")):
        expected = _local(local / stage)
        assert expected and _published(client, f"runbook/{stage}") == expected, stage
        marker = _marker(client, f"runbook/{stage}")
        assert marker["lineage"] == ["cochrane"] and marker["command"] == command, marker
    built, expected = _published(client, "runbook/multicochrane"), _local(local / "multicochrane")
    assert set(built) == set(expected) and len(expected) > 4
    assert [rel for rel, data in expected.items() if rel != "README.md" and built[rel] != data] == []
    # the inputs as the card names them (the model's self-training pool, `cochrane/runs/...` in
    # the store, is the same model's in both cards: not renamed)
    inputs = ("cochrane/sentences", "linked", "align", "filter", "multicochrane")
    store, here = {s: f"{PREFIX}{s}" for s in inputs}, {s: str(local / s) for s in inputs}
    (ours, ours_body), (theirs, theirs_body) = (
        _card(built["README.md"], store, here),
        _card(expected["README.md"], here, here),
    )
    differ = [k for k in {*ours, *theirs} if k != "medsimp" and ours.get(k) != theirs.get(k)] + [
        (k, ours["medsimp"].get(k), theirs["medsimp"].get(k))
        for k in {*ours["medsimp"], *theirs["medsimp"]}
        if ours["medsimp"].get(k) != theirs["medsimp"].get(k)
    ]
    assert not differ and ours_body == theirs_body, differ


def _card(text: bytes, names: dict[str, str], local: dict[str, str]) -> tuple[dict, list[str]]:
    """A builder card's YAML header and body with the inputs' names made local and the params
    hashes left out."""
    import yaml

    card = text.decode("utf-8")
    for stage, name in names.items():
        card = card.replace(name, local[stage])
    head, body = card[4:].split("\n---\n", 1)
    meta = yaml.safe_load(head)
    differ = ("params_hash", "params_hash.align")
    meta["medsimp"] = {k: v for k, v in meta["medsimp"].items() if k not in differ}
    return meta, [line for line in body.splitlines() if not any(f"| {k} |" in line for k in differ)]


def test_the_runbook_filter_on_the_job_server_and_external_pool_publishes_the_default_runners_bytes(
    s3,  # noqa: F811
    chain,
    pool_env,
    cluster,  # noqa: F811
):
    """Step 3's portable run: the chain's `filter` on medsimp's job server and an external pool
    (two workers; the credentials in their environment, the endpoint and region as Beam's S3
    options, step 2) publishes the default runner's bytes."""
    env, client = s3
    argv = next(a for a in runbook_chain() if _command(a) == "filter")
    args = [arg.replace(f"{PREFIX}filter", f"{PREFIX}filter-pool") for arg in _ours(argv, chain["names"])]
    done = _cli(env, chain["tmp"], "-v", *chain["small"], *args, *_portable(env, cluster), timeout=600)
    assert "Must provide one of client or options" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    assert _published(client, "runbook/filter-pool") == _published(client, "runbook/filter") != {}


def test_the_runbook_cochrane_on_the_job_server_and_external_pool_publishes_the_default_runners_bytes(
    s3,  # noqa: F811
    pool_env,
    cluster,  # noqa: F811
    tmp_path,
):
    """The chain's first command (a local input, an `s3://` output) on medsimp's job server and
    an external pool of two workers publishes what the default runner publishes: its workers
    write their spill runs to the store and read them back (they failed to before the DoFns
    carried the store settings: "Must provide one of client or options")."""
    env, client = s3
    argv = next(a for a in runbook_chain() if _command(a) == "cochrane")
    names = {STORE: f"s3://{BUCKET}/runbook-pool/", "reviews.jsonl": str(_english_sample(tmp_path))}
    default = _cli(env, tmp_path, *_ours(argv, {**names, STORE: f"s3://{BUCKET}/runbook-default/"}))
    assert default.returncode == 0, default.stderr[-2000:]
    done = _cli(env, tmp_path, "-v", *_ours(argv, names), *_portable(env, cluster), timeout=600)
    assert "Must provide one of client or options" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    assert _published(client, "runbook-pool/cochrane") == _published(client, "runbook-default/cochrane") != {}
