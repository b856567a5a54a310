"""run_{{name}}.py: the uniform ModelZoo command for {{title}}.

Parses the standard arguments (argument.py), turns them into the training command, prints it
formatted (formate_cmd.py) and runs it. `--print_cmd` prints it without running.
"""
import os
import shlex
import sys

from argument import parse_args
from formate_cmd import format_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
# TODO: the model's training entry point, relative to this directory.
TRAIN_SCRIPT = os.path.join(HERE, "..", "train.py")
# Arguments consumed by the launcher itself, not passed to the training script.
LAUNCHER_ARGS = {"nproc_per_node", "nnode", "node_rank", "master_addr", "master_port", "print_cmd"}


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
    for name, value in vars(args).items():
        if name in LAUNCHER_ARGS or value is None or value is False:
            continue
        if value is True:
            words.append(f"--{name}")
        elif isinstance(value, list):
            for item in value:
                words += [f"--{name}", str(item)]
        else:
            words += [f"--{name}", str(value)]
    return " ".join(shlex.quote(w) for w in words)


def main(argv=None):
    args = parse_args(argv)
    cmd = build_cmd(args)
    print(format_cmd(cmd), flush=True)
    if args.print_cmd:
        return 0
    status = os.system(cmd)
    return os.waitstatus_to_exitcode(status) if status else 0


if __name__ == "__main__":
    sys.exit(main())
