/* SDAA EMULATOR — libsdaart.so stand-in for tests and the demo. NOT SDAA hardware.
 *
 * The CUDA-like runtime API subset device-sdaa uses (declared in include/sdaa_runtime.h), with
 * "device memory" in host memory. Configuration:
 *   SDAA_EMULATOR_DEVICES    number of devices, an integer 0..64 (default 2), or `local`:
 *                            LOCAL_WORLD_SIZE (torchrun's processes on this host), else 1
 *   SDAA_VISIBLE_DEVICES     which of them a process sees, as CUDA_VISIBLE_DEVICES: integers
 *                            separated by commas; the list ends at the first index that is out
 *                            of range or repeated (a list written for a bigger machine)
 *   SDAA_EMULATOR_MEMORY_MB  memory per device in MiB, an integer 1..2^30 (default 16384);
 *                            allocations past it fail with sdaaErrorMemoryAllocation, like a
 *                            full card.
 * A variable that is set but not valid is an error, never a silent default: every call that
 * needs it returns sdaaErrorInitializationError, whose sdaaGetErrorString names the variable,
 * its value and what is allowed (sdaaEmuConfigError returns the same text, or NULL). */
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

/* What is wrong with the configuration, for sdaaGetErrorString (per thread: the call that
 * failed and the error text it is asked for run on one thread). */
static __thread char config_message[512];

/* An integer variable in [lo, hi]: 0 and *out (dflt when unset or empty), else
 * sdaaErrorInitializationError with config_message saying what is wrong. */
static sdaaError_t env_long(const char* name, long dflt, long lo, long hi, const char* meaning,
                            long* out) {
  const char* v = getenv(name);
  *out = dflt;
  if (v == NULL || *v == 0) return sdaaSuccess;
  char* end = NULL;
  long x = strtol(v, &end, 10);
  while (*end == ' ') end++;
  if (end == v || *end != 0 || x < lo || x > hi) {
    snprintf(config_message, sizeof config_message,
             "SDAA emulator: %s='%.64s' is not valid: expected an integer from %ld to %ld (%s; "
             "default %ld when unset)",
             name, v, lo, hi, meaning, dflt);
    return sdaaErrorInitializationError;
  }
  *out = x;
  return sdaaSuccess;
}

/* SDAA_VISIBLE_DEVICES, like CUDA_VISIBLE_DEVICES: the emulated devices this process sees, in
 * that order (device i is emulated device physical[i]); the list ends at the first entry that
 * is out of range or repeated, as CUDA's does. An entry that is not an integer is an error.
 * Unset, every emulated device is visible. */
static sdaaError_t visible_devices(int physical[MAX_DEVICES], int* count_out) {
  long n = 0;
  const char* setting = getenv("SDAA_EMULATOR_DEVICES");
  sdaaError_t rc;
  if (setting != NULL && strcmp(setting, "local") == 0) {
    /* As many devices as this host runs processes (torchrun's LOCAL_WORLD_SIZE), else one: what
     * `modelzoo port`'s CPU baseline reports as torch.cuda.device_count(), so a port compares
     * against the same number of devices (a DataParallel run splits its batch alike). */
    rc = env_long("LOCAL_WORLD_SIZE", 1, 1, MAX_DEVICES,
                  "torchrun's processes on this host, read for SDAA_EMULATOR_DEVICES=local", &n);
  } else {
    rc = env_long("SDAA_EMULATOR_DEVICES", 2, 0, MAX_DEVICES,
                  "the number of emulated SDAA devices, or 'local'", &n);
  }
  if (rc != sdaaSuccess) return rc;
  const char* v = getenv("SDAA_VISIBLE_DEVICES");
  if (v == NULL) {
    for (int i = 0; i < n; i++) physical[i] = i;
    *count_out = (int)n;
    return sdaaSuccess;
  }
  /* Syntax first: integers separated by commas (spaces around them allowed), or nothing. */
  for (const char* p = v; *p != 0;) {
    while (*p == ' ') p++;
    char* end = NULL;
    strtol(p, &end, 10);
    while (*end == ' ') end++;
    if (end == p || (*end != ',' && *end != 0) || (*end == ',' && end[1] == 0)) {
      snprintf(config_message, sizeof config_message,
               "SDAA emulator: SDAA_VISIBLE_DEVICES='%.64s' is not valid: expected device "
               "indices separated by commas, e.g. '0' or '1,0' (the list ends at the first "
               "index that is not below SDAA_EMULATOR_DEVICES=%ld or is repeated)",
               v, n);
      return sdaaErrorInitializationError;
    }
    p = *end == ',' ? end + 1 : end;
  }
  int count = 0;
  while (*v != 0 && count < n) {
    char* end = NULL;
    long id = strtol(v, &end, 10);
    while (*end == ' ') end++;
    if (id < 0 || id >= n) break;
    int seen = 0;
    for (int i = 0; i < count; i++) seen |= physical[i] == id;
    if (seen) break;
    physical[count++] = (int)id;
    v = *end == ',' ? end + 1 : end;
  }
  *count_out = count;
  return sdaaSuccess;
}

