/*
 * The per (pod, volume) sliding window of IO samples (see usage_window.h).
 * Samples live in a small array ordered by time; the first one kept is the
 * last at or before the window's start, so the span covers the whole window
 * once enough samples came. Rates are differences of cumulative counters
 * over the span; "at cap" is judged per sampling interval against the cap
 * in force at its end (bytes/s or IOPS, whichever binds), so a cap
 * changed mid-window is judged fairly.
 */
#include "usage_window.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gantry_usage_window {
        struct gantry_usage_window_config cfg;
        struct gantry_usage_sample samples[GANTRY_USAGE_WINDOW_MAX_SAMPLES];
        unsigned n;
};

void gantry_usage_window_config_default(struct gantry_usage_window_config *c)
{
        c->window_ms = 600000;
        c->at_cap_rate = 0.95;
        c->at_cap_share = 0.80;
        c->underused_share = 0.25;
}

static bool share_ok(double v)
{
        return v > 0 && v <= 1;
}

int gantry_usage_window_new(const struct gantry_usage_window_config *config,
                            struct gantry_usage_window **ret_window)
{
        struct gantry_usage_window_config c;
        struct gantry_usage_window *w;

        if (config)
                c = *config;
        else
                gantry_usage_window_config_default(&c);
        if (c.window_ms == 0 || !share_ok(c.at_cap_rate) || !share_ok(c.at_cap_share) ||
            !share_ok(c.underused_share))
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->cfg = c;
        *ret_window = w;
        return 0;
}

void gantry_usage_window_free(struct gantry_usage_window *w)
{
        free(w);
}

unsigned gantry_usage_window_count(const struct gantry_usage_window *w)
{
        return w ? w->n : 0;
}

static void drop_first(struct gantry_usage_window *w)
{
        memmove(&w->samples[0], &w->samples[1], (w->n - 1) * sizeof(w->samples[0]));
        w->n--;
}

static bool went_back(const struct gantry_usage_sample *prev, const struct gantry_usage_sample *s)
{
        return s->rbytes < prev->rbytes || s->wbytes < prev->wbytes || s->rios < prev->rios ||
               s->wios < prev->wios || s->stall_us < prev->stall_us;
}

int gantry_usage_window_add(struct gantry_usage_window *w, const struct gantry_usage_sample *s)
{
        if (!w || !s)
                return -EINVAL;
        if (w->n > 0) {
                const struct gantry_usage_sample *last = &w->samples[w->n - 1];

                if (s->t_ms <= last->t_ms)
                        return -EINVAL;
                if (went_back(last, s))
                        w->n = 0;
        }
        if (w->n == GANTRY_USAGE_WINDOW_MAX_SAMPLES)
                drop_first(w);
        w->samples[w->n++] = *s;
        /* keep one sample at or before the window's start: the span's origin */
        while (w->n >= 2 && s->t_ms >= w->cfg.window_ms &&
               w->samples[1].t_ms <= s->t_ms - w->cfg.window_ms)
                drop_first(w);
        return 0;
}

static double per_second(uint64_t delta, uint64_t ms)
{
        return ms ? (double)delta * 1000.0 / (double)ms : 0;
}

