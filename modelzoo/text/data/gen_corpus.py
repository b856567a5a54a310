#!/usr/bin/env python3
"""Generates corpus.txt, run_gpt's built-in training text: simple English paragraphs from a
fixed grammar (no third-party text, so no license question), seeded so the file is
reproducible: `python3 gen_corpus.py > corpus.txt`."""
import random

rng = random.Random(20240601)
NAMES = ["Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Grace", "Hugo", "Iris", "Jack", "Kira", "Leo"]
ANIMALS = ["cat", "dog", "fox", "owl", "horse", "rabbit", "goat", "duck", "bear", "wolf"]
COLORS = ["red", "blue", "green", "yellow", "brown", "white", "black", "grey"]
PLACES = ["the river", "the old mill", "the market", "the forest", "the hill", "the harbour",
          "the garden", "the library", "the bridge", "the station"]
VERBS = ["walked to", "ran to", "looked at", "painted", "visited", "cleaned", "found", "left"]
TIMES = ["In the morning", "At noon", "In the evening", "Late at night", "On Sunday", "After lunch"]
WEATHER = ["the sun was warm", "the rain was soft", "the wind was cold", "the sky was clear",
           "the fog was thick", "the snow was deep"]
NUM = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
       "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
       "eighteen", "nineteen", "twenty"]


def sentence():
    kind = rng.randrange(6)
    n, a, c, p = rng.choice(NAMES), rng.choice(ANIMALS), rng.choice(COLORS), rng.choice(PLACES)
    if kind == 0:
        return f"{rng.choice(TIMES)}, {n} {rng.choice(VERBS)} {p} with a {c} {a}."
    if kind == 1:
        x, y = rng.randrange(11), rng.randrange(11)
        return f"{NUM[x].capitalize()} plus {NUM[y]} is {NUM[x + y]}."
    if kind == 2:
        return f"The {c} {a} sat near {p} because {rng.choice(WEATHER)}."
    if kind == 3:
        k = rng.randrange(2, 6)
        return f"{n} counted {NUM[k]} {a}s: " + ", ".join(NUM[1:k + 1]) + "."
    if kind == 4:
        m = rng.choice(NAMES)
        return f"{n} asked {m}, \"Where is the {a}?\" and {m} said, \"It is at {p}.\""
    return f"Every {a} likes {p}, but the {c} one likes it most."


paras = []
size = 0
while size < 250_000:
    para = " ".join(sentence() for _ in range(rng.randrange(3, 8)))
    paras.append(para)
    size += len(para) + 2
print("\n\n".join(paras))
