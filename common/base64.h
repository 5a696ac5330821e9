/*
 * Decoding standard base64 (RFC 4648 section 4, "+/" alphabet): a cephx key
 * from a CSI secret (the node plugin hands it to the kernel's keyring) and
 * the *-data fields of a kubeconfig (the extender's API client).
 */
#pragma once

#include <stddef.h>

#include "error.h"

/*
 * Decodes @len bytes of @in into @out (room for @size bytes). White space is
 * skipped, "=" padding is optional but nothing may follow it. Returns 0 and
 * the decoded length in *ret_len, or -EINVAL (a character outside the
 * alphabet, data after padding, more than two "=", a lone trailing
 * character) or -ENOBUFS (@out too small). On failure @out is wiped and
 * *ret_len untouched. len / 4 * 3 + 3 bytes are always enough.
 */
int gantry_base64_decode(const char *in, size_t len, unsigned char *out, size_t size,
                         size_t *ret_len) GANTRY_MUST_CHECK;
