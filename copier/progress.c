/*
 * Progress arithmetic of a copy: the smoothed rate, the ETA and the
 * operator's one-line text (progress.h). No clock here: callers pass time.
 */
#include <math.h>
#include <stdio.h>

#include "progress.h"

#define MIN_SAMPLE_NS 200000000ull

void gantry_copier_rate_start(struct gantry_copier_rate *m, uint64_t now_ns, uint64_t bytes)
{
        m->last_ns = now_ns;
        m->last_bytes = bytes;
        m->rate = 0;
}

double gantry_copier_rate_update(struct gantry_copier_rate *m, uint64_t now_ns, uint64_t bytes)
{
        double dt, inst, alpha;

        if (now_ns <= m->last_ns || now_ns - m->last_ns < MIN_SAMPLE_NS)
                return m->rate;
        dt = (double)(now_ns - m->last_ns) / 1e9;
        inst = bytes >= m->last_bytes ? (double)(bytes - m->last_bytes) / dt : 0;
        if (m->rate == 0) {
                m->rate = inst; /* the first interval is the best guess there is */
        } else {
                alpha = 1.0 - exp(-dt / GANTRY_COPIER_RATE_TAU_S);
                m->rate += alpha * (inst - m->rate);
        }
        m->last_ns = now_ns;
        m->last_bytes = bytes;
        return m->rate;
}

double gantry_copier_eta(uint64_t remaining, double rate)
{
        if (remaining == 0)
                return 0;
        if (!(rate > 0))
                return -1;
        return (double)remaining / rate;
}

void gantry_copier_format_rate(double bytes_per_s, char *buf, size_t size)
{
        static const char *const units[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s" };
        unsigned u = 0;

        while (bytes_per_s >= 1000 && u + 1 < sizeof(units) / sizeof(units[0])) {
                bytes_per_s /= 1000;
                u++;
        }
        snprintf(buf, size, bytes_per_s < 10 && u ? "%.1f %s" : "%.0f %s", bytes_per_s, units[u]);
}

void gantry_copier_format_duration(double seconds, char *buf, size_t size)
{
        unsigned long long s;

        if (seconds < 0) {
                snprintf(buf, size, "?");
                return;
        }
        s = (unsigned long long)llround(seconds);
        if (s < 90)
                snprintf(buf, size, "%llu s", s);
        else if (s < 90 * 60)
                snprintf(buf, size, "%llu min", (s + 30) / 60);
        else
                snprintf(buf, size, "%llu h %llu min", s / 3600, (s % 3600 + 30) / 60 % 60);
}

int gantry_copier_progress_format(const struct gantry_copier_progress *p, char *buf, size_t size)
{
        unsigned pct;
        char rate[32], eta[32];

        if (!p->planned)
                return snprintf(buf, size, "planning");
        if (p->bytes_done >= p->bytes_total)
                return snprintf(buf, size, "100 %%");
        /* rounded down: 100 % only when done */
        pct = (unsigned)((long double)p->bytes_done * 100 / p->bytes_total);
        if (!(p->rate > 0))
                return snprintf(buf, size, "%u %%, starting", pct);
        gantry_copier_format_rate(p->rate, rate, sizeof(rate));
        gantry_copier_format_duration(p->eta_seconds, eta, sizeof(eta));
        return snprintf(buf, size, "%u %%, %s, about %s left", pct, rate, eta);
}
