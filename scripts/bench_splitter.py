"""Growth exponent of every sentence splitter on pathological text (issue 18, item 7).

For each splitter (clinical `rules` and `rush`, multilingual pysbd-based `split_sentences`
in en/es/fr/fa) and each text shape, time one call at doubling sizes and print the slope of
log(time) against log(size): about 1 is linear, 2 quadratic. Shapes: a paragraph of
"e.g. " (abbreviation-dense), a paragraph of words with no sentence end, a run of one
character, a run of newlines, ordinary sentences. A size is skipped once a call took more
than --budget seconds (the exponent then covers the sizes measured).

    python scripts/bench_splitter.py                 # up to 1 MB (2^20 characters)
    python scripts/bench_splitter.py --max-exp 17 --splitters rules,ml-en
"""

from __future__ import annotations

import argparse
import math
import time

SHAPES = {
    "e.g.": lambda n: ("e.g. " * (n // 5 + 1))[:n],
    "no-end": lambda n: ("word and more words " * (n // 20 + 1))[:n],
    "one-char": lambda n: "a" * n,
    "newlines": lambda n: "\n" * n,
    "sentences": lambda n: ("The patient was seen. He is well today. " * (n // 40 + 1))[:n],
}


def splitters() -> dict:
    from medsimp.text.multilingual import split_sentences
    from medsimp.text.sentences import splitter

    out = {"rules": splitter("rules"), "rush": splitter("rush")}
    for lang in ("en", "es", "fr", "fa"):
        out[f"ml-{lang}"] = lambda text, lang=lang: split_sentences(text, lang)
    return out


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log t over log n."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-6)) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-exp", type=int, default=16, help="smallest size 2^k characters")
    ap.add_argument("--max-exp", type=int, default=20, help="largest size 2^k characters")
    ap.add_argument("--budget", type=float, default=30.0, help="stop doubling after a call this slow")
    ap.add_argument("--splitters", default="", help="comma list (default: all)")
    ap.add_argument("--shapes", default="", help="comma list (default: all)")
    args = ap.parse_args()
    funcs = splitters()
    names = args.splitters.split(",") if args.splitters else list(funcs)
    shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
    print(f"{'splitter':<9} {'shape':<10} {'exponent':>8}  seconds per size (characters)")
    for name in names:
        split = funcs[name]
        split("warm up. Done.")
        for shape in shapes:
            points: list[tuple[int, float]] = []
            for k in range(args.min_exp, args.max_exp + 1):
                text = SHAPES[shape](1 << k)
                t0 = time.perf_counter()
                split(text)
                points.append((1 << k, time.perf_counter() - t0))
                if points[-1][1] > args.budget:
                    break
            cells = " ".join(f"2^{int(math.log2(n))}:{t:.3f}" for n, t in points)
            print(f"{name:<9} {shape:<10} {slope(points):8.2f}  {cells}", flush=True)


if __name__ == "__main__":
    main()
