/*
 * A small append-only JSON text writer for the extender's large replies
 * (one entry per node: 10,000 jansson objects per request cost more than the
 * decision itself). Strings are escaped as RFC 8259 requires. An allocation
 * failure is remembered and reported once by json_out_finish().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct json_out {
        char *buf;
        size_t len, cap;
        bool failed;
};

/* Appends raw text (already JSON). */
void json_out_raw(struct json_out *o, const char *text);
/* Appends @s as a JSON string, quoted and escaped. */
void json_out_string(struct json_out *o, const char *s);
/* Appends a decimal integer. */
void json_out_int(struct json_out *o, long v);
/* Returns the NUL-terminated text (caller frees), or NULL when out of memory. */
char *json_out_finish(struct json_out *o);
