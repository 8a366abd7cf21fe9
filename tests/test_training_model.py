"""DECLARE: label derivation, module shapes and masking, partial translation, a tiny training run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from medsimp.params_schema import Train, section_of
from training.declare import NEG_INF, partial_translate
from training.labels import (
    MODIFY,
    SPAN_END,
    SPAN_START,
    derive,
    marked_source,
    marked_target,
    masked_context,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "medlane"
# the device and mixed precision params give by default (auto: the CPU and full precision here)
AUTO = {"device": Train().device, "mixed_precision": Train().mixed_precision}
DICTIONARY = Path(__file__).resolve().parents[1] / "medsimp" / "resources" / "medlane_dictionary.json"
DICT = {
    "pt": ["patient", "physical therapy"],
    "htn": ["hypertension", "high blood pressure"],
    "or": ["operating room"],
    "iv": ["through the vein", "intravenous"],
    "abx": ["antibiotics"],
}


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    """A 1-layer, 32-dim BERT with a word-level vocabulary of the embedded sample."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words: set[str] = set()
    for name in ("train", "validation", "test"):
        text = (SAMPLE / f"{name}.txt").read_text(encoding="utf-8").lower()
        words |= set(text.replace("[", " ").replace("]", " ").split())
    for values in json.loads((DICTIONARY).read_text()).values():
        words |= {w for v in values for w in v.split()}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "/", "-", *sorted(words)]
    out = tmp_path_factory.mktemp("tiny_bert")
    BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(vocab))}).save_pretrained(out)
    cfg = BertConfig(
        vocab_size=len(dict.fromkeys(vocab)),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(out)
    return str(out)


# ---------------------------------------------------------------- labels
def test_derive_labels_terms_and_gold_options():
    src = "pt was given iv abx or fluids for htn .".split()
    tgt = "patient was given antibiotics through the vein or fluids for high blood pressure .".split()
    labels, terms = derive(src, tgt, DICT)
    assert [src[i] for i, lab in enumerate(labels) if lab == MODIFY] == ["pt", "iv", "abx", "htn"]
    by_word = {t.word: t for t in terms}
    assert by_word["pt"].gold == 0 and by_word["pt"].target_span == (0, 1)
    assert by_word["iv"].gold == 0 and by_word["iv"].target_span == (4, 7)  # found inside a 2-term block
    assert by_word["abx"].target_span == (3, 4)
    assert by_word["htn"].options == ("hypertension", "high blood pressure") and by_word["htn"].gold == 1
    assert "or" not in by_word  # unchanged dictionary words stay keep


def test_derive_term_without_gold_is_located_but_not_interpreted():
    labels, terms = derive("pt is stable".split(), "the person is stable".split(), DICT)
    assert labels[0] == MODIFY and terms[0].gold is None and terms[0].target_span is None


def test_derive_caps_options():
    labels, terms = derive(["x"], ["o9"], {"x": [f"o{i}" for i in range(12)]}, max_options=8)
    assert len(terms[0].options) == 8 and terms[0].gold is None


def test_marking():
    assert marked_source(["pt", "had", "htn"], {2: "high blood pressure"}) == [
        "pt",
        "had",
        SPAN_START,
        "high",
        "blood",
        "pressure",
        SPAN_END,
    ]
    assert marked_target(["a", "b", "c", "d"], [(0, 1), (1, 2), (3, 4)]) == [
        SPAN_START,
        "a",
        SPAN_END,
        SPAN_START,
        "b",
        SPAN_END,
        "c",
        SPAN_START,
        "d",
        SPAN_END,
    ]
    assert masked_context(["pt", "had", "htn"], 2, "[MASK]") == "pt had [MASK]"


# ---------------------------------------------------------------- partial translation
def _scripted(outputs: list[int]):
    """A decoder stand-in that records what it is fed and emits `outputs` when asked."""
    fed: list[int] = []
    queue = list(outputs)

    def step(prev: int, want: bool):
        fed.append(prev)
        return queue.pop(0) if want else None

    return step, fed


def test_partial_translation_copies_outside_and_generates_inside():
    S, E, BOS = 100, 101, 99
    step, fed = _scripted([7, 8, E])
    segs = partial_translate([1, 2, S, 50, 51, E, 3], S, E, step, BOS)
    assert segs == [("copy", [0, 1]), ("gen", [7, 8]), ("copy", [6])]
    # the decoder consumes the copied tokens, the start marker, its own outputs, then the end marker
    assert fed == [BOS, 1, 2, S, 7, 8, E]


def test_partial_translation_stops_at_max_span():
    S, E = 100, 101
    step, fed = _scripted([5] * 10)
    segs = partial_translate([S, 9, E, 4], S, E, step, 0, max_span=3)
    assert segs == [("gen", [5, 5, 5]), ("copy", [3])]
    assert fed[-2:] == [5, E]  # the end marker is forced after the cut


# ---------------------------------------------------------------- modules
@pytest.fixture(scope="module")
def model_and_feat(tiny_encoder):
    from training.declare import Declare
    from training.trainer import Featurizer, load_backbone, seed_everything

    seed_everything(0, 1)
    s = Train(encoder=tiny_encoder, max_options=4)
    tok, enc, _ = load_backbone(tiny_encoder)
    return Declare(enc), Featurizer(tok, DICT, s)


def test_module_shapes_and_option_masking(model_and_feat):
    model, feat = model_and_feat
    pairs = [
        ("pt was given iv abx .".split(), "patient was given antibiotics through the vein .".split()),
        ("bp stable .".split(), "blood pressure stable .".split()),
    ]
    batch = feat.collate([feat.example(a, b) for a, b in pairs])
    B, T = batch["src_ids"].shape
    states = model.encode(batch["src_ids"], batch["src_mask"])
    assert model.cwl(states).shape == (B, T, 2)
    n_q = batch["option_mask"].shape[0]
    assert batch["option_mask"].shape == (n_q, 4) and n_q == 3  # pt, iv, abx have gold options
    logits = model.dnli_logits(batch)
    assert logits.shape == (n_q, 4)
    assert torch.all(logits[~batch["option_mask"]] == NEG_INF)
    probs = torch.softmax(logits, -1)
    assert torch.all(probs[~batch["option_mask"]] < 1e-6)
    memory = model.encode(batch["mark_ids"], batch["mark_mask"])
    logp = model.rssp(batch["dec_in"], memory, batch["mark_mask"].bool(), batch["mark_ids"])
    assert logp.shape == (*batch["dec_in"].shape, len(feat.tok))
    assert torch.allclose(logp.exp().sum(-1), torch.ones(logp.shape[:2]), atol=1e-4)  # a distribution
    losses = model.losses(batch)
    assert set(losses) == {"lp", "lq", "lr"} and all(torch.isfinite(v) for v in losses.values())
    # CWL labels: only the first sub-token of each word is supervised, specials ignored
    assert batch["cwl_labels"][0, 0] == -100 and int((batch["cwl_labels"][0] == MODIFY).sum()) == 3


def test_train_predict_resume_and_reload(tiny_encoder, tmp_path):
    from training.data import load_medlane
    from training.trainer import load, predict, save, train

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    d = json.loads((DICTIONARY).read_text())
    s = Train(encoder=tiny_encoder, epochs=1, batch_size=8, head_lr=5e-3)
    ck = tmp_path / "ck"
    model, feat, log = train(splits.train[:16], splits.validation[:4], d, s, ck, progress=False, **AUTO)
    assert log["best_epoch"] == 1 and (ck / "last.pt").exists()
    s2 = Train(encoder=tiny_encoder, epochs=2, batch_size=8, head_lr=5e-3)
    model, feat, log = train(splits.train[:16], splits.validation[:4], d, s2, ck, progress=False, **AUTO)
    assert log["resumed_from"] == 0 and [e["epoch"] for e in log["epochs"]] == [1, 2]
    sources = [src for src, _ in splits.validation[:4]]
    preds = predict(model, feat, sources)
    assert len(preds) == 4 and all(p.strip() for p in preds)
    out = tmp_path / "model"
    out.mkdir()
    save(model, feat, out, log)
    again, feat2 = load(out)
    assert predict(again, feat2, sources) == preds
    out2 = tmp_path / "model2"
    out2.mkdir()
    save(model, feat, out2, log)
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out2) for p in out2.rglob("*") if p.is_file())
    assert all((out / f).read_bytes() == (out2 / f).read_bytes() for f in files)  # byte-identical


