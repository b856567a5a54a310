"""One training step (forward, backward, SGD) of a tiny conv+linear net under
modelzoo_probe.dump: the fixture of the probe's tests and `modelzoo diff`'s end-to-end test.

    python tiny_step.py DIR [--tensors stats|full] [--level op|module|mix] [--perturb-conv2]
                            [--dtype float32|float64] [--device cpu|sdaa]

--perturb-conv2 adds noise as large as the weight itself to conv2's weight before the step:
the first divergence is then aten::convolution call 1, its weight (input 1).
--device sdaa runs the step on the SDAA emulator ($SDAA_HOME, built by `make build`), where
SDAA_EMU_PERTURB can make one op call compute wrong (docs/devices.md).
"""

import argparse
import ctypes
import faulthandler
import os
import types

import torch

import modelzoo_probe


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3)
        self.conv2 = torch.nn.Conv2d(4, 4, 3)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def use_sdaa_emulator():
    """Load the emulator's torch plugin (device `sdaa`) and the minimal torch.sdaa module
    autograd and the optimizers look up for a device type."""
    home = os.environ["SDAA_HOME"]
    ctypes.CDLL(os.path.join(home, "lib64", "libsdaart.so"), mode=ctypes.RTLD_GLOBAL)
    torch.ops.load_library(os.path.join(home, "lib64", "libtorch_sdaa.so"))
    sdaa = types.ModuleType("sdaa")
    sdaa.is_available = lambda: True
    sdaa.device_count = lambda: 1
    sdaa.current_device = lambda: 0
    sdaa._is_in_bad_fork = lambda: False
    sdaa.manual_seed_all = lambda seed: None
    sdaa.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]
    sdaa.is_autocast_enabled = lambda: False
    torch._register_device_module("sdaa", sdaa)


def build(dtype=torch.float32, perturb_conv2=False):
    torch.manual_seed(0)
    net = Tiny().to(dtype)
    # Drawn in float32 and cast, so an fp64 run (the reference) sees the same numbers.
    x = torch.randn(2, 1, 8, 8).to(dtype)
    y = torch.tensor([0, 2])
    if perturb_conv2:
        with torch.no_grad():
            w = net.conv2.weight
            noise = torch.randn(w.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
            w.add_(noise * w.std())
    return net, x, y


def step(net, x, y):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--tensors", default="full")
    p.add_argument("--level", default="op")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--perturb-conv2", action="store_true")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    faulthandler.enable()  # an abort names the Python frame it happened under
    net, x, y = build(getattr(torch, a.dtype), a.perturb_conv2)
    if a.device != "cpu":
        use_sdaa_emulator()
        net, x, y = net.to(a.device), x.to(a.device), y.to(a.device)
    with modelzoo_probe.dump(a.dir, model=net, step=1, level=a.level, tensors=a.tensors):
        step(net, x, y)


if __name__ == "__main__":
    main()
