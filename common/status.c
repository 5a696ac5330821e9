/*
 * errno -> gRPC status and errno -> HTTP status; see status.h.
 *
 * The table follows the CSI spec's own use of codes: bad input is
 * INVALID_ARGUMENT, a concurrent operation on the same volume is ABORTED, a
 * name reused with other parameters is ALREADY_EXISTS, a backend that cannot
 * be reached is UNAVAILABLE.
 */
#include "status.h"

#include <errno.h>
#include <stddef.h>

struct errno_row {
        int err;
        enum gantry_grpc_code grpc;
        int http;
};

static const struct errno_row rows[] = {
        { EINVAL, GANTRY_GRPC_INVALID_ARGUMENT, 400 },
        { EBADMSG, GANTRY_GRPC_INVALID_ARGUMENT, 400 },
        { E2BIG, GANTRY_GRPC_INVALID_ARGUMENT, 413 },
        { EMSGSIZE, GANTRY_GRPC_RESOURCE_EXHAUSTED, 413 },
        { ENOENT, GANTRY_GRPC_NOT_FOUND, 404 },
        { ENODEV, GANTRY_GRPC_NOT_FOUND, 404 },
        { ENXIO, GANTRY_GRPC_NOT_FOUND, 404 },
        { EEXIST, GANTRY_GRPC_ALREADY_EXISTS, 409 },
        { EBUSY, GANTRY_GRPC_ABORTED, 409 },
        { EALREADY, GANTRY_GRPC_ABORTED, 409 },
        { EINPROGRESS, GANTRY_GRPC_ABORTED, 409 },
        { ENOSPC, GANTRY_GRPC_RESOURCE_EXHAUSTED, 507 },
        { EDQUOT, GANTRY_GRPC_RESOURCE_EXHAUSTED, 507 },
        { ENOMEM, GANTRY_GRPC_RESOURCE_EXHAUSTED, 503 },
        { EMFILE, GANTRY_GRPC_RESOURCE_EXHAUSTED, 503 },
        { EACCES, GANTRY_GRPC_PERMISSION_DENIED, 403 },
        { EPERM, GANTRY_GRPC_PERMISSION_DENIED, 403 },
        { ENOTCONN, GANTRY_GRPC_UNAVAILABLE, 503 },
        { ECONNREFUSED, GANTRY_GRPC_UNAVAILABLE, 503 },
        { ECONNRESET, GANTRY_GRPC_UNAVAILABLE, 503 },
        { EHOSTUNREACH, GANTRY_GRPC_UNAVAILABLE, 503 },
        { ENETUNREACH, GANTRY_GRPC_UNAVAILABLE, 503 },
        { EAGAIN, GANTRY_GRPC_UNAVAILABLE, 503 },
        { ESHUTDOWN, GANTRY_GRPC_UNAVAILABLE, 503 },
        { ETIMEDOUT, GANTRY_GRPC_DEADLINE_EXCEEDED, 504 },
        { ECANCELED, GANTRY_GRPC_CANCELLED, 499 },
        { ENOTSUP, GANTRY_GRPC_UNIMPLEMENTED, 501 },
        { ENOSYS, GANTRY_GRPC_UNIMPLEMENTED, 501 },
        { EROFS, GANTRY_GRPC_FAILED_PRECONDITION, 409 },
        { ENOTEMPTY, GANTRY_GRPC_FAILED_PRECONDITION, 409 },
        { ESTALE, GANTRY_GRPC_FAILED_PRECONDITION, 409 },
        { ENOPKG, GANTRY_GRPC_FAILED_PRECONDITION, 409 }, /* a kernel module the node needs */
        { GANTRY_ENOCONFIG, GANTRY_GRPC_FAILED_PRECONDITION, 500 }, /* the server's config, not the request */
        { ERANGE, GANTRY_GRPC_OUT_OF_RANGE, 400 },
        { EOVERFLOW, GANTRY_GRPC_OUT_OF_RANGE, 400 },
        { EUCLEAN, GANTRY_GRPC_DATA_LOSS, 500 },
        { EKEYREJECTED, GANTRY_GRPC_UNAUTHENTICATED, 401 },
        { ENOKEY, GANTRY_GRPC_UNAUTHENTICATED, 401 },
};

static const struct errno_row *find(int err)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
                if (rows[i].err == err)
                        return &rows[i];
        return NULL;
}

enum gantry_grpc_code gantry_status_grpc_from_errno(int err)
{
        const struct errno_row *r;

        if (err == 0)
                return GANTRY_GRPC_OK;
        r = find(err);
        return r ? r->grpc : GANTRY_GRPC_INTERNAL;
}

int gantry_status_http_from_errno(int err)
{
        const struct errno_row *r;

        if (err == 0)
                return 200;
        r = find(err);
        return r ? r->http : 500;
}

const char *gantry_status_grpc_name(int code)
{
        static const char *const names[GANTRY_GRPC_CODE_COUNT] = {
                "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
        };

        if (code < 0 || code >= GANTRY_GRPC_CODE_COUNT)
                return "UNKNOWN";
        return names[code];
}