static sdaaError_t device_count(int* n) {
  int physical[MAX_DEVICES];
  return visible_devices(physical, n);
}

static sdaaError_t total_bytes(size_t* out) {
  long mb = 0;
  sdaaError_t rc = env_long("SDAA_EMULATOR_MEMORY_MB", 16384, 1, 1L << 30,
                            "the memory of each emulated device in MiB", &mb);
  *out = (size_t)mb << 20;
  return rc;
}

/* Every setting checked (so that the first runtime call a user makes reports any that is not
 * valid), and the number of devices this process sees. */
static sdaaError_t checked_device_count(int* n) {
  size_t bytes = 0;
  sdaaError_t rc = device_count(n);
  if (rc == sdaaSuccess) rc = total_bytes(&bytes);
  return rc;
}

/* A device index of this process, or the error: a setting not valid, then an invalid device. */
static sdaaError_t check_device(int device) {
  int n = 0;
  sdaaError_t rc = checked_device_count(&n);
  if (rc != sdaaSuccess) return rc;
  return device < 0 || device >= n ? sdaaErrorInvalidDevice : sdaaSuccess;
}

/* Emulator-only (not in the SDAA API): what is wrong with the emulator's settings, or NULL when
 * they are valid. torch_sdaa checks it on import. */
EXPORT const char* sdaaEmuConfigError(void) {
  int n = 0;
  return checked_device_count(&n) == sdaaSuccess ? NULL : config_message;
}

EXPORT sdaaError_t sdaaGetDeviceCount(int* count) {
  if (count == NULL) return sdaaErrorInvalidValue;
  *count = 0;
  return checked_device_count(count);
}

EXPORT sdaaError_t sdaaSetDevice(int device) {
  sdaaError_t rc = check_device(device);
  if (rc != sdaaSuccess) return rc;
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
  size_t t = 0;
  sdaaError_t rc = total_bytes(&t);
  if (rc != sdaaSuccess) return rc;
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
  size_t cap = 0;
  sdaaError_t rc = check_device(device);
  if (rc == sdaaSuccess) rc = total_bytes(&cap);
  if (rc != sdaaSuccess) return rc;
  pthread_mutex_lock(&lock);
  if (used[device] + size > cap) {
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
  sdaaError_t rc = check_device(device);
  if (rc != sdaaSuccess) return rc;
  pthread_mutex_lock(&lock);
  *current = used[device];
  *peak_bytes = peak[device];
  pthread_mutex_unlock(&lock);
  return sdaaSuccess;
}

/* Restarts `device`'s peak from its current bytes (torch_sdaa's reset_peak_memory_stats). */
EXPORT sdaaError_t sdaaEmuResetPeak(int device) {
  sdaaError_t rc = check_device(device);
  if (rc != sdaaSuccess) return rc;
  pthread_mutex_lock(&lock);
  peak[device] = used[device];
  pthread_mutex_unlock(&lock);
  return sdaaSuccess;
}

/* Allocate on the current device (or `device` when >= 0). */
EXPORT sdaaError_t sdaaMallocOnDevice(void** ptr, size_t size, int device) {
  if (ptr == NULL) return sdaaErrorInvalidValue;
  if (device < 0) device = current_device;
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
  sdaaError_t rc = check_device(device);
  if (rc != sdaaSuccess) return rc;
  int physical[MAX_DEVICES];
  int n = 0;
  visible_devices(physical, &n);
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
    case sdaaErrorInitializationError: {
      const char* why = sdaaEmuConfigError();
      return why != NULL ? why : "initialization error (SDAA emulator)";
    }
    default: return "unknown error (SDAA emulator)";
  }
}
