/*
 * Append-only JSON text writer; see json_out.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

static bool reserve(struct json_out *o, size_t more)
{
        size_t cap;
        char *p;

        if (o->failed)
                return false;
        if (o->len + more + 1 <= o->cap)
                return true;
        cap = o->cap ? o->cap : 4096;
        while (cap < o->len + more + 1)
                cap *= 2;
        p = realloc(o->buf, cap);
        if (!p) {
                o->failed = true;
                return false;
        }
        o->buf = p;
        o->cap = cap;
        return true;
}

static void append(struct json_out *o, const char *s, size_t n)
{
        if (!reserve(o, n))
                return;
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = '\0';
}

void json_out_raw(struct json_out *o, const char *text)
{
        append(o, text, strlen(text));
}

void json_out_string(struct json_out *o, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        const unsigned char *run = p;
        char esc[8];

        append(o, "\"", 1);
        for (; *p; p++) {
                if (*p >= 0x20 && *p != '"' && *p != '\\')
                        continue;
                append(o, (const char *)run, (size_t)(p - run));
                if (*p == '"' || *p == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)*p;
                        append(o, esc, 2);
                } else {
                        snprintf(esc, sizeof(esc), "\\u%04x", *p);
                        append(o, esc, 6);
                }
                run = p + 1;
        }
        append(o, (const char *)run, (size_t)(p - run));
        append(o, "\"", 1);
}

void json_out_int(struct json_out *o, long v)
{
        /* digits by hand: a prioritize reply writes one per node, and
         * snprintf's format parsing was a visible part of it at 10,000 */
        char num[24], *p = num + sizeof(num);
        unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;

        do {
                *--p = (char)('0' + u % 10);
                u /= 10;
        } while (u);
        if (v < 0)
                *--p = '-';
        append(o, p, (size_t)(num + sizeof(num) - p));
}

char *json_out_finish(struct json_out *o)
{
        if (o->failed || !reserve(o, 0)) {
                free(o->buf);
                *o = (struct json_out){ 0 };
                return NULL;
        }
        o->buf[o->len] = '\0';
        return o->buf;
}
