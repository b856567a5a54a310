import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension, BuildExtension


def get_extensions():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src")
    sources = glob.glob(os.path.join(here, "*.cpp")) + glob.glob(os.path.join(here, "cpu", "*.cpp"))
    extension = CppExtension
    if torch.cuda.is_available() and CUDA_HOME is not None:
        extension = CUDAExtension
        sources += glob.glob(os.path.join(here, "cuda", "*.cu"))
    return [extension(
        "SamplingAttention",
        sources,
        include_dirs=[here],
        define_macros=[("WITH_CUDA", None)],
    )]


setup(name="SamplingAttention", ext_modules=get_extensions(), cmdclass={"build_ext": BuildExtension})
