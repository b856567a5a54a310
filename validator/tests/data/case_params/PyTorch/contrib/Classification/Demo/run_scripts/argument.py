# Adapted to tecorigin hardware
import argparse


def parse_args():
    parser = argparse.ArgumentParser(description="Demo training on SDAA")
    parser.add_argument("--model_name", default="demo", type=str, help="the model")
    parser.add_argument("--epoch", default=1, type=int, help="epochs")
    parser.add_argument("--step", default=-1, type=int, help="steps, -1 for all")
    parser.add_argument("--batch_size", "--bs", default=32, type=int, help="per card")
    parser.add_argument("--dataset_path", default="/data/datasets/cifar10", type=str)
    parser.add_argument("--nnode", default=1, type=int, help="nodes")
    parser.add_argument("--node_rank", default=0, type=int, help="this node")
    parser.add_argument("--nproc_per_node", default=1, type=int, help="cards per node")
    parser.add_argument("--device", default="sdaa", type=str, help="sdaa or cpu")
    parser.add_argument("--autocast", default=True, type=bool, help="AMP")
    parser.add_argument("--learning-rate", default=0.1, type=float, help="lr")
    parser.add_argument("--warmup_epochs", default=0, type=int, help="warmup")
    return parser.parse_args()
