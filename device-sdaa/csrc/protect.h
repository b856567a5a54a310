// The shim's error convention (shim.cpp, dist.cpp): an entry point returns null on success or
// a malloc'ed copy of the C++ exception's message (freed with mzd_free_string), so no
// exception ever crosses into Rust.
#pragma once

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace mzd {
inline char* dup_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}
}  // namespace mzd

// Run the statements given (commas allowed) and return null, or the exception's message.
#define MZD_PROTECT(...)                                         \
  try {                                                          \
    __VA_ARGS__                                                  \
  } catch (const std::exception& e) {                            \
    return mzd::dup_string(e.what());                            \
  } catch (...) {                                                \
    return mzd::dup_string("unknown C++ exception in libtorch"); \
  }                                                              \
  return nullptr;
