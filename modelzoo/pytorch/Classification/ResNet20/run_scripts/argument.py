"""Every argument of run_resnet20.py, in one place: the ModelZoo standard arguments
(run_scripts-template/spec/standard.yaml, without the kit's own), then the model's own — add
those at the end of `build_parser`.
"""
import argparse


def str2bool(v):
    """A switch that also takes a value: `--autocast`, `--autocast True`, `--autocast false`
    (the ModelZoo's PR check passes one)."""
    if isinstance(v, bool):
        return v
    if v.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if v.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {v!r}")


def build_parser():
    parser = argparse.ArgumentParser(description="ResNet20: the uniform ModelZoo launcher")
    parser.add_argument("--model_name", dest="model_name", type=str, help="Model variant to run (e.g. resnet50).")
    parser.add_argument("--epoch", "--epochs", dest="epoch", type=int, default=1, help="Number of training epochs.")
    parser.add_argument("--step", "--steps", dest="step", type=int, default=-1, help="Stop after this many training iterations (short functional runs); -1 runs every epoch in full.")
    parser.add_argument("--batch_size", "--bs", dest="batch_size", type=int, default=32, help="Per-process batch size (global batch = batch_size x world size).")
    parser.add_argument("--dataset_path", dest="dataset_path", type=str, help="Dataset root; the model's embedded synthetic data is used when absent.")
    parser.add_argument("--lr", dest="lr", type=float, default=0.1, help="Base learning rate.")
    parser.add_argument("--device", dest="device", type=str, default="cpu", help="Device to train on: cpu, cuda, cuda:N, sdaa, sdaa:N.")
    parser.add_argument("--autocast", "--amp", dest="autocast", type=str2bool, nargs="?", const=True, default=False, help="Train with automatic mixed precision (fp16 on cuda/sdaa, bf16 on cpu).")
    parser.add_argument("--num_workers", dest="num_workers", type=int, default=2, help="Data-loading worker threads.")
    parser.add_argument("--seed", dest="seed", type=int, default=42, help="Random seed (data order, augmentation, initialisation).")
    parser.add_argument("--nproc_per_node", dest="nproc_per_node", type=int, default=1, help="Worker processes to start on this node (DDP).")
    parser.add_argument("--nnode", "--nnodes", dest="nnode", type=int, default=1, help="Number of nodes taking part (multi-node DDP).")
    parser.add_argument("--node_rank", dest="node_rank", type=int, default=0, help="Rank of this node among the nodes (0-based).")
    parser.add_argument("--master_addr", dest="master_addr", type=str, default="127.0.0.1", help="Address of the rank-0 node's rendezvous store.")
    parser.add_argument("--master_port", dest="master_port", type=int, default=29500, help="Port of the rank-0 node's rendezvous store.")
    parser.add_argument("--output_dir", dest="output_dir", type=str, default="./output", help="Where logs, checkpoints and reports are written.")
    parser.add_argument("--print_cmd", dest="print_cmd", type=str2bool, nargs="?", const=True, default=False, help="Print the fully resolved launch command and exit.")
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)
