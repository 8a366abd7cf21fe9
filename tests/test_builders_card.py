"""Dataset cards speak the Hub's metadata and round-trip through huggingface_hub's DatasetCard."""

from __future__ import annotations

import pyarrow as pa
import pytest
import yaml
from huggingface_hub import DatasetCard, DatasetCardData

from medsimp.corpora.common import BuiltDataset, HubCard
from medsimp.corpora.writer import WITHHELD, render_card, size_category, write_splits

HUB = HubCard(
    license_name="toy-terms",
    license_link="https://example.org/terms",
    intended_use="Testing cards.",
    limitations="Three rows.",
    tags=("medical",),
)


def _dataset(lineage: tuple[str, ...]) -> BuiltDataset:
    table = pa.table(
        {"pair_id": ["p1", "p2", "p3"], "complex_text": ["pt has htn .", "b", "c"], "n": [1, 2, 3]}
    )
    return BuiltDataset(
        name="toy",
        title="Toy",
        description="A toy.",
        citation="@misc{toy}",
        license="other",
        access="Terms.",
        configs={"pairs": {"train": table}},
        config_descriptions={"pairs": "pairs"},
        feature_descriptions={},
        counts={"read": 3, "kept": 3, "filtered": 0, "rejected": 0},
        default_config="pairs",
        hub=HUB,
        lineage=lineage,
    )


def _card(lineage: tuple[str, ...], folder) -> tuple[str, dict]:
    ds = _dataset(lineage)
    text = render_card(ds, {"stage": "build@toy"}, write_splits(ds, folder))
    return text, yaml.safe_load(text.split("---\n")[1])


def test_public_card_carries_hub_metadata_and_round_trips(tmp_path):
    text, header = _card(("cochrane",), tmp_path)
    assert header["license_name"] == "toy-terms" and header["license_link"] == "https://example.org/terms"
    assert header["language"] == ["en"] and header["task_categories"] == ["text-generation"]
    assert header["size_categories"] == ["n<1K"] and header["tags"] == ["medical", "medsimp"]
    assert "extra_gated_prompt" not in header
    card = DatasetCard(text)
    assert card.data.to_dict() == header
    assert DatasetCardData(**header).to_dict() == header
    for section in ("## Example instance", "## Intended use", "## Limitations and biases"):
        assert section in card.text
    assert '"complex_text": "pt has htn ."' in card.text


def test_mimic_derived_card_is_gated_and_withholds_text(tmp_path):
    text, header = _card(("mimic-iii",), tmp_path)
    assert header["license_name"].startswith("physionet-credentialed-health-data")
    assert "PhysioNet" in header["extra_gated_prompt"]
    assert set(header["extra_gated_fields"].values()) == {"text", "checkbox"}
    assert DatasetCard(text).data.to_dict() == header
    assert "pt has htn" not in text and WITHHELD in text


@pytest.mark.parametrize(
    "rows,label", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (250_000, "100K<n<1M")]
)
def test_size_category(rows, label):
    assert size_category(rows) == label
