/* sdpti.h — the version API of libsdpti.so (profiling, mirrors CUPTI's cuptiGetVersion) as the SDAA
 * EMULATOR implements it: the emulator's ABI, NOT the Tecorigin SDK's header (the emulator
 * carries no kernels; only the version symbols device-sdaa reads). versions.c includes it;
 * device-sdaa's `bindgen` feature generates its declarations from it. */
#ifndef MODELZOO_SDAA_EMULATOR_SDPTI_H
#define MODELZOO_SDAA_EMULATOR_SDPTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int sdptiGetVersion(uint32_t* version);
/** Optional human-readable version. */
const char* sdptiGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
