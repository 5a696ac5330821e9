/*
 * What a cgroup v2 directory says about one block device's IO: the
 * device's line of `io.stat` (bytes and IOs read, written, discarded since
 * the cgroup was made) and `io.pressure` (the microseconds some or all of
 * the cgroup's tasks waited on IO). The bandwidth sampler reads these for
 * every pod and volume it caps; the parsers are pure so that they can be
 * unit-tested and fuzzed on captured contents.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Upper bound on the bytes read from one io.stat / io.pressure file. */
#define GANTRY_IO_USAGE_FILE_MAX (64 * 1024)

/* One device's counters from io.stat; the kernel omits keys it does not
 * track (dbytes/dios before 5.x), which stay 0. */
struct gantry_io_stat {
        uint64_t rbytes;
        uint64_t wbytes;
        uint64_t rios;
        uint64_t wios;
        uint64_t dbytes;
        uint64_t dios;
};

/* io.pressure's cumulative totals, microseconds. */
struct gantry_io_pressure {
        uint64_t some_us;
        uint64_t full_us;
        bool has_full; /* the "full" line was there */
};

struct gantry_io_usage {
        struct gantry_io_stat stat;
        struct gantry_io_pressure pressure;
        bool has_pressure; /* io.pressure exists (PSI compiled in and enabled) */
};

/*
 * Finds the line of device @major:@minor in the io.stat text @text (@len
 * bytes, need not be NUL-terminated) and parses its key=value pairs; unknown
 * keys are skipped. On success returns 0 and fills *ret_stat. Returns
 * -ENOENT when the device has no line (the cgroup did no IO to it yet: the
 * caller counts that as zeros), -EINVAL when the device's line is malformed
 * (a value that is not a decimal number, a token without '=').
 */
int gantry_io_usage_parse_stat(const char *text, size_t len, unsigned major, unsigned minor,
                               struct gantry_io_stat *ret_stat) GANTRY_MUST_CHECK;

/*
 * Parses io.pressure text (@len bytes): the "total=" of the "some" line
 * (required) and of the "full" line (optional). Returns 0 and fills
 * *ret_pressure, or -EINVAL when there is no "some" line with a total.
 */
int gantry_io_usage_parse_pressure(const char *text, size_t len,
                                   struct gantry_io_pressure *ret_pressure) GANTRY_MUST_CHECK;

/*
 * Reads @cgroup_dir/io.stat for @major:@minor and @cgroup_dir/io.pressure.
 * A device with no line reads as zeros; a missing io.pressure leaves
 * has_pressure false. Returns 0 and fills *ret_usage, or -errno with @err
 * naming the file ("/sys/fs/cgroup/.../io.stat: No such file or directory":
 * the cgroup is gone, or is not cgroup v2 with the io controller enabled).
 */
int gantry_io_usage_read(const char *cgroup_dir, unsigned major, unsigned minor,
                         struct gantry_io_usage *ret_usage,
                         struct gantry_error *err) GANTRY_MUST_CHECK;
