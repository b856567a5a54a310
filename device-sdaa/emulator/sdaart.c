/* SDAA EMULATOR — libsdaart.so stand-in for tests and the demo. NOT SDAA hardware.
 *
 * The CUDA-like runtime API subset device-sdaa uses (declared in include/sdaa_runtime.h), with
 * "device memory" in host memory. Configuration:
 *   SDAA_EMULATOR_DEVICES    number of devices (default 2)
 *   SDAA_VISIBLE_DEVICES     which of them a process sees, as CUDA_VISIBLE_DEVICES
 *   SDAA_EMULATOR_MEMORY_MB  memory per device in MiB (default 16384); allocations past it
 *                            fail with sdaaErrorMemoryAllocation, like a full card. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdaa_runtime.h" /* the ABI implemented here (also what bindgen reads) */

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 64
#define HEADER 64 /* keeps returned pointers 64-byte aligned; holds size + device */


static __thread int current_device = 0;
static size_t used[MAX_DEVICES];
static size_t peak[MAX_DEVICES]; /* high-water mark of used[], for torch_sdaa's memory stats */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long env_long(const char* name, long dflt, long lo, long hi) {
  const char* v = getenv(name);
  if (v == NULL || *v == 0) return dflt;
  char* end = NULL;
  long x = strtol(v, &end, 10);
  if (*end != 0 || x < lo || x > hi) return dflt;
  return x;
}

/* SDAA_VISIBLE_DEVICES, like CUDA_VISIBLE_DEVICES: the emulated devices this process sees, in
 * that order (device i is emulated device physical[i]); the list ends at the first entry that
 * is not a new index below SDAA_EMULATOR_DEVICES. Unset, every emulated device is visible. */
static int visible_devices(int physical[MAX_DEVICES]) {
  int n = (int)env_long("SDAA_EMULATOR_DEVICES", 2, 0, MAX_DEVICES);
  const char* v = getenv("SDAA_VISIBLE_DEVICES");
  if (v == NULL) {
    for (int i = 0; i < n; i++) physical[i] = i;
    return n;
  }
  int count = 0;
  while (*v != 0 && count < n) {
    char* end = NULL;
    long id = strtol(v, &end, 10);
    while (*end == ' ') end++;
    if (end == v || (*end != ',' && *end != 0) || id < 0 || id >= n) break;
    int seen = 0;
    for (int i = 0; i < count; i++) seen |= physical[i] == id;
    if (seen) break;
    physical[count++] = (int)id;
    v = *end == ',' ? end + 1 : end;
  }
  return count;
}

static int device_count(void) {
  int physical[MAX_DEVICES];
  return visible_devices(physical);
}
static size_t total_bytes(void) {
  return (size_t)env_long("SDAA_EMULATOR_MEMORY_MB", 16384, 1, 1L << 30) << 20;
}

