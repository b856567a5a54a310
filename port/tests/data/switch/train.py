"""A training script that picks its device the common way,
`device = "cuda" if torch.cuda.is_available() else "cpu"`, and logs with tcap_dllogger as
ModelZoo scripts do (train.loss per step). `modelzoo port`'s tests port and run it.

    python train.py [--steps N] [--log FILE]
"""
import argparse

import torch
import torch.nn as nn
from tcap_dllogger import JSONStreamBackend, Logger, StdOutBackend, Verbosity


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--log", default="dlloger.json")
    a = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log = Logger([StdOutBackend(Verbosity.DEFAULT), JSONStreamBackend(Verbosity.VERBOSE, a.log)])
    log.metadata("train.loss", {"unit": "", "GOAL": "MINIMIZE", "STAGE": "TRAIN"})

    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, 4)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(a.steps):
        x = torch.randn(64, 32, device=device)
        y = (x[:, :4] > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.log(step=(0, step), data={"train.loss": loss.item()}, verbosity=Verbosity.DEFAULT)
    log.flush()


if __name__ == "__main__":
    main()
