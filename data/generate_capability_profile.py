"""Regenerate data/capability_profile.jsonl: 4 axes x 60 distinct items, deterministic (seed 2026).

Run: python data/generate_capability_profile.py > data/capability_profile.jsonl
"""

from __future__ import annotations

import json
import random

ITEMS_PER_AXIS = 60
WORDS = [
    "planet", "garden", "harbor", "lantern", "meadow", "pocket", "silver", "thunder", "violet", "window",
    "anchor", "bridge", "candle", "dragon", "falcon", "ginger", "island", "jungle", "kettle", "marble",
]  # fmt: skip
NAMES = [
    "Ada", "Ben", "Cleo", "Dev", "Ema", "Finn", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lia", "Moe", "Nia",
    "Oto", "Pia", "Quin", "Rui", "Sol", "Tea",
]  # fmt: skip
ATTRIBUTES = ["locker number", "house number", "badge number", "room number", "ticket number", "pin code"]


def arithmetic(rng: random.Random, index: int) -> dict[str, object]:
    op = index % 3
    if op == 0:
        a, b = rng.randint(100, 999), rng.randint(100, 999)
        return {"input": f"What is {a} + {b}?", "target": str(a + b)}
    if op == 1:
        a, b = rng.randint(500, 999), rng.randint(10, 499)
        return {"input": f"What is {a} - {b}?", "target": str(a - b)}
    a, b = rng.randint(12, 99), rng.randint(3, 19)
    return {"input": f"What is {a} * {b}?", "target": str(a * b)}


def string_ops(rng: random.Random, index: int) -> dict[str, object]:
    word = rng.choice(WORDS)
    kind = index % 4
    if kind == 0:
        return {"input": f"Reverse the word '{word}'.", "target": word[::-1]}
    if kind == 1:
        return {"input": f"Write the word '{word}' in upper case.", "target": word.upper()}
    if kind == 2:
        letter = rng.choice(sorted(set(word)))
        return {"input": f"How many times does the letter '{letter}' occur in '{word}'?", "target": str(word.count(letter))}
    return {"input": f"Sort the letters of '{word}' alphabetically.", "target": "".join(sorted(word))}


def long_context(rng: random.Random, index: int) -> dict[str, object]:
    facts = []
    for name in rng.sample(NAMES, 12):
        for attribute in rng.sample(ATTRIBUTES, 3):
            facts.append((name, attribute, rng.randint(1000, 9999)))
    rng.shuffle(facts)
    name, attribute, value = facts[rng.randrange(len(facts))]
    passage = " ".join(f"The {a} of {n} is {v}." for n, a, v in facts)
    return {"input": f"{passage}\n\nWhat is the {attribute} of {name}?", "target": str(value)}


def multi_step_item(rng: random.Random, index: int) -> dict[str, object]:
    start = rng.randint(2, 20)
    value = start
    steps = []
    for _ in range(3 + index % 3):
        kind = rng.choice(["add", "subtract", "multiply"])
        amount = rng.randint(2, 9)
        if kind == "multiply" and abs(value) > 200:
            kind = "add"
        if kind == "add":
            value += amount
            steps.append(f"add {amount}")
        elif kind == "subtract":
            value -= amount
            steps.append(f"subtract {amount}")
        else:
            value *= amount
            steps.append(f"multiply by {amount}")
    text = ", then ".join(steps)
    return {"input": f"Start with {start}. First {text}. What number do you get?", "target": str(value)}


def main() -> None:
    rng = random.Random(2026)
    makers = {
        "arithmetic": arithmetic,
        "string_ops": string_ops,
        "long_context": long_context,
        "multi_step": multi_step_item,
    }
    for axis, make in makers.items():
        seen: set[tuple[object, object]] = set()
        for index in range(ITEMS_PER_AXIS):
            item = make(rng, index)
            redraw = 0
            while (item["input"], item["target"]) in seen:
                # an item drawn twice would count twice in the axis's n (and its interval); redrawn from a
                # generator of its own, so that the main stream, and every other item, stays as it was
                redraw += 1
                item = make(random.Random(f"{axis}-{index}-{redraw}"), index)
            seen.add((item["input"], item["target"]))
            record = {"id": f"{axis}-{index:03d}", "axis": axis, **item}
            print(json.dumps(record, ensure_ascii=False))


if __name__ == "__main__":
    main()
