/*
 * Fuzz target: the kube client's parsers of bytes from outside -- the
 * kubeconfig (libyaml document walk, base64 data) and the watch stream
 * (line splitting across arbitrary chunk boundaries, event decoding, the
 * object key).
 *
 * Input: one byte choosing the parser (even: kubeconfig, odd: watch
 * stream), then the bytes. For the watch stream the selector byte also sets
 * the chunk size the bytes arrive in, so lines split at every offset.
 * Built with libFuzzer under clang (-DGANTRY_FUZZ=ON); in the normal build
 * standalone_driver.c replays tests/fuzz/corpus/kube_parse under CTest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(void *ctx, char *line, size_t n)
{
        struct kube_watch_event ev;
        struct gantry_error err;
        char key[320];

        (void)ctx;
        if (kube_watch_decode(line, n, &ev, &err) == 0) {
                (void)kube_object_key(ev.object, key, sizeof(key));
                json_decref(ev.object);
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_error err;

        if (size < 1)
                return 0;
        gantry_log_set_level(GANTRY_LOG_ERROR);
        if (data[0] % 2 == 0) {
                struct kube_conn *conn = NULL;

                /* file references resolve under a folder that does not exist */
                if (kube_conn_from_kubeconfig((const char *)data + 1, size - 1, "fuzz", "/nonexistent-fuzz",
                                              NULL, &conn, &err) == 0)
                        kube_conn_free(conn);
        } else {
                struct kube_lines lines;
                size_t chunk = (size_t)(data[0] >> 1) + 1;

                kube_lines_init(&lines, 4096);
                for (size_t off = 1; off < size; off += chunk) {
                        size_t n = size - off < chunk ? size - off : chunk;

                        if (kube_lines_feed(&lines, (const char *)data + off, n, on_line, NULL) < 0)
                                break;
                }
                kube_lines_clear(&lines);
        }
        return 0;
}
