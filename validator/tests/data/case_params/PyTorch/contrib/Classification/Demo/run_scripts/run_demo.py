# Adapted to tecorigin hardware
import os

from argument import parse_args

if __name__ == "__main__":
    args = parse_args()
    os.system(f"python train.py --epoch {args.epoch} --bs {args.batch_size}")
