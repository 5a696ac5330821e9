/*
 * Fuzz target for the cgroup v2 io.stat and io.pressure parsers
 * (node/qos/io_usage.c). The node plugin reads these files from pod
 * cgroups, which a pod's own processes cannot write, but the parser must
 * still take any bytes within its length without reading past them. The
 * input is given to both parsers, for the device of its first line and for
 * two fixed ones (a krbd and an NVMe major). The copy into a buffer of
 * exactly the input's size lets ASan catch a read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io_usage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_io_stat st;
        struct gantry_io_pressure pr;
        unsigned maj = 0, min = 0, *p = &maj;
        char *buf;

        if (size > GANTRY_IO_USAGE_FILE_MAX)
                return 0;
        buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        for (size_t i = 0; i < size && i < 24; i++) {
                if (buf[i] == ':' && p == &maj)
                        p = &min;
                else if (buf[i] >= '0' && buf[i] <= '9')
                        *p = *p * 10 + (unsigned)(buf[i] - '0');
                else
                        break;
        }
        if (gantry_io_usage_parse_stat(buf, size, maj, min, &st) == 0 && st.rios > st.rbytes + 1)
                (void)st; /* any values are fine: only memory safety is checked */
        if (gantry_io_usage_parse_stat(buf, size, 251, 0, &st) < 0)
                (void)st;
        if (gantry_io_usage_parse_stat(buf, size, 259, 1, &st) < 0)
                (void)st;
        if (gantry_io_usage_parse_pressure(buf, size, &pr) < 0)
                (void)pr;
        free(buf);
        return 0;
}
