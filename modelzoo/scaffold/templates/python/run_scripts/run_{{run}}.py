"""run_{{run}}.py: the uniform ModelZoo command for {{title}}.

Parses the standard arguments (argument.py), turns them into the training command — torchrun
for several processes or nodes, this Python otherwise — prints it formatted (formate_cmd.py)
and runs it. `--print_cmd` prints it without running.
"""
import os
import shlex
import subprocess
import sys

from argument import parse_args
from formate_cmd import format_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
# The model's training script, relative to this directory.
TRAIN_SCRIPT = os.path.join(HERE, {{train_script}})
# The standard arguments the training script takes, and its flag for each (read from its
# argparse calls when the model was scaffolded; a standard argument it does not declare is not
# passed on, so its parser never sees a flag it would reject).
FORWARD = {{forward}}


def build_cmd(args):
    if args.nproc_per_node > 1 or args.nnode > 1:
        launcher = [
            "torchrun",
            "--nproc_per_node", str(args.nproc_per_node),
            "--nnodes", str(args.nnode),
            "--node_rank", str(args.node_rank),
            "--master_addr", args.master_addr,
            "--master_port", str(args.master_port),
        ]
    else:
        launcher = [sys.executable]
    words = launcher + [os.path.normpath(TRAIN_SCRIPT)]
    for name, flag in FORWARD.items():
        value = getattr(args, name)
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return words


def main(argv=None):
    args = parse_args(argv)
    words = build_cmd(args)
    print(format_cmd(" ".join(shlex.quote(w) for w in words)), flush=True)
    if args.print_cmd:
        return 0
    return subprocess.call(words)


if __name__ == "__main__":
    sys.exit(main())
