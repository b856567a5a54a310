"""Generate an ImageNet-like folder of real JPEG files for the loader benchmark (issue #26)
and the transform-equivalence tests: never committed, made once into a temp dir or target/.

  python loader_images.py OUT_DIR [--files N] [--classes C] [--val N] [--seed S]
                                  [--min-side PX] [--max-side PX] [--jobs J]

Layout: OUT_DIR/train/<class>/*.JPEG and OUT_DIR/val/<class>/*.JPEG (--files over train,
--val over val, both spread over --classes classes), plus OUT_DIR/READY (written last: a folder
without it was cut short and is made again).

Content is natural-looking rather than white noise: a 1/f^beta random field (the spectrum of
photographs) for the luminance and two weaker, smoother chroma fields, a few soft-edged shapes
(objects with edges), and a little sensor grain; sizes are mixed around 500x375 (landscape,
portrait and square, as ImageNet's), quality 85-95, 4:2:0 chroma subsampling (PIL's default,
as most camera JPEGs). Deterministic for a seed, whatever --jobs (processes, default all CPUs):
each image is drawn from its own generator, seeded in order from the folder's. Prints one JSON
line with the counts, mean size and mean bytes.
"""

import argparse
import json
import multiprocessing
import os
import sys

import numpy as np
from PIL import Image

# (width, height) shapes around ImageNet's typical 500x375, with weights.
SHAPES = [((500, 375), 5), ((500, 333), 3), ((375, 500), 2), ((333, 500), 1), ((500, 500), 1),
          ((640, 480), 1), ((400, 300), 1)]


def field(rng, h, w, beta):
    """A random field with power spectrum 1/f^beta, scaled to zero mean and unit std."""
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    f = np.sqrt(fx * fx + fy * fy)
    f[0, 0] = 1.0
    amp = f ** (-beta / 2.0)
    amp[0, 0] = 0.0
    spec = amp * (rng.standard_normal(amp.shape) + 1j * rng.standard_normal(amp.shape))
    out = np.fft.irfft2(spec, s=(h, w))
    return (out - out.mean()) / (out.std() + 1e-12)


def image(rng, w, h):
    lum = field(rng, h, w, rng.uniform(1.8, 2.4))
    detail = field(rng, h, w, rng.uniform(1.0, 1.4))  # texture: foliage, fabric, gravel
    c1 = field(rng, h, w, rng.uniform(2.4, 3.0))
    c2 = field(rng, h, w, rng.uniform(2.4, 3.0))
    y = 0.5 + 0.18 * lum + rng.uniform(0.03, 0.08) * detail
    # Soft-edged shapes (objects): ellipses with their own brightness and colour.
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    tint = np.zeros((h, w, 2), np.float32)
    for _ in range(rng.integers(2, 7)):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rx, ry = rng.uniform(0.05, 0.35) * w, rng.uniform(0.05, 0.35) * h
        d = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2
        m = 1.0 / (1.0 + np.exp(np.minimum((d - 1.0) * rng.uniform(8, 40), 50.0)))  # soft edge
        y = y * (1 - m) + m * (rng.uniform(0.15, 0.85) + 0.12 * detail)
        tint += m[..., None] * rng.uniform(-0.15, 0.15, size=2).astype(np.float32)
    cb = 0.08 * c1 + tint[..., 0] + rng.uniform(-0.08, 0.08)
    cr = 0.08 * c2 + tint[..., 1] + rng.uniform(-0.08, 0.08)
    r = y + 1.402 * cr
    g = y - 0.344 * cb - 0.714 * cr
    b = y + 1.772 * cb
    rgb = np.stack([r, g, b], axis=-1) + rng.normal(0, 0.01, size=(h, w, 3))  # grain
    return Image.fromarray((np.clip(rgb, 0, 1) * 255 + 0.5).astype(np.uint8), "RGB")


def write(task):
    """Draw and save one image; returns (bytes, pixels)."""
    path, w, h, seed, quality = task
    image(np.random.default_rng(seed), w, h).save(path, "JPEG", quality=quality)
    return os.path.getsize(path), w * h


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--files", type=int, default=2000, help="training images")
    p.add_argument("--val", type=int, default=None, help="validation images (default files/4)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-side", type=int, default=0, help="scale shapes so the short side is at least this")
    p.add_argument("--max-side", type=int, default=0, help="scale shapes so the long side is at most this")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes drawing images")
    a = p.parse_args()
    if a.files < 1 or a.classes < 1:
        sys.exit("loader_images: --files and --classes must be at least 1")
    n_val = a.files // 4 if a.val is None else a.val
    ready = os.path.join(a.out, "READY")
    # "scheme" 2: one generator per image (1 drew every image from the folder's generator).
    want = {"scheme": 2, "files": a.files, "val": n_val, "classes": a.classes, "seed": a.seed,
            "min_side": a.min_side, "max_side": a.max_side}
    if os.path.exists(ready):
        with open(ready) as f:
            have = json.load(f)
        if have.get("params") == want:
            print(json.dumps(have))
            return
    rng = np.random.default_rng(a.seed)
    shapes = [s for s, _ in SHAPES]
    weights = np.array([wt for _, wt in SHAPES], float)
    weights /= weights.sum()
    tasks = []
    for split, n in (("train", a.files), ("val", n_val)):
        for c in range(a.classes):
            os.makedirs(os.path.join(a.out, split, f"c{c:03d}"), exist_ok=True)
        for i in range(n):
            w, h = shapes[rng.choice(len(shapes), p=weights)]
            # Jitter the size a little, as real photos are cropped and resized.
            s = rng.uniform(0.9, 1.1)
            if a.min_side:
                s = max(s, a.min_side / min(w, h))
            if a.max_side:
                s = min(s, a.max_side / max(w, h))
            w, h = max(1, int(w * s)), max(1, int(h * s))
            path = os.path.join(a.out, split, f"c{i % a.classes:03d}", f"{split}_{i:06d}.JPEG")
            tasks.append((path, w, h, int(rng.integers(2**63)), int(rng.integers(85, 96))))
    with multiprocessing.Pool(max(1, a.jobs)) as pool:
        sizes = pool.map(write, tasks, chunksize=8)
    total_bytes = sum(b for b, _ in sizes)
    total_px = sum(px for _, px in sizes)
    n_all = a.files + n_val
    info = {"params": want, "images": n_all, "mean_pixels": total_px // max(n_all, 1),
            "mean_bytes": total_bytes // max(n_all, 1)}
    with open(ready, "w") as f:
        json.dump(info, f)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
