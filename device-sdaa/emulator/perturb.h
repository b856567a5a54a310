// SDAA EMULATOR — what the torch plugin needs from perturb.cpp (SDAA_EMU_PERTURB).
#pragma once
#include <string>

namespace sdaa_emulator {
// Why SDAA_EMU_PERTURB could not be read; empty when it is unset or well-formed.
const std::string& perturb_error();
}  // namespace sdaa_emulator
