/*
 * Errors that carry a message for the user.
 *
 * Functions return 0 (or a positive value) on success and -errno on failure
 * (systemd, SPDK). Where the caller must tell a user *what* was wrong --
 * a CSI status message, an HTTP 400 body, a config error -- the function
 * also fills a struct gantry_error, whose message names the offending field:
 *
 *   return gantry_error_set(err, EINVAL, "parameters.pool: must not be empty");
 *
 * The errno is later turned into a gRPC or HTTP status by common/status.h,
 * the one mapping used everywhere.
 */
#pragma once

#include <stddef.h>

#define GANTRY_ERROR_MSG_MAX 512

/*
 * On a function whose failure a caller must look at (an I/O step, a parse):
 * ignoring its result is a compile error under -Werror. A caller that has
 * nothing to do on failure says so in code (a log line), not with a cast,
 * which gcc does not accept for this attribute anyway.
 */
#define GANTRY_MUST_CHECK __attribute__((warn_unused_result))

struct gantry_error {
        int err;                        /* positive errno, 0 when unset */
        char msg[GANTRY_ERROR_MSG_MAX]; /* user-facing text; never a secret */
};

/*
 * Records @errnum (positive or negative) and a formatted message in @e (which
 * may be NULL). Returns -abs(@errnum) so callers can `return
 * gantry_error_set(...)`. A second call overwrites the first.
 */
int gantry_error_set(struct gantry_error *e, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Clears @e to "no error". */
void gantry_error_clear(struct gantry_error *e);

/*
 * Prefixes the message already in @e with "@prefix: " (e.g. a file name or
 * the enclosing field). Keeps the errno. Returns -e->err.
 */
int gantry_error_prefix(struct gantry_error *e, const char *prefix);
