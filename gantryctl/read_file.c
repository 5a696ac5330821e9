/*
 * Whole-file reads for gantryctl's inputs; see read_file.h. The reading
 * itself is gantry_attr_read()'s (common/attr_file.c): a file is one value
 * here too, only a bigger one.
 */
#include "read_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr_file.h"

int gantryctl_read_file(const char *path, size_t max, char **ret, struct gantry_error *err)
{
        char *buf = malloc(max + 1);
        ssize_t n;

        if (!buf)
                return gantry_error_set(err, ENOMEM, "%s: out of memory", path);
        n = gantry_attr_read(path, buf, max + 1);
        if (n < 0) {
                free(buf);
                if (n == -EFBIG)
                        return gantry_error_set(err, EFBIG, "%s: larger than %zu bytes", path, max);
                return gantry_error_set(err, (int)-n, "%s: %s", path, strerror((int)-n));
        }
        *ret = buf;
        return 0;
}
