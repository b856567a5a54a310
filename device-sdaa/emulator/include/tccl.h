/* tccl.h — the TCCL collective-communication C API (libtccl.so) as the SDAA EMULATOR
 * implements it: the emulator's ABI, modelled on NCCL (which TCCL mirrors), NOT the Tecorigin
 * SDK's header. The emulator's tccl.c includes it; device-sdaa's `bindgen` feature generates
 * its declarations from it. */
#ifndef MODELZOO_SDAA_EMULATOR_TCCL_H
#define MODELZOO_SDAA_EMULATOR_TCCL_H

#include <stddef.h>

#include "sdaa_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Result codes, NCCL numbering: 0 is success. */
typedef enum {
  tcclSuccess = 0,
  tcclUnhandledDeviceError = 1,
  tcclSystemError = 2,
  tcclInternalError = 3,
  tcclInvalidArgument = 4,
  tcclInvalidUsage = 5,
  tcclRemoteError = 6,
  tcclInProgress = 7,
  tcclTimeout = 8,
} tcclResult_t;

/** Element types, NCCL numbering. */
typedef enum {
  tcclInt8 = 0,
  tcclUint8 = 1,
  tcclInt32 = 2,
  tcclUint32 = 3,
  tcclInt64 = 4,
  tcclUint64 = 5,
  tcclFloat16 = 6,
  tcclFloat32 = 7,
  tcclFloat64 = 8,
  tcclBfloat16 = 9,
} tcclDataType_t;

/** Reduction operations, NCCL numbering. */
typedef enum {
  tcclSum = 0,
  tcclProd = 1,
  tcclMax = 2,
  tcclMin = 3,
  tcclAvg = 4,
} tcclRedOp_t;

/** Opaque communicator handle. */
typedef void* tcclComm_t;

#define TCCL_UNIQUE_ID_BYTES 128
/** Identifies a communicator to all its ranks; rank 0 creates it and shares it. */
typedef struct {
  char internal[TCCL_UNIQUE_ID_BYTES];
} tcclUniqueId;

tcclResult_t tcclGetVersion(int* version);
tcclResult_t tcclGetUniqueId(tcclUniqueId* unique_id);
tcclResult_t tcclCommInitRank(tcclComm_t* comm, int nranks, tcclUniqueId comm_id, int rank);
tcclResult_t tcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           tcclDataType_t datatype, tcclRedOp_t op, tcclComm_t comm,
                           sdaaStream_t stream);
tcclResult_t tcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           tcclDataType_t datatype, int root, tcclComm_t comm,
                           sdaaStream_t stream);
/** Rank r's `sendcount` elements land at recvbuff + r * sendcount on every rank. */
tcclResult_t tcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           tcclDataType_t datatype, tcclComm_t comm, sdaaStream_t stream);
/** sendbuff holds nranks * recvcount elements; rank r receives the reduction of every rank's
 * block r. */
tcclResult_t tcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               tcclDataType_t datatype, tcclRedOp_t op, tcclComm_t comm,
                               sdaaStream_t stream);
tcclResult_t tcclCommDestroy(tcclComm_t comm);
const char* tcclGetErrorString(tcclResult_t result);
/** Optional human-readable version. */
const char* tcclGetVersionString(void);

#ifdef __cplusplus
}
#endif
#endif
