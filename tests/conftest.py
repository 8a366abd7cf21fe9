"""Test session settings: offline hubs, a private medsimp cache."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["DVC_NO_ANALYTICS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
