// SDAA EMULATOR — what the torch plugin needs from inventory.cpp (the op inventory).
#pragma once
#include <string_view>

namespace sdaa_emulator {
// Whether the op inventory is counting; it is off until torch_sdaa turns it on.
bool inventory_enabled();
// The plugin served `op` through libtorch's copying cpu_fallback: an emulator fallback.
void note_emulator_fallback(std::string_view op);
// An sdaa kernel of the plugin raised (the CPU kernel refused, or there was none): `why` is the
// error's text, which the inventory gives as the reason of the ops that failed with it.
void note_failure(std::string_view why);
}  // namespace sdaa_emulator
