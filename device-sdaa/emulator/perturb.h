// SDAA EMULATOR — what the torch plugin needs from perturb.cpp (SDAA_EMU_PERTURB).
#pragma once
#include <set>
#include <string>

namespace sdaa_emulator {
// Why SDAA_EMU_PERTURB, TORCH_SDAA_FALLBACK_OPS or TORCH_SDAA_RUNTIME_AUTOFALLBACK could not be
// read; empty when they are unset or well-formed.
const std::string& perturb_error();
// Whether TORCH_SDAA_FALLBACK_OPS names `op` (the dispatcher's name, "aten::addmm"): its calls
// run as CPU ops, outside the device path (never perturbed, counted as fallbacks).
bool is_fallback_op(const std::string& op);
bool any_fallback_ops();
// The ops TORCH_SDAA_FALLBACK_OPS names that this torch has, as "aten::addmm".
const std::set<std::string>& fallback_ops();
}  // namespace sdaa_emulator
