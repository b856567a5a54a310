/* SDAA EMULATOR — libtccl.so stand-in. NOT SDAA hardware and not the real TCCL.
 *
 * The NCCL-like API subset device-sdaa and torch_sdaa's "tccl" process group use, with real
 * data exchange between the processes of one host through POSIX shared memory: the unique id
 * names a shared-memory segment, each rank owns a 4 MiB slot in it, and collectives run chunk
 * by chunk between barriers. Reduction order is rank 0, 1, ... on every rank, so all ranks get
 * bit-identical results.
 * TCCL_EMULATOR_TIMEOUT_S (seconds, a number > 0; default 300) bounds every wait: a missing
 * rank gives an error, never a hang. Set but not valid, tcclCommInitRank fails with
 * tcclInvalidUsage, whose tcclGetErrorString names the variable, its value and what is allowed
 * (tcclEmuConfigError returns the same text, or NULL). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tccl.h" /* the ABI implemented here (also what bindgen reads) */

#define EXPORT __attribute__((visibility("default")))
#define SLOT_BYTES (4u << 20)
#define MAGIC "mz-tccl-emulator"


typedef struct {
  _Atomic int joined;
  _Atomic int count;
  _Atomic int generation;
  _Atomic int nranks;
} header_t;

typedef struct {
  char name[128];
  header_t* hdr;
  char* slots;
  size_t map_bytes;
  int nranks, rank;
} comm_t;

static const size_t HDR_BYTES = 4096;

static __thread char config_message[256];

/* TCCL_EMULATOR_TIMEOUT_S in seconds (300 when unset or empty); 0 with config_message set when
 * it is not a number > 0. */
static double timeout_s(void) {
  const char* v = getenv("TCCL_EMULATOR_TIMEOUT_S");
  if (v == NULL || *v == 0) return 300;
  char* end = NULL;
  double t = strtod(v, &end);
  while (*end == ' ') end++;
  if (end == v || *end != 0 || !(t > 0) || t > 1e9) {
    snprintf(config_message, sizeof config_message,
             "TCCL emulator: TCCL_EMULATOR_TIMEOUT_S='%.64s' is not valid: expected a number of "
             "seconds > 0 (the longest a collective waits for the other ranks; default 300 when "
             "unset)",
             v);
    return 0;
  }
  return t;
}

/* Emulator-only (not in the TCCL API): what is wrong with the emulator's settings, or NULL. */
EXPORT const char* tcclEmuConfigError(void) { return timeout_s() > 0 ? NULL : config_message; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pause_briefly(unsigned spins) {
  if (spins < 64) return;
  struct timespec ts = {0, spins < 4096 ? 2000 : 50000};
  nanosleep(&ts, NULL);
}

static int barrier(comm_t* c) {
  int gen = atomic_load(&c->hdr->generation);
  if (atomic_fetch_add(&c->hdr->count, 1) == c->nranks - 1) {
    atomic_store(&c->hdr->count, 0);
    atomic_fetch_add(&c->hdr->generation, 1);
    return tcclSuccess;
  }
  double deadline = now_s() + timeout_s();
  for (unsigned spins = 0; atomic_load(&c->hdr->generation) == gen; spins++) {
    pause_briefly(spins);
    if ((spins & 255) == 0 && now_s() > deadline) return tcclTimeout;
  }
  return tcclSuccess;
}

EXPORT tcclResult_t tcclGetVersion(int* v) {
  if (v == NULL) return tcclInvalidArgument;
  *v = 12300;
  return tcclSuccess;
}
EXPORT const char* tcclGetVersionString(void) { return "1.23.0-emulator"; }

EXPORT const char* tcclGetErrorString(tcclResult_t r) {
  switch (r) {
    case tcclSuccess: return "no error (TCCL emulator)";
    case tcclSystemError: return "system error: shared memory unavailable (TCCL emulator)";
    case tcclInternalError: return "internal error (TCCL emulator)";
    case tcclInvalidArgument:
      return "invalid argument: bad rank, size, pointer, dtype or reduction (TCCL emulator)";
    case tcclInvalidUsage: {
      const char* why = tcclEmuConfigError();
      return why != NULL ? why : "invalid usage: ranks disagree on the world size (TCCL emulator)";
    }
    case tcclTimeout:
      return "timed out waiting for the other ranks (TCCL_EMULATOR_TIMEOUT_S) (TCCL emulator)";
    default: return "unknown error (TCCL emulator)";
  }
}

EXPORT tcclResult_t tcclGetUniqueId(tcclUniqueId* id) {
  if (id == NULL) return tcclInvalidArgument;
  memset(id, 0, sizeof *id);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned seed = (unsigned)(ts.tv_nsec ^ getpid());
  snprintf(id->internal, sizeof id->internal, "%s:/mz_tccl_%d_%lld_%u", MAGIC, (int)getpid(),
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, rand_r(&seed));
  return tcclSuccess;
}

EXPORT tcclResult_t tcclCommInitRank(tcclComm_t* comm, int nranks, tcclUniqueId id, int rank) {
  if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) return tcclInvalidArgument;
  if (tcclEmuConfigError() != NULL) return tcclInvalidUsage;
  size_t magic_len = strlen(MAGIC);
  if (strncmp(id.internal, MAGIC ":", magic_len + 1) != 0) return tcclInvalidArgument;
  comm_t* c = calloc(1, sizeof *c);
  if (c == NULL) return tcclSystemError;
  snprintf(c->name, sizeof c->name, "%.*s", (int)(sizeof id.internal - magic_len - 1), id.internal + magic_len + 1);
  c->nranks = nranks;
  c->rank = rank;
  c->map_bytes = HDR_BYTES + (size_t)nranks * SLOT_BYTES;
  int fd = shm_open(c->name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) { free(c); return tcclSystemError; }
  if (ftruncate(fd, (off_t)c->map_bytes) != 0) { close(fd); free(c); return tcclSystemError; }
  void* base = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) { free(c); return tcclSystemError; }
  c->hdr = base;
  c->slots = (char*)base + HDR_BYTES;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&c->hdr->nranks, &expected, nranks) && expected != nranks) {
    munmap(base, c->map_bytes);
    free(c);
    return tcclInvalidUsage;
  }
  atomic_fetch_add(&c->hdr->joined, 1);
  int r = barrier(c);
  /* Every rank has mapped the segment: its name is no longer needed. */
  if (rank == 0 || r != tcclSuccess) shm_unlink(c->name);
  if (r != tcclSuccess) {
    munmap(base, c->map_bytes);
    free(c);
    return r;
  }
  *comm = c;
  return tcclSuccess;
}

