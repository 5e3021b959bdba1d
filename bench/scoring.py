"""Scorer throughput: ROUGE-L and SQuAD token F1 on 10,000 pairs of 200-word texts (target: ROUGE-L ≥ 2,000
pairs/s on one core). Run: ``.venv/bin/python bench/scoring.py [--pairs N] [--words N]``.

Texts are drawn from a Zipf-distributed 5,000-word vocabulary, and each reference rewrites 30% of its
prediction's words, so the overlap (and the LCS work) looks like a summary against a paraphrase.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from eval_harness.scorers import rouge, token_f1
from eval_harness.scorers.rouge import porter_stem, rouge_tokens, tokenize


def make_pairs(count: int, words: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` (prediction, reference) pairs of ``words`` words each."""
    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    pairs = []
    for _ in range(count):
        prediction = rng.choices(vocabulary, weights, k=words)
        reference = [w if rng.random() > 0.3 else rng.choices(vocabulary, weights)[0] for w in prediction]
        pairs.append((" ".join(prediction), " ".join(reference)))
    return pairs


def _lcs_table(a: list[str], b: list[str]) -> int:
    """The quadratic dynamic-programming LCS of rouge-score, for comparison."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, 1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def throughput(label: str, pairs: list[tuple[str, str]], function: Callable[[str, str], object]) -> float:
    """Time ``function`` over ``pairs``, print and return pairs per second."""
    started = time.perf_counter()
    for prediction, reference in pairs:
        function(prediction, reference)
    elapsed = time.perf_counter() - started
    rate = len(pairs) / elapsed
    print(f"{label:<42} {len(pairs):>7,} pairs  {elapsed:7.2f} s  {rate:>10,.0f} pairs/s")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--words", type=int, default=200)
    args = parser.parse_args()
    pairs = make_pairs(args.pairs, args.words)
    print(f"{args.pairs:,} pairs of {args.words}-word texts, one process, one core")
    rouge_l = throughput(
        "ROUGE-L (tokenise + bit-parallel LCS)", pairs, lambda p, r: rouge_tokens(tokenize(p), tokenize(r), ("rougeL",))
    )
    throughput("ROUGE-1/2/L (public rouge())", pairs, rouge)
    porter_stem("warming")  # nltk's import (~2 s) is a one-off, not throughput
    throughput("ROUGE-1/2/L with Porter stemming", pairs, lambda p, r: rouge(p, r, use_stemmer=True))
    throughput("token F1 (SQuAD v1.1)", pairs, token_f1)
    sample = pairs[: max(1, len(pairs) // 50)]
    throughput("ROUGE-L with the quadratic DP (for scale)", sample, lambda p, r: _lcs_table(tokenize(p), tokenize(r)))
    verdict = "meets" if rouge_l >= 2000 else "MISSES"
    print(f"ROUGE-L {verdict} the target of 2,000 pairs/s ({rouge_l:,.0f})")


if __name__ == "__main__":
    main()
