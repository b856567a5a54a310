#!/usr/bin/env python3
"""PyTorch eager reference for modelzoo/gpt/benches/train_step.rs: the same pre-LN GPT-2
(learned positions, sdpa with is_causal, tanh GELU, tied embeddings, GPT-2 init), the same
shapes, fp32, forward + backward + AdamW per step on CPU. Usage: gpt_step.py tiny|124m"""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = {
    # vocab, hidden, layers, heads, positions, batch, seq, steps (as the Rust bench)
    "tiny": (320, 128, 2, 4, 128, 16, 64, 30),
    "124m": (50304, 768, 12, 12, 1024, 1, 128, 3),
}


class Block(nn.Module):
    def __init__(self, h, heads, std, resid_std):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(h)
        self.c_attn = nn.Linear(h, 3 * h)
        self.attn_proj = nn.Linear(h, h)
        self.ln_2 = nn.LayerNorm(h)
        self.c_fc = nn.Linear(h, 4 * h)
        self.mlp_proj = nn.Linear(4 * h, h)
        for lin, s in [(self.c_attn, std), (self.attn_proj, resid_std), (self.c_fc, std), (self.mlp_proj, resid_std)]:
            nn.init.normal_(lin.weight, 0.0, s)
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, h))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, h, layers, heads, positions):
        super().__init__()
        std, resid_std = 0.02, 0.02 / math.sqrt(2 * layers)
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(positions, h)
        nn.init.normal_(self.wte.weight, 0.0, std)
        nn.init.normal_(self.wpe.weight, 0.0, std)
        self.h = nn.ModuleList(Block(h, heads, std, resid_std) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    vocab, h, layers, heads, positions, batch, seq, steps = CASES[which]
    torch.manual_seed(0)
    model = GPT(vocab, h, layers, heads, positions)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(vocab, (batch, seq + 1))
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, vocab).float(), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    secs = time.perf_counter() - start
    tokens = batch * seq * steps
    print(f"pytorch   {which:5} batch {batch} seq {seq} steps {steps}: {tokens / secs:.1f} tokens/s "
          f"({secs / steps:.3f} s/step, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
