import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", type=str, default="tinydet.pth", help="weights")
    parser.add_argument("--dtype", type=str, default="float16")
    opt = parser.parse_args()
    print("export", opt.ckpt)
