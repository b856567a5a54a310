// The handles csrc/dist.cpp hands to Rust, shared with csrc/nccl.cpp (a separate shared
// library, loaded only for CUDA data parallel): a store opened by dist.cpp is passed to
// nccl.cpp, and the group nccl.cpp creates is used and freed by dist.cpp. Both are built with
// the same compiler, flags and libtorch headers, so the layout is the same on both sides.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

struct MzdStore {
  c10::intrusive_ptr<c10d::Store> store;
};
struct MzdGroup {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
};
