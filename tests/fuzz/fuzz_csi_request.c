/*
 * Fuzz target: CSI request unpacking, validation and request logging -- the
 * code that sees a caller's bytes before any handler does.
 *
 * Input: one byte choosing the method (index into the method table, modulo
 * its length), then the request's protobuf bytes. Built with libFuzzer under
 * clang (-DGANTRY_FUZZ=ON); in the normal build, standalone_driver.c replays
 * the seed corpus under CTest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "csi_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_csi_method *methods;
        const struct gantry_csi_method *m;
        struct gantry_error err = { 0 };
        ProtobufCMessage *req;
        size_t n;
        char *text;

        if (size < 1)
                return 0;
        methods = gantry_csi_methods(&n);
        m = &methods[data[0] % n];
        req = protobuf_c_message_unpack(m->request, NULL, size - 1, data + 1);
        if (!req)
                return 0;
        (void)gantry_csi_validate(m, req, &err);
        text = gantry_csi_request_to_log(req);
        free(text);
        protobuf_c_message_free_unpacked(req, NULL);
        return 0;
}
