import argparse


def str2bool(v):
    return str(v).lower() in ("yes", "true", "t", "y", "1")


def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument('--ckpt', type=str, default='./tinydet_dyn_float16.onnx', help='onnx path')
    parser.add_argument('--input_name', type=str, default='input', help='input name')
    parser.add_argument('--data_path', type=str, default='/data/voc', help='images path')
    parser.add_argument('--batch_size', type=int, default=4, help='batch size')
    parser.add_argument('--input_size', type=int, default=320, help='inference size (pixels)')
    parser.add_argument('--target', default='onnx', help='sdaa or cpu')
    parser.add_argument('--dtype', type=str, default='float16', help='float16 or float32')
    parser.add_argument('--verbose', type=str2bool, default=False, help='print each batch')
    return parser.parse_args()


if __name__ == "__main__":
    print(parse_opt())