EXPORT tcclResult_t tcclCommDestroy(tcclComm_t comm) {
  comm_t* c = comm;
  if (c == NULL) return tcclInvalidArgument;
  munmap(c->hdr, c->map_bytes);
  free(c);
  return tcclSuccess;
}

static size_t dtype_size(int dtype) {
  switch (dtype) {
    case 0: case 1: return 1;
    case 6: case 9: return 2;
    case 2: case 3: case 7: return 4;
    case 4: case 5: case 8: return 8;
    default: return 0;
  }
}

/* fp16 and bf16 are reduced as NCCL does: each step in float, rounded back to the type. */
static float half_to_float(uint16_t h) {
  _Float16 x;
  memcpy(&x, &h, sizeof h);
  return (float)x;
}
static uint16_t float_to_half(float f) {
  _Float16 x = (_Float16)f;
  uint16_t h;
  memcpy(&h, &x, sizeof h);
  return h;
}
static float bf16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint16_t float_to_bf16(float f) { /* round to nearest even, as c10::BFloat16 */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static double combine(double acc, double x, int op) {
  switch (op) {
    case 1: return acc * x;
    case 2: return x > acc ? x : acc;
    case 3: return x < acc ? x : acc;
    default: return acc + x; /* sum, avg */
  }
}

/* Element i of every rank's slot, `at` bytes into the slots, reduced in rank order. */
#define REDUCE(T)                                                              \
  {                                                                            \
    T* o = (T*)out;                                                            \
    for (size_t i = 0; i < n; i++) {                                           \
      T acc = ((const T*)(c->slots + at))[i];                                  \
      for (int r = 1; r < c->nranks; r++) {                                    \
        T x = ((const T*)(c->slots + (size_t)r * SLOT_BYTES + at))[i];         \
        switch (op) {                                                          \
          case 0: case 4: acc = acc + x; break;                                \
          case 1: acc = acc * x; break;                                        \
          case 2: acc = x > acc ? x : acc; break;                              \
          case 3: acc = x < acc ? x : acc; break;                              \
        }                                                                      \
      }                                                                        \
      if (op == 4) acc = (T)(acc / (T)c->nranks);                              \
      o[i] = acc;                                                              \
    }                                                                          \
  }

#define REDUCE_16(TO_FLOAT, FROM_FLOAT)                                        \
  {                                                                            \
    uint16_t* o = (uint16_t*)out;                                              \
    for (size_t i = 0; i < n; i++) {                                           \
      float acc = TO_FLOAT(((const uint16_t*)(c->slots + at))[i]);             \
      for (int r = 1; r < c->nranks; r++) {                                    \
        float x = TO_FLOAT(((const uint16_t*)(c->slots + (size_t)r * SLOT_BYTES + at))[i]); \
        acc = TO_FLOAT(FROM_FLOAT((float)combine(acc, x, op)));                \
      }                                                                        \
      if (op == 4) acc = acc / (float)c->nranks;                               \
      o[i] = FROM_FLOAT(acc);                                                  \
    }                                                                          \
  }

static void reduce_chunk(comm_t* c, void* out, size_t n, int dtype, int op, size_t at) {
  switch (dtype) {
    case 0: REDUCE(int8_t) break;
    case 1: REDUCE(uint8_t) break;
    case 2: REDUCE(int32_t) break;
    case 3: REDUCE(uint32_t) break;
    case 4: REDUCE(int64_t) break;
    case 5: REDUCE(uint64_t) break;
    case 6: REDUCE_16(half_to_float, float_to_half) break;
    case 7: REDUCE(float) break;
    case 8: REDUCE(double) break;
    case 9: REDUCE_16(bf16_to_float, float_to_bf16) break;
  }
}

EXPORT tcclResult_t tcclAllReduce(const void* send, void* recv, size_t count, tcclDataType_t dtype, tcclRedOp_t op,
                         tcclComm_t comm, sdaaStream_t stream) {
  (void)stream;
  comm_t* c = comm;
  size_t es = dtype_size(dtype);
  if (c == NULL || es == 0 || op < 0 || op > 4) return tcclInvalidArgument;
  if (count && (send == NULL || recv == NULL)) return tcclInvalidArgument;
  size_t per_chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < count; off += per_chunk) {
    size_t n = count - off < per_chunk ? count - off : per_chunk;
    memcpy(c->slots + (size_t)c->rank * SLOT_BYTES, (const char*)send + off * es, n * es);
    int r = barrier(c);
    if (r != tcclSuccess) return r;
    reduce_chunk(c, (char*)recv + off * es, n, dtype, op, 0);
    if ((r = barrier(c)) != tcclSuccess) return r;
  }
  return tcclSuccess;
}