EXPORT sdaaError_t sdaaGetDeviceCount(int* count) {
  if (count == NULL) return sdaaErrorInvalidValue;
  *count = device_count();
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return sdaaErrorInvalidDevice;
  current_device = device;
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaGetDevice(int* device) {
  if (device == NULL) return sdaaErrorInvalidValue;
  *device = current_device;
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaDeviceSynchronize(void) { return sdaaSuccess; /* host memory: always in sync */ }

EXPORT sdaaError_t sdaaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (free_bytes == NULL || total == NULL) return sdaaErrorInvalidValue;
  size_t t = total_bytes();
  pthread_mutex_lock(&lock);
  size_t u = used[current_device];
  pthread_mutex_unlock(&lock);
  *total = t;
  *free_bytes = u > t ? 0 : t - u;
  return sdaaSuccess;
}

/* Emulator-internal (no SDAA counterpart, not in the header): the torch plugin adopts a host
 * buffer an op's CPU kernel allocated as device memory without copying it; these charge and
 * credit the device's budget for it, so sdaaMemGetInfo and the cap see it like an allocation.
 * sdaaMalloc* and sdaaFree charge and credit through them too. */
EXPORT sdaaError_t sdaaEmuAdopt(size_t size, int device) {
  if (device < 0) device = current_device;
  if (device >= device_count()) return sdaaErrorInvalidDevice;
  pthread_mutex_lock(&lock);
  if (used[device] + size > total_bytes()) {
    pthread_mutex_unlock(&lock);
    return sdaaErrorMemoryAllocation;
  }
  used[device] += size;
  if (used[device] > peak[device]) peak[device] = used[device];
  pthread_mutex_unlock(&lock);
  return sdaaSuccess;
}

EXPORT void sdaaEmuRelease(size_t size, int device) {
  pthread_mutex_lock(&lock);
  used[device] -= size;
  pthread_mutex_unlock(&lock);
}

/* Emulator-only (no SDAA counterpart, not in the header): the bytes charged to `device` now
 * and at their peak since the last sdaaEmuResetPeak, behind torch_sdaa's memory_allocated /
 * max_memory_allocated (the emulator has no caching allocator: charged bytes are live bytes). */
EXPORT sdaaError_t sdaaEmuMemoryStats(int device, size_t* current, size_t* peak_bytes) {
  if (current == NULL || peak_bytes == NULL) return sdaaErrorInvalidValue;
  if (device < 0 || device >= device_count()) return sdaaErrorInvalidDevice;
  pthread_mutex_lock(&lock);
  *current = used[device];
  *peak_bytes = peak[device];
  pthread_mutex_unlock(&lock);
  return sdaaSuccess;
}

/* Restarts `device`'s peak from its current bytes (torch_sdaa's reset_peak_memory_stats). */
EXPORT sdaaError_t sdaaEmuResetPeak(int device) {
  if (device < 0 || device >= device_count()) return sdaaErrorInvalidDevice;
  pthread_mutex_lock(&lock);
  peak[device] = used[device];
  pthread_mutex_unlock(&lock);
  return sdaaSuccess;
}

/* Allocate on the current device (or `device` when >= 0). */
EXPORT sdaaError_t sdaaMallocOnDevice(void** ptr, size_t size, int device) {
  if (ptr == NULL) return sdaaErrorInvalidValue;
  if (device < 0) device = current_device;
  if (device >= device_count()) return sdaaErrorInvalidDevice;
  *ptr = NULL;
  if (size == 0) return sdaaSuccess;
  sdaaError_t charged = sdaaEmuAdopt(size, device);
  if (charged != sdaaSuccess) return charged;
  void* raw = NULL;
  if (posix_memalign(&raw, HEADER, size + HEADER) != 0) {
    sdaaEmuRelease(size, device);
    return sdaaErrorMemoryAllocation;
  }
  ((size_t*)raw)[0] = size;
  ((size_t*)raw)[1] = (size_t)device;
  *ptr = (char*)raw + HEADER;
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaMalloc(void** ptr, size_t size) { return sdaaMallocOnDevice(ptr, size, -1); }

EXPORT sdaaError_t sdaaFree(void* ptr) {
  if (ptr == NULL) return sdaaSuccess;
  char* raw = (char*)ptr - HEADER;
  size_t size = ((size_t*)raw)[0];
  size_t device = ((size_t*)raw)[1];
  sdaaEmuRelease(size, (int)device);
  free(raw);
  return sdaaSuccess;
}

/* kind is ignored: every emulated pointer is host-addressable. */
EXPORT sdaaError_t sdaaMemcpy(void* dst, const void* src, size_t count, int kind) {
  (void)kind;
  if (count && (dst == NULL || src == NULL)) return sdaaErrorInvalidValue;
  memmove(dst, src, count);
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaMemset(void* dst, int value, size_t count) {
  if (count && dst == NULL) return sdaaErrorInvalidValue;
  memset(dst, value, count);
  return sdaaSuccess;
}

EXPORT sdaaError_t sdaaDriverGetVersion(int* v) {
  if (v == NULL) return sdaaErrorInvalidValue;
  *v = 2011;
  return sdaaSuccess;
}
EXPORT sdaaError_t sdaaRuntimeGetVersion(int* v) {
  if (v == NULL) return sdaaErrorInvalidValue;
  *v = 2010;
  return sdaaSuccess;
}
EXPORT const char* sdaaDriverGetVersionString(void) { return "2.1.1-emulator"; }
EXPORT const char* sdaaRuntimeGetVersionString(void) { return "2.1.0-emulator"; }

/* Writes the device name into the first 256 bytes (cudaDeviceProp layout starts so). */
EXPORT sdaaError_t sdaaGetDeviceProperties(void* prop, int device) {
  if (prop == NULL) return sdaaErrorInvalidValue;
  if (device < 0 || device >= device_count()) return sdaaErrorInvalidDevice;
  int physical[MAX_DEVICES];
  visible_devices(physical);
  memset(prop, 0, 256);
  snprintf((char*)prop, 256, "SDAA emulator device %d", physical[device]);
  return sdaaSuccess;
}

EXPORT const char* sdaaGetErrorString(sdaaError_t error) {
  switch (error) {
    case sdaaSuccess: return "no error (SDAA emulator)";
    case sdaaErrorInvalidValue: return "invalid argument (SDAA emulator)";
    case sdaaErrorMemoryAllocation:
      return "out of memory: SDAA_EMULATOR_MEMORY_MB exceeded (SDAA emulator)";
    case sdaaErrorInvalidDevice:
      return "invalid device ordinal: see SDAA_EMULATOR_DEVICES (SDAA emulator)";
    default: return "unknown error (SDAA emulator)";
  }
}
