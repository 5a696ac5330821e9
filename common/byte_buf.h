/*
 * A growable byte buffer with a limit, always NUL-terminated: what the HTTP
 * clients collect a response body into (the extender's API client, the
 * controller's gantry-target client, gantryctl's /metrics scraper) and the
 * extender's watch line splitter. The limit keeps a runaway peer from
 * filling memory; a body past it is refused whole, never cut short.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct gantry_buf {
        char *data;     /* NULL until the first byte; free() it */
        size_t len, cap;
        size_t max;     /* the most bytes it takes */
        bool too_large; /* an append went past @max */
};

/*
 * Appends @n bytes of @data. Returns 0, -EMSGSIZE past @max (nothing
 * appended, too_large set), or -ENOMEM.
 */
int gantry_buf_append(struct gantry_buf *b, const char *data, size_t n) GANTRY_MUST_CHECK;

/*
 * A CURLOPT_WRITEFUNCTION appending to the struct gantry_buf given as
 * CURLOPT_WRITEDATA: returns the bytes taken, or 0 (curl then fails the
 * transfer) when the body is too large or memory runs out.
 */
size_t gantry_buf_curl_write(char *ptr, size_t size, size_t nmemb, void *buf);
