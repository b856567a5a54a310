"""Reference numbers for tests/reference.rs: Hugging Face's LlamaForCausalLM (transformers,
the workspace .venv) built from a small LlamaConfig with grouped-query attention — no hub
download — with a fixed seed. Writes, into OUT_DIR:

  weights.safetensors    its state dict (Hugging Face names; lm_head.weight left out when tied,
                         as save_pretrained does)
  reference.safetensors  input_ids [2, 16] (int64), logits [2, 16, vocab] (fp32 forward),
                         greedy [8] (int64): greedy continuation of input_ids[0] recomputing
                         the full sequence each token (no cache)

Usage: python hf_reference.py OUT_DIR CONFIG_JSON   (CONFIG_JSON: LlamaConfig keyword args)
"""

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    out, kwargs = sys.argv[1], json.loads(sys.argv[2])
    torch.manual_seed(1234)
    config = LlamaConfig(**kwargs)
    model = LlamaForCausalLM(config).eval()
    # Larger-than-init weights (and non-unit norm scales) so every term of the forward
    # matters to the logits being compared.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if config.tie_word_embeddings:
        assert torch.equal(state["lm_head.weight"], state["model.embed_tokens.weight"])
        del state["lm_head.weight"]
    save_file(state, os.path.join(out, "weights.safetensors"))
    ids = torch.randint(0, config.vocab_size, (2, 16), dtype=torch.int64)
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
        seq = ids[:1]
        greedy = []
        for _ in range(8):
            nxt = model(input_ids=seq).logits[0, -1].argmax()
            greedy.append(int(nxt))
            seq = torch.cat([seq, nxt.view(1, 1)], dim=1)
    save_file(
        {
            "input_ids": ids,
            "logits": logits.contiguous(),
            "greedy": torch.tensor(greedy, dtype=torch.int64),
        },
        os.path.join(out, "reference.safetensors"),
    )


if __name__ == "__main__":
    main()
