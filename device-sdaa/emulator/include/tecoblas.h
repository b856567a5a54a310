/* tecoblas.h — the version API of libtecoblas.so (TecoBLAS, mirrors cuBLAS) as the SDAA
 * EMULATOR implements it: the emulator's ABI, NOT the Tecorigin SDK's header (the emulator
 * carries no kernels; only the version symbols device-sdaa reads). versions.c includes it;
 * device-sdaa's `bindgen` feature generates its declarations from it. */
#ifndef MODELZOO_SDAA_EMULATOR_TECOBLAS_H
#define MODELZOO_SDAA_EMULATOR_TECOBLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

size_t tecoblasGetVersion(void);
/** Optional human-readable version. */
const char* tecoblasGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
