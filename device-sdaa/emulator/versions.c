/* SDAA EMULATOR — version-only stand-ins for libtecodnn.so, libtecoblas.so, libsdpti.so,
 * libtecodnn_ext.so and libtecorand.so. NOT SDAA hardware: they carry no kernels (the
 * emulator's torch plugin runs every op on the host CPU). One source, one -D per library. */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

#if defined(EMU_TECODNN)
#include "tecodnn.h" /* the ABI implemented here (also what bindgen reads) */
EXPORT size_t tecodnnGetVersion(void) { return 2100; }
EXPORT const char* tecodnnGetVersionString(void) { return "2.1.0-emulator"; }
#elif defined(EMU_TECOBLAS)
#include "tecoblas.h"
EXPORT size_t tecoblasGetVersion(void) { return 2102; }
EXPORT const char* tecoblasGetVersionString(void) { return "2.1.0-emulator"; }
#elif defined(EMU_SDPTI)
#include "sdpti.h"
EXPORT int sdptiGetVersion(uint32_t* v) { if (v) *v = 1400; return v ? 0 : 1; }
EXPORT const char* sdptiGetVersionString(void) { return "1.4.0-emulator"; }
#elif defined(EMU_TECODNN_EXT)
#include "tecodnn_ext.h"
EXPORT size_t tecodnnExtGetVersion(void) { return 12000; }
EXPORT const char* tecodnnExtGetVersionString(void) { return "1.20.0-emulator"; }
#elif defined(EMU_TECORAND)
#include "tecorand.h"
EXPORT int tecorandGetVersion(int* v) { if (v) *v = 2001; return v ? 0 : 1; }
EXPORT const char* tecorandGetVersionString(void) { return "2.0.1-emulator"; }
#else
#error "define one of EMU_TECODNN EMU_TECOBLAS EMU_SDPTI EMU_TECODNN_EXT EMU_TECORAND"
#endif
