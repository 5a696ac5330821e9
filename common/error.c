/*
 * User-facing errors with an errno and a message; see error.h.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gantry_error_set(struct gantry_error *e, int errnum, const char *fmt, ...)
{
        int err = errnum < 0 ? -errnum : errnum;

        if (e) {
                va_list ap;
                e->err = err;
                va_start(ap, fmt);
                vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
                va_end(ap);
        }
        return -err;
}

void gantry_error_clear(struct gantry_error *e)
{
        if (!e)
                return;
        e->err = 0;
        e->msg[0] = '\0';
}

int gantry_error_prefix(struct gantry_error *e, const char *prefix)
{
        char tmp[GANTRY_ERROR_MSG_MAX];
        int n;

        if (!e)
                return 0;
        n = snprintf(tmp, sizeof(tmp), "%s: ", prefix);
        if (n < 0 || (size_t)n >= sizeof(tmp))
                return -e->err;
        /* the message is cut, not the prefix that locates it */
        memccpy(tmp + n, e->msg, '\0', sizeof(tmp) - (size_t)n);
        tmp[sizeof(tmp) - 1] = '\0';
        memcpy(e->msg, tmp, sizeof(e->msg));
        return -e->err;
}
