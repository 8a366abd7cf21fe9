"""Params `evaluate`."""

from __future__ import annotations

from typing import Literal

from medsimp.sections.base import Count, Language, RougeTokenizer, Section


class Evaluate(Section):
    models: list[str] = ["declare", "bertmt", "dictionary", "copy"]
    models_dir: str = "out/models"
    split: str = "test"
    common_words: str | None = None  # null: notes.common_words
    dictionaries: list[str] | None = None  # null: train.dictionaries
    meteor: bool = True
    bertscore: bool = True
    bertscore_model: str = "minilm"
    select: list[str] | None = None  # null: every metric
    bootstrap_samples: Count = 1000
    bootstrap_seed: int = 12345
    length_buckets: list[int] = [0, 10, 15, 20, 30]
    style_data: str | None = None  # null: style_accuracy not computed
    perplexity_model: str | None = None  # null: perplexity not computed
    umls_index: str | None = None  # null: masked_edit_distance not computed
    style_classifier: Literal["fasttext", "tfidf_logreg"] = "fasttext"  # Cao et al. §4.3: fastText
    style_direction: Literal["e2l", "l2e"] = "e2l"  # style_accuracy target: layman (e2l) | expert (l2e)
    masked_edit_pair: Literal["gold", "output"] = "gold"  # Table 3: parallel gold pair | output vs input
    masked_edit_unit: Literal["char", "word"] = "char"  # gold pair's unit (output vs input: word)
    medlane_references: Literal["released", "bleu_eval_new"] = "released"  # compat-mode reference preparation
    lang: Language = "en"  # the outputs' (and references') language (--lang)
    src_lang: Language | None = None  # the sources' language; null = lang (--src-lang)
    allow_cross_lingual: bool = False  # compute source-vs-output metrics across languages, flagged
    check_language: bool = True  # evaluate files: refuse outputs/sources detected in another language
    rouge_tokenizer: RougeTokenizer = (
        "nltk"  # ROUGE's tokens (--rouge-tokenizer): NLTK Treebank | rouge-score's
    )
