/*
 * The one mapping from -errno to gRPC status codes and HTTP status codes.
 *
 * Every service answers errors through these functions so that the same
 * failure reads the same in a CSI sidecar's log, in `kubectl describe` and in
 * an HTTP response. gRPC codes are the numbers fixed by the gRPC protocol
 * (grpc/status.h uses the same values), so this module needs no gRPC headers.
 */
#pragma once

enum gantry_grpc_code {
        GANTRY_GRPC_OK = 0,
        GANTRY_GRPC_CANCELLED = 1,
        GANTRY_GRPC_UNKNOWN = 2,
        GANTRY_GRPC_INVALID_ARGUMENT = 3,
        GANTRY_GRPC_DEADLINE_EXCEEDED = 4,
        GANTRY_GRPC_NOT_FOUND = 5,
        GANTRY_GRPC_ALREADY_EXISTS = 6,
        GANTRY_GRPC_PERMISSION_DENIED = 7,
        GANTRY_GRPC_RESOURCE_EXHAUSTED = 8,
        GANTRY_GRPC_FAILED_PRECONDITION = 9,
        GANTRY_GRPC_ABORTED = 10,
        GANTRY_GRPC_OUT_OF_RANGE = 11,
        GANTRY_GRPC_UNIMPLEMENTED = 12,
        GANTRY_GRPC_INTERNAL = 13,
        GANTRY_GRPC_UNAVAILABLE = 14,
        GANTRY_GRPC_DATA_LOSS = 15,
        GANTRY_GRPC_UNAUTHENTICATED = 16,
};

#define GANTRY_GRPC_CODE_COUNT 17

/*
 * The errno of "the driver config lacks what this request needs" (e.g. a
 * volume asks for DH-HMAC-CHAP and dhchapKeyDir is not set): the operator's
 * to mend, not the caller's, so FAILED_PRECONDITION, never a code that
 * blames the caller's input or credentials. ENOANO because no system call
 * returns it: it can only mean this.
 */
#define GANTRY_ENOCONFIG ENOANO

/* Maps an errno (sign ignored; 0 is OK) to a gRPC status code. */
enum gantry_grpc_code gantry_status_grpc_from_errno(int err);

/* Maps an errno (sign ignored; 0 is 200) to an HTTP status code. */
int gantry_status_http_from_errno(int err);

/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for values out of range. */
const char *gantry_status_grpc_name(int code);
