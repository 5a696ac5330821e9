/*
 * The bounded, NUL-terminated byte buffer of the HTTP clients; see
 * byte_buf.h. It grows by doubling, so a body read in many small pieces
 * costs few reallocations.
 */
#include "byte_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gantry_buf_append(struct gantry_buf *b, const char *data, size_t n)
{
        if (b->len + n > b->max) {
                b->too_large = true;
                return -EMSGSIZE;
        }
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                char *nb;

                while (cap < b->len + n + 1)
                        cap *= 2;
                nb = realloc(b->data, cap);
                if (!nb)
                        return -ENOMEM;
                b->data = nb;
                b->cap = cap;
        }
        memcpy(b->data + b->len, data, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

size_t gantry_buf_curl_write(char *ptr, size_t size, size_t nmemb, void *buf)
{
        size_t n = size * nmemb;

        return gantry_buf_append(buf, ptr, n) < 0 ? 0 : n;
}
