//! ResNet (torchvision-compatible architectures) as a ModelZoo standard case.
