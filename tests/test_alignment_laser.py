"""LASER loading from a model directory, with a tiny checkpoint generated in LASER2's format."""

from __future__ import annotations

import numpy as np
import pytest
import sentencepiece as spm
import torch
from nano_laser.models import LaserLstmEncoder

from alignment.encoders import LaserEncoder, make_encoder
from medsimp.params_schema import LaserSpec

TEXT = [
    "the patient has a fever",
    "aspirin lowers the risk of heart attack",
    "le patient a de la fièvre",
    "children with asthma",
    "we found twelve studies",
    "side effects were similar",
]


def _write_laser(model_dir, stem: str, hidden: int) -> None:
    """`<stem>.pt` as LASER2 stores it (params, model state, dictionary) and `<stem>.spm`."""
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT * 5),
        model_prefix=str(model_dir / stem),
        vocab_size=40,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
    )
    (model_dir / f"{stem}.model").rename(model_dir / f"{stem}.spm")
    proc = spm.SentencePieceProcessor(model_file=str(model_dir / f"{stem}.spm"))
    pieces = [proc.id_to_piece(i) for i in range(proc.get_piece_size())]
    dictionary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for p in pieces:
        dictionary.setdefault(p, len(dictionary))
    params = {
        "num_embeddings": len(dictionary),
        "padding_idx": 1,
        "embed_dim": 8,
        "hidden_size": hidden,
        "num_layers": 1,
        "bidirectional": True,
    }
    torch.manual_seed(0)
    model = LaserLstmEncoder(**params)
    torch.save(
        {"params": params, "model": model.state_dict(), "dictionary": dictionary}, model_dir / f"{stem}.pt"
    )


def test_laser2_checkpoint_from_model_dir(tmp_path):
    _write_laser(tmp_path, "laser2", hidden=6)
    enc = LaserEncoder(LaserSpec(model_dir=str(tmp_path), batch_size=2))
    vecs = enc.encode(["The patient has a fever.", "The patient has a fever.", "Side effects were similar."])
    assert vecs.shape == (3, 12) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[1]) and not np.allclose(vecs[0], vecs[2])


def test_laser3_file_chosen_per_language(tmp_path):
    _write_laser(tmp_path, "laser2", hidden=6)
    _write_laser(tmp_path, "laser3-xx.v1", hidden=5)
    enc = make_encoder(LaserSpec(model_dir=str(tmp_path)), None)
    assert enc.encode(["children with asthma"], "xx").shape == (1, 10)
    assert enc.encode(["children with asthma"], "en").shape == (1, 12)


def test_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="LASER file missing"):
        LaserEncoder(LaserSpec(model_dir=str(tmp_path))).encode(["x"])
    with pytest.raises(FileNotFoundError, match="not found"):
        LaserEncoder(LaserSpec(model_dir=str(tmp_path / "nope")))
