#!/usr/bin/env python3
"""PyTorch eager reference for scripts/bench/bert_bench.sh: the BERT pretraining run
`run_bert --task pretrain` does, with Hugging Face's transformers.BertForPreTraining in plain
PyTorch on the same torch.

The network: BertForPreTraining from a BertConfig of the same shape as run_bert's
--model_name (bert_tiny L=2 H=128 A=2, bert_base, bert_large; intermediate 4H, 512 positions,
2 token types, erf GELU, dropout 0.1 as run_bert's default), the given vocabulary size, sdpa
attention (modelzoo/bert/tests/reference.rs checks run_bert computes the same logits). It is
called as transformers documents it: `model(input_ids, token_type_ids, attention_mask,
labels, next_sentence_label)` — the masked-LM head runs on every position and the loss ignores
the unmasked ones (label -100); run_bert runs the head on the masked rows only (as NVIDIA's
BERT does), which is part of what this benchmark measures.

The recipe is run_bert's: LAMB as apex FusedLAMB computes it (bias-corrected Adam moments,
update + λ·p, per-tensor trust ratio ‖p‖/‖update‖ for parameters with weight decay, 1 for
biases and LayerNorm), written with torch._foreach ops (apex's fused kernel is CUDA-only);
the polynomial warm-up/decay schedule; clip_grad_norm_(1.0); fp32 cross entropy. Batches:
sentence pairs filling the sequence (segment A the first half, B the rest), 15% of the tokens
masked (at most ceil(0.15 x seq)) 80/10/10, random next-sentence labels — random ids of the
built-in vocabulary, made each step on the training thread (run_bert builds its batches in the
loop too; the values do not change the work).

Each step is timed like modelzoo-engine's train.ips window with logging_freq 1: from the end of
the previous step to after the loss is read; tokens = batch x seq.

  bert_eager.py --model bert_tiny|bert_base|bert_large --vocab V --batch B --seq S
                --steps N --skip W [--amp bf16] [--device cpu|cuda] [--lr 1e-3]
      prints `pytorch tokens/s X (median step M, best step B)`, X = total tokens / total time
      over steps W+1..N (the same figure `lm_e2e.py log` gives for run_bert's JSON log)
"""
import argparse
import math
import sys
import time

SHAPES = {"bert_tiny": (128, 2, 2), "bert_base": (768, 12, 12), "bert_large": (1024, 24, 16)}
BUILTIN_VOCAB = 336  # modelzoo/bert/data/tokenizer.json: ids 5.. are words
CLS, SEP, MASK = 2, 3, 4


def summary(rates):
    """`X (median M, best B)` as scripts/bench/lm_e2e.py prints it."""
    s = sorted(rates)
    mid = len(s) // 2
    median = s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])
    total = len(rates) / sum(1.0 / r for r in rates)
    return f"{total:.2f} (median step {median:.2f}, best step {s[-1]:.2f})"