EXPORT tcclResult_t tcclBroadcast(const void* send, void* recv, size_t count, tcclDataType_t dtype, int root,
                         tcclComm_t comm, sdaaStream_t stream) {
  (void)stream;
  comm_t* c = comm;
  size_t es = dtype_size(dtype);
  if (c == NULL || es == 0 || root < 0 || root >= c->nranks) return tcclInvalidArgument;
  if (count && recv == NULL) return tcclInvalidArgument;
  size_t per_chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < count; off += per_chunk) {
    size_t n = count - off < per_chunk ? count - off : per_chunk;
    if (c->rank == root) {
      if (send == NULL) return tcclInvalidArgument;
      memcpy(c->slots, (const char*)send + off * es, n * es);
    }
    int r = barrier(c);
    if (r != tcclSuccess) return r;
    memmove((char*)recv + off * es, c->slots, n * es);
    if ((r = barrier(c)) != tcclSuccess) return r;
  }
  return tcclSuccess;
}

/* Rank r's `count` elements land at recvbuff + r * count on every rank (in place when
 * sendbuff == recvbuff + rank * count, as NCCL allows). */
EXPORT tcclResult_t tcclAllGather(const void* send, void* recv, size_t count, tcclDataType_t dtype,
                         tcclComm_t comm, sdaaStream_t stream) {
  (void)stream;
  comm_t* c = comm;
  size_t es = dtype_size(dtype);
  if (c == NULL || es == 0) return tcclInvalidArgument;
  if (count && (send == NULL || recv == NULL)) return tcclInvalidArgument;
  size_t per_chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < count; off += per_chunk) {
    size_t n = count - off < per_chunk ? count - off : per_chunk;
    memcpy(c->slots + (size_t)c->rank * SLOT_BYTES, (const char*)send + off * es, n * es);
    int r = barrier(c);
    if (r != tcclSuccess) return r;
    for (int k = 0; k < c->nranks; k++) {
      memmove((char*)recv + ((size_t)k * count + off) * es, c->slots + (size_t)k * SLOT_BYTES, n * es);
    }
    if ((r = barrier(c)) != tcclSuccess) return r;
  }
  return tcclSuccess;
}

/* Every rank sends nranks * count elements; rank r receives the reduction of every rank's
 * elements [r * count, (r + 1) * count). Each slot holds one sub-chunk per destination rank. */
EXPORT tcclResult_t tcclReduceScatter(const void* send, void* recv, size_t count, tcclDataType_t dtype,
                             tcclRedOp_t op, tcclComm_t comm, sdaaStream_t stream) {
  (void)stream;
  comm_t* c = comm;
  size_t es = dtype_size(dtype);
  if (c == NULL || es == 0 || op < 0 || op > 4) return tcclInvalidArgument;
  if (count && (send == NULL || recv == NULL)) return tcclInvalidArgument;
  size_t sub = SLOT_BYTES / (size_t)c->nranks / es; /* elements per destination per round */
  if (sub == 0) return tcclInvalidArgument;
  char* mine = c->slots + (size_t)c->rank * SLOT_BYTES;
  for (size_t off = 0; off < count; off += sub) {
    size_t n = count - off < sub ? count - off : sub;
    for (int k = 0; k < c->nranks; k++) {
      memcpy(mine + (size_t)k * sub * es, (const char*)send + ((size_t)k * count + off) * es, n * es);
    }
    int r = barrier(c);
    if (r != tcclSuccess) return r;
    reduce_chunk(c, (char*)recv + off * es, n, dtype, op, (size_t)c->rank * sub * es);
    if ((r = barrier(c)) != tcclSuccess) return r;
  }
  return tcclSuccess;
}
