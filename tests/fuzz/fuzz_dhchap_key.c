/*
 * Fuzz target: the DHHC-1 key parser (common/dhchap_key.c), which reads the
 * keys gantry-target receives over JSON-RPC and the node plugin receives in
 * CSI secrets. Input: the key text. A key that parses must format back to
 * text that parses to the same secret.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dhchap_key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_dhchap_key k, k2;
        struct gantry_error err = { 0 };
        char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];

        if (gantry_dhchap_key_parse((const char *)data, size, &k, &err) < 0)
                return 0;
        gantry_dhchap_key_format(&k, out);
        if (gantry_dhchap_key_parse(out, strlen(out), &k2, &err) < 0 || k2.len != k.len ||
            k2.transform != k.transform || memcmp(k.secret, k2.secret, k.len) != 0)
                abort();
        return 0;
}
