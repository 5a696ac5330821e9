/*
 * The per-call arena: every piece of a response a handler builds comes from
 * here and is freed in one go after the response is packed and sent. This is
 * what lets handlers build nested protobuf-c messages without free code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csi_internal.h"

struct arena_block {
        struct arena_block *next;
        max_align_t data[];
};

struct gantry_csi_arena {
        struct arena_block *blocks;
};

struct gantry_csi_arena *gantry_csi_arena_new(void)
{
        return calloc(1, sizeof(struct gantry_csi_arena));
}

void gantry_csi_arena_free(struct gantry_csi_arena *a)
{
        if (!a)
                return;
        while (a->blocks) {
                struct arena_block *b = a->blocks;
                a->blocks = b->next;
                free(b);
        }
        free(a);
}

void *gantry_csi_call_alloc(struct gantry_csi_call *call, size_t size)
{
        struct arena_block *b;

        if (size > SIZE_MAX - sizeof(*b))
                return NULL;
        b = calloc(1, sizeof(*b) + size);
        if (!b)
                return NULL;
        b->next = call->arena->blocks;
        call->arena->blocks = b;
        return b->data;
}

char *gantry_csi_call_strdup(struct gantry_csi_call *call, const char *s)
{
        size_t n = strlen(s) + 1;
        char *p = gantry_csi_call_alloc(call, n);

        if (p)
                memcpy(p, s, n);
        return p;
}

char *gantry_csi_call_printf(struct gantry_csi_call *call, const char *fmt, ...)
{
        va_list ap;
        char *tmp, *p;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&tmp, fmt, ap);
        va_end(ap);
        if (n < 0)
                return NULL;
        p = gantry_csi_call_strdup(call, tmp);
        free(tmp);
        return p;
}
