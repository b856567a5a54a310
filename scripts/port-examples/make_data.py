"""Tiny stand-in data for running pytorch/examples scripts, unmodified, under modelzoo port's
CPU baseline shim (scripts/port-examples/run.sh). Never written into the repository: give it a
directory outside it (e.g. /tmp/port-examples).

    .venv/bin/python scripts/port-examples/make_data.py /tmp/port-examples

writes, under that directory:
- data/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte: MNIST in torchvision's raw
  (IDX) format, 640 training and 200 test images of random strokes (mnist, vae read ../data);
- data/wikitext-2/{train,valid,test}.txt: word_language_model's corpus layout, sentences drawn
  from a 300-word vocabulary (about 14,000 / 3,000 / 3,000 tokens);
- imagenet/{train,val}/<class>/*.JPEG: an ImageFolder of 2 classes, 8 + 4 JPEGs each, 64x64.

Seeded: the same bytes every time.
"""

import argparse
import os
import random
import struct
import sys


def idx(path, magic, dims, payload):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(payload)


def mnist(root, rng):
    raw = os.path.join(root, "data", "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for prefix, n in (("train", 640), ("t10k", 200)):
        images = bytearray(n * 28 * 28)
        labels = bytearray(n)
        for i in range(n):
            labels[i] = rng.randrange(10)
            base = i * 784
            # A stroke whose position depends on the label, so a model can learn something.
            row = 4 + 2 * labels[i]
            for c in range(4, 24):
                images[base + row * 28 + c] = 200 + rng.randrange(56)
                images[base + (row + 1) * 28 + c] = rng.randrange(256)
        idx(os.path.join(raw, f"{prefix}-images-idx3-ubyte"), 0x803, (n, 28, 28), bytes(images))
        idx(os.path.join(raw, f"{prefix}-labels-idx1-ubyte"), 0x801, (n,), bytes(labels))


def wikitext(root, rng):
    out = os.path.join(root, "data", "wikitext-2")
    os.makedirs(out, exist_ok=True)
    words = [f"w{i}" for i in range(300)]
    for name, tokens in (("train", 14000), ("valid", 3000), ("test", 3000)):
        lines, n = [], 0
        while n < tokens:
            k = rng.randrange(8, 25)
            lines.append(" " + " ".join(rng.choice(words) for _ in range(k)) + " . ")
            n += k + 2
        with open(os.path.join(out, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def imagenet(root, rng):
    try:
        from PIL import Image
    except ImportError:
        sys.exit("make_data.py: the imagenet folder needs Pillow (pip install pillow; "
                 "torchvision brings it)")
    for split, n in (("train", 8), ("val", 4)):
        for cls, color in (("n01440764", (200, 40, 40)), ("n01443537", (40, 40, 200))):
            d = os.path.join(root, "imagenet", split, cls)
            os.makedirs(d, exist_ok=True)
            for i in range(n):
                img = Image.new("RGB", (64, 64), color)
                px = img.load()
                for _ in range(300):
                    px[rng.randrange(64), rng.randrange(64)] = tuple(rng.randrange(256)
                                                                     for _ in range(3))
                img.save(os.path.join(d, f"{cls}_{i}.JPEG"), quality=90)


def main():
    p = argparse.ArgumentParser(description="Tiny data for pytorch/examples under the shim.")
    p.add_argument("out", help="directory to write into (outside the repository)")
    args = p.parse_args()
    out = os.path.abspath(args.out)
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    if out == repo or out.startswith(repo + os.sep):
        sys.exit(f"make_data.py: {out} is inside the repository; give a directory outside it")
    if os.path.exists(out) and not os.path.isdir(out):
        sys.exit(f"make_data.py: {out} exists and is not a directory")
    rng = random.Random(0)
    mnist(out, rng)
    wikitext(out, rng)
    imagenet(out, rng)
    print(f"tiny MNIST, wikitext-2 and ImageFolder data in {out}")


if __name__ == "__main__":
    main()
