"""run_{{run}}.py: the uniform ModelZoo command for {{title}}.

Parses the standard arguments (argument.py), turns them into the training command — torchrun
for several processes or nodes, this Python otherwise — prints it formatted (formate_cmd.py)
and runs it. `--print_cmd` prints it without running.

The training script runs in the model directory, whatever directory this launcher is started
from: the way `modelzoo port` ran and verified it, and the way the ModelZoo's check runs a case
(`cd <run_dir> && python run_scripts/run_{{run}}.py ...`), so its relative paths (`./data`,
`../data`) mean the same in all three. Only the arguments given here are passed on; for
everything else the training script's own defaults stand.
"""
import os
import shlex
import subprocess
import sys

from argument import parse_args
from formate_cmd import format_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
# The model directory: the training script runs there.
MODEL_DIR = os.path.dirname(HERE)
# The model's training script, relative to the model directory.
TRAIN_SCRIPT = {{train_script}}
# The standard arguments the training script takes, and its flag for each (read from its
# argparse calls when the model was scaffolded; a standard argument it does not declare is not
# passed on, so its parser never sees a flag it would reject).
FORWARD = {{forward}}
# The standard arguments that are paths: a relative one is taken from the directory this
# launcher was started in, so it means the same once the script runs in MODEL_DIR.
PATHS = {{path_args}}


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
    words = launcher + [TRAIN_SCRIPT]
    for name, flag in FORWARD.items():
        value = getattr(args, name)
        # Not given (argument.py gives these no default): the script's own default stands.
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        elif name in PATHS:
            words += [flag, os.path.abspath(str(value))]
        else:
            words += [flag, str(value)]
    return words


def main(argv=None):
    args = parse_args(argv)
    words = build_cmd(args)
    line = " ".join(shlex.quote(w) for w in words)
    print(f"cd {shlex.quote(MODEL_DIR)} && {format_cmd(line)}", flush=True)
    if args.print_cmd:
        return 0
    return subprocess.call(words, cwd=MODEL_DIR)


if __name__ == "__main__":
    sys.exit(main())
