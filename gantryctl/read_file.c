/*
 * Whole-file reads for gantryctl's inputs; see read_file.h.
 */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gantryctl_read_file(const char *path, size_t max, char **ret, struct gantry_error *err)
{
        FILE *f = fopen(path, "re");
        char *buf;
        size_t n;

        if (!f)
                return gantry_error_set(err, errno, "%s: %s", path, strerror(errno));
        buf = malloc(max + 1);
        if (!buf) {
                fclose(f);
                return -ENOMEM;
        }
        n = fread(buf, 1, max, f);
        if (ferror(f) || (n == max && fgetc(f) != EOF)) {
                fclose(f);
                free(buf);
                return gantry_error_set(err, EFBIG, "%s: unreadable or larger than %zu bytes", path, max);
        }
        fclose(f);
        buf[n] = '\0';
        *ret = buf;
        return 0;
}
