/*
 * Reading an input file of gantryctl (plan input, cluster, trace) whole,
 * with a size limit, errors naming the file.
 */
#pragma once

#include <stddef.h>

#include "error.h"

/*
 * Reads @path (at most @max bytes) into a NUL-terminated *ret (free()),
 * without trailing newlines and spaces. Returns 0, or -errno with @err
 * naming the file (-EFBIG when too large).
 */
int gantryctl_read_file(const char *path, size_t max, char **ret, struct gantry_error *err);
