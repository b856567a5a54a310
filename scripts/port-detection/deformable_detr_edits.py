"""The edits Deformable-DETR (fundamentalvision/Deformable-DETR at 11169a6) needs to run here,
applied to an extracted tree by scripts/port-detection/deformable-detr.sh; docs/port.md lists
them. Nothing else of its code is changed.

1. util/misc.py: the torchvision < 0.7 compatibility code removed — the edit the vendor's contest
   repository (Tecorigin/Deformable-DETR, README: "util/misc.py | 删除 torchvision < 0.7 兼容代码")
   lists for PyTorch 2.x. `float(torchvision.__version__[:3])` reads torchvision 0.26 as 0.2,
   so as it is the module imports `_NewEmptyTensorOp`, which torchvision no longer has. The
   module-level block is removed and `interpolate` calls `torchvision.ops.misc.interpolate`, the
   branch torchvision >= 0.7 always took.
2. models/backbone.py: `pretrained=is_main_process()` -> `pretrained=False`: the ResNet-50
   backbone's ImageNet weights are downloaded from the network, which this machine has not.
   (The vendor's other PyTorch 2.x edits are to the CUDA sources and setup.py of
   models/ops, which are not built here: `modelzoo port --op` routes the op instead.)

    python deformable_detr_edits.py TREE

Exits 1 naming the file when the tree is not the expected commit (an anchor is missing), so an
edit never silently does nothing. Running it twice is an error too: extract a fresh tree.
"""

import os
import re
import sys


def edit(path, fn):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = fn(text)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)


def fail(path, what):
    print(f"deformable_detr_edits: {path}: {what} not found: is this Deformable-DETR at 11169a6, "
          "freshly extracted?", file=sys.stderr)
    sys.exit(1)


def misc(path):
    def fn(text):
        # The module-level block: from the < 0.5 test to the end of the < 0.7 branch's imports.
        block = re.compile(
            r"^if float\(torchvision\.__version__\[:3\]\) < 0\.5:\n.*?"
            r"^elif float\(torchvision\.__version__\[:3\]\) < 0\.7:\n(?:    [^\n]*\n)+",
            re.S | re.M)
        text, n = block.subn("", text, count=1)
        if n != 1:
            fail(path, "the module-level torchvision < 0.5 / < 0.7 block")
        # interpolate(): keep only the >= 0.7 branch.
        body = re.compile(
            r"^    if float\(torchvision\.__version__\[:3\]\) < 0\.7:\n.*?^    else:\n"
            r"^        (return torchvision\.ops\.misc\.interpolate\([^\n]*\))\n",
            re.S | re.M)
        text, n = body.subn(r"    \1\n", text, count=1)
        if n != 1:
            fail(path, "interpolate()'s torchvision < 0.7 branch")
        return text
    edit(path, fn)


def backbone(path):
    def fn(text):
        old = "pretrained=is_main_process(), norm_layer=norm_layer)"
        if text.count(old) != 1:
            fail(path, f"{old!r}")
        return text.replace(old, "pretrained=False, norm_layer=norm_layer)")
    edit(path, fn)


def main(argv):
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: deformable_detr_edits.py TREE (an extracted Deformable-DETR tree)",
              file=sys.stderr)
        return 2
    tree = argv[0]
    misc(os.path.join(tree, "util", "misc.py"))
    backbone(os.path.join(tree, "models", "backbone.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
