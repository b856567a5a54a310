"""Reference for modelzoo/vit/tests/reference.rs: torchvision's ViT with a fixed seed, its state
dict as safetensors, an input batch and torchvision's fp32 logits for it.

  vit_reference.py OUT_DIR [--model vit_b_16|vit_b_32|vit_l_16|vit_tiny] [--image_size 224] [--num_classes 1000]
                           [--batch 2] [--seed 0]

Writes OUT_DIR/weights.safetensors (model.state_dict(), torchvision's names) and
OUT_DIR/io.safetensors ({"input": (batch, 3, size, size), "logits": (batch, num_classes)}), and
prints one JSON line with the model's parameter count.

torchvision starts some parameters at constants (heads.head and every bias at 0, class_token 0,
LayerNorm weights 1): logits from those would test little (a zero head gives zero logits). So
after construction every parameter gets N(0, 0.02) noise added, making each tensor matter to
the output; the Rust side must then load all of them by name to agree.
"""

import argparse
import json
import os

import torch
import torchvision
from safetensors.torch import save_file


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--model", default="vit_b_16")
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--num_classes", type=int, default=1000)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if a.model == "vit_tiny":
        # run_vit's test size (not a torchvision builder): torchvision's class, these sizes.
        model = torchvision.models.vision_transformer.VisionTransformer(
            image_size=a.image_size, patch_size=8, num_layers=2, num_heads=2,
            hidden_dim=64, mlp_dim=128, num_classes=a.num_classes,
        )
    else:
        model = getattr(torchvision.models, a.model)(
            image_size=a.image_size, num_classes=a.num_classes
        )
    with torch.no_grad():
        for q in model.parameters():
            q.add_(torch.randn_like(q) * 0.02)
    model.eval()
    x = torch.randn(a.batch, 3, a.image_size, a.image_size)
    with torch.no_grad():
        logits = model(x)
    os.makedirs(a.out_dir, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(a.out_dir, "weights.safetensors"))
    save_file({"input": x, "logits": logits}, os.path.join(a.out_dir, "io.safetensors"))
    print(json.dumps({
        "model": a.model,
        "parameters": sum(q.numel() for q in model.parameters()),
        "tensors": len(state),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }))


if __name__ == "__main__":
    main()
