/*
 * libFuzzer target for `gantryctl usage`'s reader of the node plugins'
 * Prometheus text (gantryctl/usage_report.c): the bytes come from the
 * network. The input, copied into a buffer of exactly its size (so ASan sees
 * a read past it), is folded into a report, which is then rendered as JSON
 * and as the table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usage_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_usage_report *r = gantry_usage_report_new();
        struct gantry_error err = { 0 };
        char *buf = malloc(size ? size : 1);
        FILE *devnull = fopen("/dev/null", "w");

        if (r && buf && devnull && size <= 1024 * 1024) {
                memcpy(buf, data, size);
                if (gantry_usage_report_add_text(r, buf, size, "fuzz", &err) >= 0 ||
                    err.msg[0]) {
                        json_decref(gantry_usage_report_json(r));
                        gantry_usage_report_table(r, devnull);
                }
        }
        if (devnull)
                fclose(devnull);
        free(buf);
        gantry_usage_report_free(r);
        return 0;
}
