"""The document cache's keys follow the code that computes a cached result."""

from __future__ import annotations

import sys

import pytest

from medsimp.doccache import code_version, content_key


def test_code_version_changes_with_the_source(tmp_path, monkeypatch):
    module = tmp_path / "cached_thing.py"
    module.write_text("def f():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code_version.cache_clear()
    before = code_version("cached_thing")
    module.write_text("def f():\n    return 2\n")
    code_version.cache_clear()
    after = code_version("cached_thing")
    assert before != after and len(after) == 16
    assert content_key(before, "text") != content_key(after, "text")
    sys.modules.pop("cached_thing", None)


def test_code_version_of_a_missing_module_is_an_error():
    with pytest.raises(ValueError, match="no source"):
        code_version("medsimp.no_such_module")


def test_link_and_embedding_keys_name_their_code():
    from pipelines.jobs import link

    assert "pipelines.text.umls" in link.CODE and "medsimp.text.readability" in link.CODE
    code_version.cache_clear()
    assert code_version(*link.CODE) == code_version(*link.CODE)


# --- issue 35 items 3 and 8: entries are data keyed by the model's content ---------------------


def test_entries_round_trip_arrays_and_json_values(tmp_path):
    import numpy as np

    from medsimp.doccache import DocCache

    cache = DocCache(tmp_path / "c", "ns")
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    cache.put("a" * 64, arr)
    value = {"linked": True, "concepts": [[{"cui": "C1", "sim": 0.5}]], "fkgl": float("nan"), "n": None}
    cache.put("b" * 64, value)
    got = cache.get("a" * 64)
    assert got.dtype == arr.dtype and np.array_equal(got, arr)
    back = cache.get("b" * 64)
    assert back["concepts"] == value["concepts"] and back["fkgl"] != back["fkgl"]
    with pytest.raises(TypeError):  # a tuple would read back as a list: a cached run would differ
        cache.put("c" * 64, {"span": (1, 2)})


def test_a_poisoned_entry_runs_nothing_and_is_a_miss(tmp_path):
    """A pickle that runs a command, planted under an entry's name (or its old .pkl name),
    is never unpickled: the lookup is a miss and the value is recomputed."""
    import os
    import pickle

    from medsimp.doccache import DocCache

    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    cache = DocCache(tmp_path / "c", "ns")
    key = "d" * 64
    entry = cache._path(key)
    entry.parent.mkdir(parents=True)
    entry.write_bytes(pickle.dumps(Boom()))
    entry.with_suffix(".pkl").write_bytes(pickle.dumps(Boom()))
    assert cache.get(key) is None and cache.misses == 1
    assert cache.get_or_compute(key, lambda: [1, 2]) == [1, 2]
    assert not marker.exists()
    # a damaged entry (payload changed after writing) is a miss too
    data = entry.read_bytes()
    entry.write_bytes(data[:-1] + b"3")
    assert cache.get(key) is None


def test_a_deeply_nested_entry_is_a_miss_not_a_recursion_error(tmp_path):
    """Issue 54: an entry nested past the JSON parser's depth (its header and checksum intact)
    raised RecursionError, an internal error; it is a miss, and so is such a header. The same
    for an ownership record and an output marker."""
    import hashlib
    import json

    from medsimp import ownership
    from medsimp.doccache import FORMAT, DocCache
    from medsimp.markers import MARKER, marker_of

    deep = b"[" * 100_000 + b"]" * 100_000
    cache = DocCache(tmp_path / "c", "ns")
    key = "e" * 64
    entry = cache._path(key)
    entry.parent.mkdir(parents=True)
    header = {"format": FORMAT, "kind": "json", "sha256": hashlib.sha256(deep).hexdigest()}
    entry.write_bytes(json.dumps(header).encode() + b"\n" + deep)
    assert cache.get(key) is None and cache.misses == 1
    entry.write_bytes(deep + b"\n[]")
    assert cache.get(key) is None
    assert cache.get_or_compute(key, lambda: {"n": 1}) == {"n": 1}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / MARKER).write_bytes(deep)
    assert marker_of(tmp_path / "out") is None
    mine = tmp_path / "metrics.json"
    mine.write_text("{}")
    record = ownership.record_path(mine)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_bytes(deep)
    assert not ownership.owned(mine)


