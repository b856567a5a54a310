from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="ScaledTanhCUDA",
      ext_modules=[CUDAExtension("ScaledTanhCUDA", ["csrc/scaled_tanh.cpp", "csrc/scaled_tanh_kernel.cu"])],
      cmdclass={"build_ext": BuildExtension})
