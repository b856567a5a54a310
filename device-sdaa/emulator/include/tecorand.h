/* tecorand.h — the version API of libtecorand.so (mirrors cuRAND's curandGetVersion) as the SDAA
 * EMULATOR implements it: the emulator's ABI, NOT the Tecorigin SDK's header (the emulator
 * carries no kernels; only the version symbols device-sdaa reads). versions.c includes it;
 * device-sdaa's `bindgen` feature generates its declarations from it. */
#ifndef MODELZOO_SDAA_EMULATOR_TECORAND_H
#define MODELZOO_SDAA_EMULATOR_TECORAND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int tecorandGetVersion(int* version);
/** Optional human-readable version. */
const char* tecorandGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
