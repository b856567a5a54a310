"""Idiom (imagenet, dcgan): nn.DataParallel(model).cuda() and nn.parallel.data_parallel, on as
many GPUs as there are. `python dataparallel.py cuda|cpu`; prints RESULT."""

import json
import sys

import torch
import torch.nn as nn

cuda = sys.argv[1] == "cuda"
torch.manual_seed(2)
net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
if cuda:
    model = nn.DataParallel(net).cuda()
else:
    model = net
x = torch.randn(6, 4)
y = torch.randn(6, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for _ in range(3):
    loss = nn.functional.mse_loss(model(x.cuda() if cuda else x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
ids = list(range(torch.cuda.device_count())) if cuda else None
out = nn.parallel.data_parallel(net, x, ids) if cuda else net(x)
keys = list(model.state_dict()) if cuda else ["module." + k for k in net.state_dict()]
print("RESULT " + json.dumps({"losses": losses, "out": out.flatten().tolist(), "keys": keys}))
