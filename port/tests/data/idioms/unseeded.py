"""A script that seeds nothing, as torchvision's detection reference: its weights, its shuffled
order (a RandomSampler), Python's and numpy's random numbers differ from run to run unless
MODELZOO_PORT_SEED=N in `modelzoo port`'s environment seeds them. `--self-seed N` seeds them
itself, as the shim does, for the test's reference run without the shim. Prints RESULT with the
draws."""

import json
import random
import sys

import numpy as np
import torch

if "--self-seed" in sys.argv:
    seed = int(sys.argv[sys.argv.index("--self-seed") + 1])
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)

weight = torch.nn.Linear(3, 2).weight.detach().flatten().tolist()
order = list(torch.utils.data.RandomSampler(range(8)))
print("RESULT " + json.dumps({"weight": weight, "order": order, "random": random.random(),
                              "numpy": np.random.rand(2).tolist()}))
