"""Train Cao et al.'s expert/layman style classifier once and save it for `evaluate.style_classifier`.

    python scripts/train_style_classifier.py --data builders/msd --output out/style/classifier.pkl

--data: text+label rows (a builder folder, a config folder or parquet files; see
`medsimp.training.style_transfer_measures.style_corpus`). The classifier is the one
`evaluate.style_data` trains in process (TF-IDF word 1-2-grams + logistic regression); saving it
only spares the training and pins it. Prints the training rows and the training accuracy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from medsimp.training.style_transfer_measures import (
        save_classifier,
        style_corpus,
        train_style_classifier,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="text+label parquet rows (e.g. builders/msd)")
    parser.add_argument("--output", required=True, help="where to write the classifier (a pickle)")
    args = parser.parse_args(argv)
    texts, labels = style_corpus(args.data)
    classifier = train_style_classifier(texts, labels)
    save_classifier(classifier, args.output)
    accuracy = sum(int(p) == y for p, y in zip(classifier.predict(texts), labels)) / len(texts)
    print(f"{len(texts)} rows ({sum(labels)} layman), training accuracy {accuracy:.4f} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