def lamb_step(torch, params, decays, states, lr, step, beta1=0.9, beta2=0.999, eps=1e-6, wd=0.01):
    """One apex-FusedLAMB update (adam_w_mode, bias correction, grad averaging)."""
    ps = [p for p in params if p.grad is not None]
    gs = [p.grad for p in ps]
    ms = [states[p][0] for p in ps]
    vs = [states[p][1] for p in ps]
    torch._foreach_lerp_(ms, gs, 1.0 - beta1)
    torch._foreach_mul_(vs, beta2)
    torch._foreach_addcmul_(vs, gs, gs, value=1.0 - beta2)
    bc1, bc2 = 1.0 - beta1**step, 1.0 - beta2**step
    denom = torch._foreach_div(vs, bc2)
    torch._foreach_sqrt_(denom)
    torch._foreach_add_(denom, eps)
    upd = torch._foreach_div(ms, bc1)
    torch._foreach_div_(upd, denom)
    decayed = [i for i, p in enumerate(ps) if decays[p]]
    if decayed and wd:
        torch._foreach_add_([upd[i] for i in decayed], [ps[i] for i in decayed], alpha=wd)
        wn = torch._foreach_norm([ps[i] for i in decayed])
        un = torch._foreach_norm([upd[i] for i in decayed])
        for k, i in enumerate(decayed):
            ok = (wn[k] > 0) & (un[k] > 0)
            upd[i].mul_(torch.where(ok, wn[k] / un[k], torch.ones_like(wn[k])))
    torch._foreach_add_(ps, upd, alpha=-lr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", choices=sorted(SHAPES), required=True)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--skip", type=int, required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--device", default="cpu")
    # bf16 autocast only: LAMB here has no fp16 loss scaling (the CPU's AMP is bf16 anyway).
    ap.add_argument("--amp", choices=["bf16"])
    a = ap.parse_args()
    if a.skip >= a.steps:
        sys.exit("error: --skip must be below --steps")
    if a.vocab < BUILTIN_VOCAB:
        sys.exit(f"error: --vocab {a.vocab} is below the built-in vocabulary's {BUILTIN_VOCAB}")

    import torch
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    h, layers, heads = SHAPES[a.model]
    config = BertConfig(
        vocab_size=a.vocab,
        hidden_size=h,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * h,
        max_position_embeddings=512,
        type_vocab_size=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    config._attn_implementation = "sdpa"
    net = BertForPreTraining(config).to(dev)
    net.train()
    amp_dtype = torch.bfloat16 if a.amp == "bf16" else None
    params = [p for p in net.parameters() if p.requires_grad]
    decays = {p: p.dim() > 1 for p in params}
    states = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in params}
    total, warmup = a.steps, math.ceil(0.01 * a.steps)

    def lr_at(step):  # modelzoo-engine's Schedule::PolyWarmup, degree 1
        k = step + 1
        if k < warmup:
            return a.lr * k / warmup
        return a.lr * (1.0 - min(k / total, 1.0))

    b, s = a.batch, a.seq
    n_pred = math.ceil(0.15 * s)
    gen = torch.Generator().manual_seed(a.seed)
    half = (s - 3) // 2

    def batch():
        ids = torch.randint(5, BUILTIN_VOCAB, (b, s), generator=gen)
        ids[:, 0] = CLS
        ids[:, half + 1] = SEP
        ids[:, -1] = SEP
        types = torch.zeros(b, s, dtype=torch.int64)
        types[:, half + 2 :] = 1
        mask = torch.ones(b, s, dtype=torch.int64)
        labels = torch.full((b, s), -100, dtype=torch.int64)
        cand = torch.ones(b, s)
        cand[:, [0, half + 1, s - 1]] = 0
        pos = torch.multinomial(cand, n_pred, generator=gen)
        rows = torch.arange(b).unsqueeze(1).expand_as(pos)
        labels[rows, pos] = ids[rows, pos]
        r = torch.rand(b, n_pred, generator=gen)
        new = ids[rows, pos].clone()
        new[r < 0.8] = MASK
        rnd = r >= 0.9
        new[rnd] = torch.randint(0, BUILTIN_VOCAB, (int(rnd.sum()),), generator=gen)
        ids[rows, pos] = new
        nsp = torch.randint(0, 2, (b,), generator=gen)
        return [t.to(dev) for t in (ids, types, mask, labels, nsp)]

    step_secs, losses = [], []
    start = time.perf_counter()
    for step in range(a.steps):
        ids, types, mask, labels, nsp = batch()
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            out = net(
                input_ids=ids,
                token_type_ids=types,
                attention_mask=mask,
                labels=labels,
                next_sentence_label=nsp,
            )
        loss = out.loss.float()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        with torch.no_grad():
            lamb_step(torch, params, decays, states, lr_at(step), step + 1)
        for p in params:
            p.grad = None
        losses.append(loss.item())
        end = time.perf_counter()
        step_secs.append(end - start)
        start = end
    if not all(math.isfinite(v) for v in losses):
        sys.exit(f"error: non-finite loss {losses}")
    rate = summary([b * s / t for t in step_secs[a.skip :]])
    print(
        f"pytorch tokens/s {rate} [BertForPreTraining {a.model} vocab {a.vocab}, steps "
        f"{a.skip + 1}..{a.steps}, {torch.get_num_threads()} threads, "
        f"loss {losses[0]:.3f} -> {losses[-1]:.3f}]"
    )


if __name__ == "__main__":
    main()
