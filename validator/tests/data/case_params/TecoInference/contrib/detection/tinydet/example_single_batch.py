import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--ckpt', type=str, default='./tinydet_dyn_float16.onnx')
    parser.add_argument('--batch_size', type=int, default=1)
    parser.add_argument('--data_path', type=str, default='./images/cat.jpg')
    parser.add_argument('--target', default='onnx')
    parser.add_argument('--dtype', type=str, default='float16')
    parser.add_argument('--conf-thres', type=float, default=0.25)
    print(parser.parse_args())
