/* sdaa_runtime.h — the SDAA runtime C API (libsdaart.so) as the SDAA EMULATOR implements it.
 *
 * These headers describe the emulator's ABI (device-sdaa/emulator/), modelled on the CUDA
 * runtime API that the real SDAA runtime mirrors; they are NOT the Tecorigin SDK's headers.
 * The emulator's sources include them, so headers and emulator cannot drift, and
 * device-sdaa's `bindgen` feature generates its declarations from them (or from the real
 * SDK's headers under $SDAA_HOME/include). */
#ifndef MODELZOO_SDAA_EMULATOR_SDAA_RUNTIME_H
#define MODELZOO_SDAA_EMULATOR_SDAA_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Runtime error codes, like cudaError_t: 0 is success. */
typedef enum sdaaError {
  sdaaSuccess = 0,
  sdaaErrorInvalidValue = 1,
  sdaaErrorMemoryAllocation = 2,
  /** The runtime cannot start; the emulator returns it for a setting that is not valid
   * (SDAA_EMULATOR_DEVICES, ...), and sdaaGetErrorString then says which and why. */
  sdaaErrorInitializationError = 3,
  sdaaErrorInvalidDevice = 101,
} sdaaError_t;

/** Opaque stream handle; NULL is the default stream. */
typedef void* sdaaStream_t;

sdaaError_t sdaaGetDeviceCount(int* count);
sdaaError_t sdaaSetDevice(int device);
sdaaError_t sdaaGetDevice(int* device);
sdaaError_t sdaaDeviceSynchronize(void);
sdaaError_t sdaaMemGetInfo(size_t* free_bytes, size_t* total);
sdaaError_t sdaaDriverGetVersion(int* version);
sdaaError_t sdaaRuntimeGetVersion(int* version);
/** Fills a cudaDeviceProp-like struct whose first field is `char name[256]`; the emulator
 * writes only the name. The caller passes a buffer at least that large. */
sdaaError_t sdaaGetDeviceProperties(void* prop, int device);
const char* sdaaGetErrorString(sdaaError_t error);

/* Memory, used by the emulator's torch plugin. */
sdaaError_t sdaaMalloc(void** ptr, size_t size);
/** Emulator extension: allocate on `device` (the current device when < 0). */
sdaaError_t sdaaMallocOnDevice(void** ptr, size_t size, int device);
sdaaError_t sdaaFree(void* ptr);
/** `kind` mirrors cudaMemcpyKind; the emulator ignores it (all memory is host memory). */
sdaaError_t sdaaMemcpy(void* dst, const void* src, size_t count, int kind);
sdaaError_t sdaaMemset(void* dst, int value, size_t count);

/* Optional human-readable versions ("2.1.0"); preferred over the numeric ones when present. */
const char* sdaaDriverGetVersionString(void);
const char* sdaaRuntimeGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