def test_a_cache_folder_others_can_write_is_refused(tmp_path):
    from medsimp.doccache import DocCache
    from medsimp.errors import UsageError

    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(UsageError, match="can be written by another user"):
        DocCache(root, "ns").get("e" * 64)
    root.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(root)
    with pytest.raises(UsageError, match="not a folder"):
        DocCache(link, "ns").put("e" * 64, [1])


def test_two_models_in_folders_of_the_same_name_do_not_share_vectors(tmp_path):
    """Issue 35 item 3: the key was the folder's last name (`st-model`), so a second model in
    another folder called `model` got the first model's vectors. Keys hold the model's content;
    a cached run equals an uncached one for each model."""
    import numpy as np
    from transformers import BertConfig, BertModel, BertTokenizer

    from alignment.encoders import CachedEncoder, STEncoder
    from medsimp.params_schema import STSpec

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "drug", "lowers", "blood", "pressure", "."]
    folders = []
    for seed in (1, 2):
        folder = tmp_path / f"m{seed}" / "model"
        folder.mkdir(parents=True)
        BertTokenizer(vocab={w: i for i, w in enumerate(words)}).save_pretrained(folder)
        import torch

        torch.manual_seed(seed)
        cfg = BertConfig(
            vocab_size=len(words),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=32,
        )
        BertModel(cfg).save_pretrained(folder)
        folders.append(str(folder))
    texts = ["the drug lowers blood pressure .", "blood pressure ."]
    cache = str(tmp_path / "cache")
    cached = [CachedEncoder(STEncoder(STSpec(model=f)), cache).encode(texts, "en") for f in folders]
    uncached = [STEncoder(STSpec(model=f)).encode(texts, "en") for f in folders]
    assert (
        STEncoder(STSpec(model=folders[0])).name == STEncoder(STSpec(model=folders[1])).name
    )  # same folder name
    assert not np.array_equal(cached[0], cached[1])
    for c, u in zip(cached, uncached):
        assert c.tobytes() == u.tobytes()
    again = CachedEncoder(STEncoder(STSpec(model=folders[1])), cache)
    assert again.encode(texts, "en").tobytes() == uncached[1].tobytes() and again.hits == 1


def test_a_group_writable_cache_folder_of_this_user_is_used(tmp_path):
    """umask 002 with per-user groups (Debian, Ubuntu) makes every folder group-writable: allowed."""
    from medsimp.doccache import DocCache

    root = tmp_path / "mine"
    root.mkdir()
    root.chmod(0o775)
    cache = DocCache(root, "ns")
    cache.put("f" * 64, [1, 2])
    assert cache.get("f" * 64) == [1, 2]


def test_folders_the_cache_creates_are_not_world_writable_under_umask_000(tmp_path):
    import os
    import stat

    from medsimp.doccache import DocCache

    old = os.umask(0)
    try:
        cache = DocCache(tmp_path / "fresh" / "root", "embed/model")
        cache.put("a" * 64, [1])
        assert cache.get("a" * 64) == [1]
    finally:
        os.umask(old)
    for folder in (tmp_path / "fresh" / "root" / "embed", tmp_path / "fresh" / "root" / "embed" / "model"):
        assert not stat.S_IMODE(folder.stat().st_mode) & 0o002


def test_threads_storing_the_same_key_at_once_all_succeed(tmp_path):
    # CI failure (2026-12-06): the simplify stage's chat threads stored the same key at once;
    # they shared the temp name `.<key>.entry.tmp-<pid>`, so one thread's rename took the other's
    # file away ("not found: ...entry.tmp-N", exit 2). Each writer now has its own temp file.
    import threading

    from medsimp.doccache import DocCache

    cache = DocCache(tmp_path / "cache", "chat")
    key = content_key("same prompt")
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def store(i: int) -> None:
        start.wait()
        try:
            for _ in range(200):
                cache.put(key, {"reply": "Yes", "n": 1})
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=store, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.get(key) == {"reply": "Yes", "n": 1}
    assert [p.name for p in (tmp_path / "cache" / "chat").rglob("*")] == [key[:2], f"{key}.entry"]
