/*
 * A copy's resumable position: watermark plus done set in a ring of bits
 * (position.h), and its text form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "position.h"

#define RING GANTRY_COPIER_WINDOW_MAX

bool gantry_copier_plan_has(const uint64_t *plan, uint64_t i)
{
        return !plan || (plan[i / 64] >> (i % 64)) & 1;
}

uint64_t gantry_copier_plan_next(const uint64_t *plan, uint64_t count, uint64_t i)
{
        uint64_t w;

        if (!plan)
                return i < count ? i : count;
        while (i < count) {
                w = plan[i / 64] >> (i % 64);
                if (w)
                        i += (uint64_t)__builtin_ctzll(w);
                else
                        i = (i / 64 + 1) * 64; /* nothing left in this word */
                if (i < count && gantry_copier_plan_has(plan, i))
                        return i;
        }
        return count;
}

static bool ring_get(const struct gantry_copier_position *p, uint64_t i)
{
        return (p->done[(i % RING) / 64] >> (i % 64)) & 1;
}

static void ring_set(struct gantry_copier_position *p, uint64_t i, bool on)
{
        uint64_t bit = 1ull << (i % 64);

        if (on)
                p->done[(i % RING) / 64] |= bit;
        else
                p->done[(i % RING) / 64] &= ~bit;
}

void gantry_copier_position_init(struct gantry_copier_position *p, uint64_t count, const uint64_t *plan,
                               unsigned window)
{
        memset(p, 0, sizeof(*p));
        p->count = count;
        p->plan = plan;
        p->window = window < 1 ? 1 : window > RING ? RING : window;
        p->watermark = gantry_copier_plan_next(plan, count, 0);
}

bool gantry_copier_position_is_done(const struct gantry_copier_position *p, uint64_t i)
{
        if (i < p->watermark || !gantry_copier_plan_has(p->plan, i))
                return true;
        if (i >= p->watermark + RING)
                return false;
        return ring_get(p, i);
}

bool gantry_copier_position_may_start(const struct gantry_copier_position *p, uint64_t i)
{
        return i < p->watermark + p->window;
}

/* Moves the watermark over done and unplanned objects, clearing their ring bits. */
static void advance(struct gantry_copier_position *p)
{
        while (p->watermark < p->count) {
                if (!gantry_copier_plan_has(p->plan, p->watermark)) {
                        /* unplanned objects are never marked: their bits are clear */
                        p->watermark = gantry_copier_plan_next(p->plan, p->count, p->watermark);
                        continue;
                }
                if (!ring_get(p, p->watermark))
                        return;
                ring_set(p, p->watermark, false);
                p->watermark++;
        }
}

void gantry_copier_position_mark_done(struct gantry_copier_position *p, uint64_t i)
{
        if (i < p->watermark || i >= p->watermark + RING || i >= p->count)
                return;
        ring_set(p, i, true);
        advance(p);
}

bool gantry_copier_position_complete(const struct gantry_copier_position *p)
{
        return p->watermark >= p->count;
}

int gantry_copier_position_encode(const struct gantry_copier_position *p, char *buf, size_t size)
{
        size_t len = 0;
        int n;
        char sep = ':';

        n = snprintf(buf, size, "%llu", (unsigned long long)p->watermark);
        if (n < 0 || (size_t)n >= size)
                return -ENOBUFS;
        len = (size_t)n;
        for (uint64_t i = p->watermark + 1; i < p->watermark + RING && i < p->count; i++) {
                if (!ring_get(p, i))
                        continue;
                n = snprintf(buf + len, size - len, "%c%llu", sep, (unsigned long long)i);
                if (n < 0 || (size_t)n >= size - len)
                        return -ENOBUFS;
                len += (size_t)n;
                sep = ',';
        }
        return (int)len;
}

static int parse_u64(const char *s, char **end, uint64_t *ret)
{
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, end, 10);
        if (errno)
                return -EINVAL;
        *ret = v;
        return 0;
}

int gantry_copier_position_decode(struct gantry_copier_position *p, const char *text)
{
        struct gantry_copier_position q = *p;
        uint64_t w, i, last;
        char *end;

        if (!text || !*text)
                return 0;
        if (parse_u64(text, &end, &w) < 0 || w > p->count)
                return -EINVAL;
        memset(q.done, 0, sizeof(q.done));
        q.watermark = w;
        last = w;
        if (*end == ':') {
                do {
                        if (parse_u64(end + 1, &end, &i) < 0 || i <= last || i >= w + RING ||
                            i >= p->count)
                                return -EINVAL;
                        ring_set(&q, i, true);
                        last = i;
                } while (*end == ',');
        }
        if (*end)
                return -EINVAL;
        advance(&q);
        *p = q;
        return 0;
}