def test_training_is_bit_reproducible_whatever_the_callers_thread_count(tiny_encoder, tmp_path):
    """DVC's lock holds the model's hash: two fresh trainings must give the same bytes, even when
    the process started with another torch thread count (train.threads fixes it)."""
    from training.data import load_medlane
    from training.trainer import save, train

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    d = json.loads((DICTIONARY).read_text())
    s = Train(encoder=tiny_encoder, epochs=1, batch_size=4, head_lr=5e-3)
    digests = []
    for run, threads in enumerate((3, 1)):
        torch.set_num_threads(threads)
        model, feat, log = train(
            splits.train[:8], splits.validation[:4], d, s, tmp_path / f"ck{run}", progress=False, **AUTO
        )
        out = tmp_path / f"m{run}"
        out.mkdir()
        save(model, feat, out, log)
        digests.append({p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
        assert torch.get_num_threads() == s.threads == 2  # params train.threads
    assert digests[0] == digests[1]


@pytest.mark.parametrize("patience, trained", [(1, [1, 2]), (2, [1, 2, 3])])
def test_patience_is_the_number_of_epochs_without_improvement_issue_54(
    tiny_encoder, tmp_path, patience, trained
):
    """`patience` epochs in a row without a better validation loss stop training, as Keras'
    EarlyStopping and Lightning define it (the old loop waited `patience` + 1: with the params
    value 1, two). Learning rates 0: the validation loss never improves after epoch 1."""
    from training.data import load_medlane
    from training.trainer import train

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    d = json.loads((DICTIONARY).read_text())
    s = Train(encoder=tiny_encoder, epochs=4, batch_size=4, lr=0.0, head_lr=0.0, patience=patience)
    _, _, log = train(splits.train[:4], splits.validation[:2], d, s, tmp_path / "ck", progress=False, **AUTO)
    assert [e["epoch"] for e in log["epochs"]] == trained and log["best_epoch"] == 1
    assert len({e["val_loss"] for e in log["epochs"]}) == 1  # no epoch improved on the first


def test_pairs_folder_reader_carves_missing_splits(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from training.data import load_splits

    rows = [
        (f"complex sentence number {i} with htn .", f"simple sentence {i} with high blood pressure .")
        for i in range(40)
    ]
    table = pa.table(
        {"complex_text": [c for c, _ in rows], "simple_text": [s for _, s in rows], "doi": ["x"] * 40}
    )
    pq.write_table(table.slice(0, 30), tmp_path / "train-abc.parquet")
    pq.write_table(table.slice(30, 10), tmp_path / "test-def.parquet")
    splits = load_splits(
        section_of(
            Train,
            {
                "data": {
                    "format": "pairs",
                    "pairs": str(tmp_path),
                    "validation_fraction": 0.3,
                    "resplit": True,
                }
            },
        )
    )
    assert splits.counts["test"] == 10  # the folder's own test split
    assert splits.counts["train"] + splits.counts["validation"] == 30 and splits.counts["validation"] > 0
    assert {it.references[0] for it in splits.eval["test"]} == {s for _, s in rows[30:]}
    assert splits.train[0][0][-2:] == ["htn", "."]
    with pytest.raises(FileNotFoundError, match="no validation split"):  # re-split only on request
        load_splits(section_of(Train, {"data": {"format": "pairs", "pairs": str(tmp_path)}}))


def test_dictionary_baseline_takes_a_seeded_random_expansion():
    from training.baselines import dictionary_baseline

    dictionary = {"htn": ["hypertension", "high blood pressure"], "pt": ["patient"]}
    sources = [["pt", "has", "htn"]] * 40
    random_ = dictionary_baseline(sources, dictionary, "random", seed=13)
    assert random_ == dictionary_baseline(sources, dictionary, "random", seed=13)  # reproducible
    assert {s.split(" has ")[1] for s in random_} == {"hypertension", "high blood pressure"}
    assert all(s.startswith("patient has ") for s in random_)
    assert set(dictionary_baseline(sources, dictionary, "first")) == {"patient has hypertension"}


def test_an_unavailable_encoder_falls_back_and_says_so(tiny_encoder, caplog):
    from training.trainer import load_backbone

    with caplog.at_level("WARNING", logger="medsimp"):
        _, _, used = load_backbone("/no/such/encoder", fallback=tiny_encoder)
    assert used == tiny_encoder and "cannot be loaded here" in caplog.text
    with pytest.raises(OSError):
        load_backbone("/no/such/encoder", fallback=None)


def test_declare_defaults_are_the_papers():
    from medsimp.params_schema import Train

    train = Train()
    assert train.encoder == "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext"
    assert train.epochs == 10 and train.copy_attention is False and train.dictionary_expansion == "random"
    assert train.locator_labels == "annotation" and "bertmt" in train.models


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_warm_rerun_writes_the_same_model_and_reports_the_resume(tiny_encoder, tmp_path):
    """`medsimp train --model declare` a second time with the same cache resumes from its last
    checkpoint: same output bytes and metrics (DVC sees no change); the resume is in the run record."""
    from medsimp.cli import main

    root = Path(__file__).resolve().parents[1]
    base = ["--params", str(root / "params.yaml"), "--set", f"train.encoder={tiny_encoder}"]
    base += ["--set", "train.epochs=1", "--set", f"cache.dir={tmp_path / 'cache'}"]
    for name in ("a", "b"):
        args = ["train", "--model", "declare", "--output", str(tmp_path / name), "--no-progress"]
        assert main([*base, *args, "--metrics", str(tmp_path / f"{name}.json")]) == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert Path("declare.safetensors") in files and Path("train_log.json") in files
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    runs = [json.loads((tmp_path / f"{n}.json.run.json").read_text()) for n in ("a", "b")]
    assert runs[0].get("resumed_from_epoch") is None and runs[1]["resumed_from_epoch"] == 0
    # the model records how its settings depart from MedLane's (params.yaml's sample profile)
    stats = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert stats["paper_deviations"] == {
        "epochs": {"used": 1, "paper": 10},
        "head_lr": {"used": 0.005, "paper": 5e-05},
        "copy_attention": {"used": True, "paper": False},
    }


def test_device_and_mixed_precision_default_to_auto_and_auto_is_full_precision_on_cpu():
    """The params the user gets (issue 37 item 4): train.device and train.mixed_precision auto;
    on a machine without CUDA that is the CPU in full precision, and the model's log says so."""
    from medsimp.config import load_params
    from training.trainer import select_device

    train = load_params(Path(__file__).resolve().parents[1] / "params.yaml").train
    assert (
        (train.device, train.mixed_precision) == ("auto", "auto") == (Train().device, Train().mixed_precision)
    )
    if torch.cuda.is_available():
        pytest.skip("a CUDA machine: auto picks the GPU")
    device, mode = select_device("auto", "auto")
    assert (device.type, mode) == ("cpu", "off")


def test_the_checkpoint_key_holds_the_device_and_precision_a_run_resolved():
    """`train` keys checkpoints by the resolved device and precision (not `auto`): a CPU
    checkpoint (no grad-scaler state) is never resumed by an fp16 run on a GPU."""
    from medsimp.config import load_params
    from training.neural import data_key as _data_key

    root = Path(__file__).resolve().parents[1]
    cfg = load_params(root / "params.yaml").train
    keys = {
        _data_key(cfg.model_copy(update={"device": d, "mixed_precision": m}), "declare", root)
        for d, m in (("cpu", "off"), ("cuda", "fp16"), ("cuda", "bf16"), ("cuda", "off"))
    }
    assert len(keys) == 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is there")
@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("device", "cuda", "train.device is cuda but torch sees no CUDA device here"),
        ("mixed_precision", "fp16", "train.mixed_precision fp16 runs on CUDA only"),
        ("mixed_precision", "bf16", "train.mixed_precision bf16 runs on CUDA only"),
    ],
)
def test_a_device_this_machine_lacks_is_one_line(tiny_encoder, tmp_path, capsys, key, value, says):
    from medsimp.cli import main

    root = Path(__file__).resolve().parents[1]
    code = main(
        ["--params", str(root / "params.yaml"), "--set", f"train.encoder={tiny_encoder}",
         "--set", f"cache.dir={tmp_path / 'cache'}", "--set", f"train.{key}={value}",
         "train", "--model", "declare", "--output", str(tmp_path / "m"), "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and says in err[-1] and not (tmp_path / "m").exists()


def test_training_reports_its_device_in_one_line(tiny_encoder, tmp_path, caplog):
    import logging

    from training.data import load_medlane
    from training.trainer import train

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    s = Train(encoder=tiny_encoder, epochs=1, batch_size=8)
    with caplog.at_level(logging.INFO, logger="training.trainer"):
        _, _, log = train(
            splits.train[:8], splits.validation[:4], {}, s, tmp_path / "ck", False, system="bertmt", **AUTO
        )
    lines = [
        r.getMessage() for r in caplog.records if r.name == "training.trainer" and "device" in r.getMessage()
    ]
    where = "cuda" if torch.cuda.is_available() else "cpu"
    assert len(lines) == 1 and lines[0].startswith(f"train bertmt: device {where}, mixed precision ")
    assert f"batch size 8, {s.threads} CPU threads" in lines[0] and log["device"] == where
    assert ("amp_dtype" in log) == (where == "cuda") and log["amp"] == (where == "cuda")


# ---------------------------------------------------------------- issue 19: locator labels, BERT-MT
def test_locator_labels_follow_the_annotation_by_default_issue_19():
    """MedLane's locator learns the words the annotators changed, jargon included: "cirrhosis" in a
    changed span is modify by default although no dictionary has it; the old rule keeps it."""
    src = "she has cirrhosis and htn .".split()
    tgt = "she has liver scarring and high blood pressure .".split()
    labels, terms = derive(src, tgt, DICT)
    assert [src[i] for i, lab in enumerate(labels) if lab == MODIFY] == ["cirrhosis", "htn"]
    assert [t.word for t in terms] == ["htn"]  # DNLI instances only from dictionary options
    old, old_terms = derive(src, tgt, DICT, rule="dictionary")
    assert [src[i] for i, lab in enumerate(old) if lab == MODIFY] == ["htn"]
    assert old[src.index("cirrhosis")] != MODIFY and [t.word for t in old_terms] == ["htn"]
    with pytest.raises(ValueError, match="locator_labels"):
        derive(src, tgt, DICT, rule="other")


def test_annotated_term_is_located_even_where_the_diff_sees_an_insertion():
    """`ct[ct scan]`: the diff sees "scan" inserted after an unchanged "ct"; the annotation says "ct"
    was explained, and names the gold option. Without annotation (MedLane's train file) the same
    in-place explanation is read off the diff: "ct" + inserted "scan" spells an expansion of "ct"."""
    d = {"ct": ["computed tomography", "ct scan"]}
    src, tgt = "ct showed no bleeding .".split(), "ct scan showed no bleeding .".split()
    labels, terms = derive(src, tgt, d, annotated={"ct": "ct scan"})
    assert labels[0] == MODIFY and terms[0].gold == 1 and terms[0].target_span == (0, 2)
    old_labels, old_terms = derive(src, tgt, d, rule="dictionary", annotated={"ct": "ct scan"})
    assert old_labels[0] != MODIFY and old_terms == []  # the old rule reads no annotation
    labels, terms = derive(src, tgt, d)
    assert labels[0] == MODIFY and terms[0].gold == 1 and terms[0].target_span == (0, 2)
    other = "ct showed no bleeding , scan later .".split()  # an insertion that spells no expansion
    assert derive(src, other, d)[0][0] != MODIFY


def test_validation_pairs_carry_the_references_annotation():
    from training.data import load_medlane

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    assert len(splits.validation_terms) == len(splits.validation)
    # "1 pt[patient] was admitted to the icu[intensive care unit] for low blood pressure ..."
    assert splits.validation[0][0][:2] == ["pt", "was"]
    assert splits.validation_terms[0] == {"pt": "patient", "icu": "intensive care unit"}


def test_bertmt_trains_and_writes_one_line_per_input_deterministically(tiny_encoder, tmp_path):
    """BERT-MT (MedLane Table 3): DECLARE's encoder and attention decoder generating the simple
    sentence directly; trains on a tiny set, one output per input, same seed -> same bytes."""
    from training.data import load_medlane
    from training.declare import BertMT
    from training.trainer import load, predict, save, train

    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    s = Train(encoder=tiny_encoder, epochs=2, batch_size=4, head_lr=5e-3, max_length=24)
    sources = [src for src, _ in splits.validation[:5]]
    outs = []
    for run in range(2):
        model, feat, log = train(
            splits.train[:8],
            splits.validation[:4],
            {},
            s,
            tmp_path / f"ck{run}",
            False,
            system="bertmt",
            **AUTO,
        )
        assert isinstance(model, BertMT) and set(log["epochs"][0]) == {
            "epoch",
            "train_loss",
            "val_lr",
            "val_loss",
        }
        preds = predict(model, feat, sources)
        assert len(preds) == len(sources) and all("\n" not in p for p in preds)
        out = tmp_path / f"m{run}"
        out.mkdir()
        save(model, feat, out, log)
        outs.append(({p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}, preds))
    assert outs[0] == outs[1] and "bertmt.safetensors" in outs[0][0]
    again, feat2 = load(tmp_path / "m0")
    assert isinstance(again, BertMT) and predict(again, feat2, sources) == outs[0][1]


def test_checkpoint_key_follows_the_training_code(monkeypatch):
    """A change to the label rules or the model code must not resume a stale checkpoint."""
    from medsimp import doccache
    from medsimp.config import load_params
    from training.neural import data_key as _data_key

    root = Path(__file__).resolve().parents[1]
    cfg = load_params(str(root / "params.yaml")).train
    key = _data_key(cfg, "declare", root)
    assert _data_key(cfg, "declare", root) == key and _data_key(cfg, "bertmt", root) != key
    monkeypatch.setattr(doccache, "code_version", lambda *modules: "another version")
    assert _data_key(cfg, "declare", root) != key


def test_checkpoint_key_covers_the_code_that_shapes_the_examples():
    """Tokens, readers, references and labels change what a model learns: their modules are
    in the checkpoint key (it follows the model's imports, not a hand list)."""
    from training.neural import checkpoint_code

    code = checkpoint_code()
    for module in (
        "training.labels",
        "medsimp.text.medlane_refs",  # `abbr[full]` (EvalItem, expand)
        "pipelines.sources.medlane",
        "medsimp.text.words",
    ):
        assert module in code, module
    assert not any(m.startswith(("medsimp.atomic", "medsimp.stats", "medsimp.cli")) for m in code)


def test_a_poisoned_checkpoint_runs_nothing_and_training_starts_over(tiny_encoder, tmp_path, caplog):
    """Issue 35 item 8: resuming called torch.load(weights_only=False), so a planted last.pt ran
    code. Checkpoints load as data only; one that does not is not resumed (a warning says so),
    and a real checkpoint still resumes (test_train_predict_resume_and_reload)."""
    import pickle

    from training.data import load_medlane
    from training.trainer import train

    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    ck = tmp_path / "ck"
    ck.mkdir()
    torch.save({"model": Boom()}, ck / "last.pt", pickle_module=pickle)
    splits = load_medlane(str(SAMPLE / "train.txt"), str(SAMPLE / "validation.txt"), str(SAMPLE / "test.txt"))
    d = json.loads((DICTIONARY).read_text())
    s = Train(encoder=tiny_encoder, epochs=1, batch_size=8, head_lr=5e-3)
    with caplog.at_level("WARNING", logger="medsimp"):
        _, _, log = train(splits.train[:8], splits.validation[:4], d, s, ck, progress=False, **AUTO)
    assert not marker.exists()
    assert log["resumed_from"] is None and [e["epoch"] for e in log["epochs"]] == [1]
    assert "training starts from the first epoch" in caplog.text


def test_random_states_round_trip_through_a_checkpoint_loaded_on_the_cpu(tmp_path, monkeypatch):
    """A resumed run draws what the uninterrupted run would: python, numpy and torch streams
    (and the training GPU's, saved when one trains) come back from a checkpoint loaded as data.
    Every tensor loads on the CPU, where the random-state setters need it, whatever device
    trained (a GPU run handed CUDA tensors to `torch.set_rng_state` before)."""
    import random

    import numpy as np

    from training import trainer

    cpu = torch.device("cpu")
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    torch.save({"rng": trainer._rng_state(cpu)}, tmp_path / "last.pt")
    want = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    seen = {}
    load = torch.load

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    ck = trainer._resume(tmp_path / "last.pt")
    assert seen["map_location"] == "cpu" and seen["weights_only"] is True
    assert ck is not None and ck["rng"]["torch"].device.type == "cpu" and ck["rng"]["cuda"] == []
    trainer._set_rng_state(ck["rng"], cpu)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == want