void gantry_usage_window_summary(const struct gantry_usage_window *w, uint64_t declared_rbps,
                                 uint64_t declared_wbps, struct gantry_usage_summary *ret_summary)
{
        struct gantry_usage_summary s = { 0 };
        const struct gantry_usage_sample *first, *last;
        const uint64_t declared[2] = { declared_rbps, declared_wbps };
        uint64_t at_cap_ms[2] = { 0, 0 }, at_iops_ms[2] = { 0, 0 };

        s.verdict = GANTRY_USAGE_WARMING;
        if (!w || w->n < 2) {
                *ret_summary = s;
                return;
        }
        first = &w->samples[0];
        last = &w->samples[w->n - 1];
        s.span_ms = last->t_ms - first->t_ms;
        s.bps[0] = per_second(last->rbytes - first->rbytes, s.span_ms);
        s.bps[1] = per_second(last->wbytes - first->wbytes, s.span_ms);
        s.iops[0] = per_second(last->rios - first->rios, s.span_ms);
        s.iops[1] = per_second(last->wios - first->wios, s.span_ms);
        s.stall_share = (double)(last->stall_us - first->stall_us) / 1000.0 / (double)s.span_ms;
        if (s.stall_share > 1)
                s.stall_share = 1;

        for (unsigned i = 1; i < w->n; i++) {
                const struct gantry_usage_sample *a = &w->samples[i - 1], *b = &w->samples[i];
                uint64_t dt = b->t_ms - a->t_ms;
                const uint64_t cap[2] = { b->rbps_cap, b->wbps_cap };
                const uint64_t iops_cap[2] = { b->riops_cap, b->wiops_cap };
                const double rate[2] = { per_second(b->rbytes - a->rbytes, dt),
                                         per_second(b->wbytes - a->wbytes, dt) };
                const double iops[2] = { per_second(b->rios - a->rios, dt),
                                         per_second(b->wios - a->wios, dt) };

                /* at the cap: the bytes/s cap or the IOPS cap, whichever binds */
                for (int d = 0; d < 2; d++) {
                        bool by_bps = cap[d] && rate[d] >= w->cfg.at_cap_rate * (double)cap[d];
                        bool by_iops = iops_cap[d] &&
                                       iops[d] >= w->cfg.at_cap_rate * (double)iops_cap[d];

                        if (by_bps || by_iops)
                                at_cap_ms[d] += dt;
                        if (by_iops && !by_bps)
                                at_iops_ms[d] += dt;
                }
        }
        for (int d = 0; d < 2; d++) {
                s.at_cap_share[d] = (double)at_cap_ms[d] / (double)s.span_ms;
                s.at_iops_cap[d] = at_cap_ms[d] && at_iops_ms[d] * 2 > at_cap_ms[d];
                s.used_share[d] = declared[d] ? s.bps[d] / (double)declared[d] : 0;
        }
        s.iops_cap[0] = last->riops_cap;
        s.iops_cap[1] = last->wiops_cap;

        if (s.span_ms < w->cfg.window_ms) {
                s.verdict = GANTRY_USAGE_WARMING;
        } else {
                s.verdict = GANTRY_USAGE_FINE;
                for (int d = 0; d < 2 && s.verdict == GANTRY_USAGE_FINE; d++)
                        if (s.at_cap_share[d] >= w->cfg.at_cap_share) {
                                s.verdict = GANTRY_USAGE_AT_CAP;
                                s.verdict_direction = (enum gantry_usage_direction)d;
                        }
                for (int d = 0; d < 2 && s.verdict == GANTRY_USAGE_FINE; d++)
                        if (declared[d] && s.used_share[d] < w->cfg.underused_share) {
                                s.verdict = GANTRY_USAGE_UNDERUSED;
                                s.verdict_direction = (enum gantry_usage_direction)d;
                        }
        }
        *ret_summary = s;
}

/* Bytes/s as the scheduler's annotations speak: Gbps (10^9 bits/s). */
static const char *fmt_gbps(double bytes_per_s, char *buf, size_t size)
{
        double g = bytes_per_s * 8 / 1e9;

        if (g >= 10)
                snprintf(buf, size, "%.0f Gbps", g);
        else if (g >= 1)
                snprintf(buf, size, "%.1f Gbps", g);
        else
                snprintf(buf, size, "%.2f Gbps", g);
        return buf;
}

static const char *fmt_window(uint64_t ms, char *buf, size_t size)
{
        if (ms >= 60000 && ms % 60000 == 0)
                snprintf(buf, size, "%llu min", (unsigned long long)(ms / 60000));
        else
                snprintf(buf, size, "%llu s", (unsigned long long)((ms + 500) / 1000));
        return buf;
}

char *gantry_usage_window_message(const struct gantry_usage_summary *s, uint64_t window_ms,
                                  uint64_t cap_bps, uint64_t declared_bps, char *buf, size_t size)
{
        const int d = s->verdict_direction;
        const char *verb = d == GANTRY_USAGE_READ ? "reads" : "writes";
        char a[32], b[32], win[32];

        if (!size)
                return buf;
        buf[0] = '\0';
        fmt_window(window_ms, win, sizeof(win));
        if (s->verdict == GANTRY_USAGE_AT_CAP && s->at_iops_cap[d])
                snprintf(buf, size,
                         "%s at its %llu IOPS cap %.0f %% of the last %s: declare more, or expect slower epochs",
                         verb, (unsigned long long)s->iops_cap[d], s->at_cap_share[d] * 100, win);
        else if (s->verdict == GANTRY_USAGE_AT_CAP)
                snprintf(buf, size,
                         "%s at its %s cap %.0f %% of the last %s: declare more, or expect slower epochs",
                         verb, fmt_gbps((double)cap_bps, a, sizeof(a)), s->at_cap_share[d] * 100, win);
        else if (s->verdict == GANTRY_USAGE_UNDERUSED)
                snprintf(buf, size,
                         "%s %s of the %s it declared (%.0f %%) over the last %s: declare less, "
                         "and the scheduler can place more on its links",
                         verb, fmt_gbps(s->bps[d], a, sizeof(a)),
                         fmt_gbps((double)declared_bps, b, sizeof(b)), s->used_share[d] * 100, win);
        return buf;
}

const char *gantry_usage_verdict_reason(enum gantry_usage_verdict v)
{
        switch (v) {
        case GANTRY_USAGE_AT_CAP: return "BandwidthAtCap";
        case GANTRY_USAGE_UNDERUSED: return "BandwidthUnderused";
        default: return NULL;
        }
}
