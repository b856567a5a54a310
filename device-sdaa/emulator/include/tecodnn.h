/* tecodnn.h — the version API of libtecodnn.so (TecoDNN, mirrors cuDNN's cudnnGetVersion) as the SDAA
 * EMULATOR implements it: the emulator's ABI, NOT the Tecorigin SDK's header (the emulator
 * carries no kernels; only the version symbols device-sdaa reads). versions.c includes it;
 * device-sdaa's `bindgen` feature generates its declarations from it. */
#ifndef MODELZOO_SDAA_EMULATOR_TECODNN_H
#define MODELZOO_SDAA_EMULATOR_TECODNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

size_t tecodnnGetVersion(void);
/** Optional human-readable version. */
const char* tecodnnGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
