// libmodelzoo_nccl.so: c10d's ProcessGroupNCCL for device-sdaa's CUDA data parallel (see
// src/nccl.rs). A shared library of its own, built with -DUSE_C10D_NCCL against the wheel's
// CUDA and NCCL headers and linked against libtorch_cuda, so that the binaries, which link
// only libtorch_cpu, load it — and with it everything CUDA — only when a CUDA data-parallel
// job asks for it, after device_sdaa::cuda::load() brought libtorch_cuda into the process.
//
// Same conventions as dist.cpp: null or a malloc'ed error string, no exception into Rust.
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <chrono>
#include <cstdint>

#include "handles.h"
#include "protect.h"

extern "C" {

// A process group over ProcessGroupNCCL for the CUDA tensors of ranks 0..size, rendezvousing
// through the store `s` (a dist.cpp handle); this rank works on CUDA device `device_index`
// (made the calling thread's current device). `timeout_ms` bounds each collective (NCCL's
// watchdog). The group is freed with dist.cpp's mzd_group_free. Fails with a message, never
// crashes, when no CUDA device is visible.
char* mzd_nccl_group_new(MzdStore* s, int rank, int size, int64_t timeout_ms, int device_index,
                         MzdGroup** out) {
  MZD_PROTECT({
    int devices = static_cast<int>(c10::cuda::device_count());
    TORCH_CHECK(devices > 0,
                "no CUDA GPU is visible (no NVIDIA GPU or driver on this machine, or "
                "CUDA_VISIBLE_DEVICES hides them): ProcessGroupNCCL needs one per rank");
    TORCH_CHECK(device_index >= 0 && device_index < devices, "CUDA device ", device_index,
                " does not exist: this machine has ", devices, " visible CUDA device(s)");
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_index));
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = std::chrono::milliseconds(timeout_ms);
    auto store = c10::make_intrusive<c10d::PrefixStore>("nccl/", s->store);
    auto backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
    auto pg = c10::make_intrusive<c10d::ProcessGroup>(s->store, rank, size);
    pg->setBackend(c10::kCUDA, c10d::ProcessGroup::BackendType::NCCL, backend);
    pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
    pg->setGroupName("0");
    *out = new MzdGroup{pg};
  })
}

}  // extern "C"
