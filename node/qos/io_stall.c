/*
 * The IO stall detector (see io_stall.h). An interval between two samples
 * is stalled when the pod's "some" stall covers most of it and the volume
 * got no new IO: both at once is a hang, not a busy reader (a reader flat
 * out waits on IO all the time too, but its IOs move). Consecutive stalled
 * intervals are one stall; its length is the "some" stall they add up to,
 * so it is measured to within a sampling interval at each end.
 */
#include "io_stall.h"

#include <stdio.h>
#include <string.h>

static void end_stall(struct gantry_io_stall *st, enum gantry_io_stall_change *change)
{
        if (st->in_stall && st->reported)
                *change = GANTRY_IO_STALL_ENDED;
        st->in_stall = false;
}

enum gantry_io_stall_change gantry_io_stall_feed(struct gantry_io_stall *st,
                                                 const struct gantry_io_stall_config *config,
                                                 uint64_t t_ms, uint64_t stall_us, uint64_t rios,
                                                 uint64_t wios)
{
        enum gantry_io_stall_change change = GANTRY_IO_STALL_NONE;
        double share = config->stalled_share > 0 ? config->stalled_share : GANTRY_IO_STALL_SHARE;
        uint64_t dt_us, dstall, drios, dwios;

        if (st->have_last && t_ms <= st->last_ms)
                return GANTRY_IO_STALL_NONE;
        if (!st->have_last || stall_us < st->last_stall_us || rios < st->last_rios ||
            wios < st->last_wios) {
                /* the first sample, or the cgroup was made again: a new baseline */
                end_stall(st, &change);
                st->io_seen = false;
                goto keep;
        }
        dt_us = (t_ms - st->last_ms) * 1000;
        dstall = stall_us - st->last_stall_us;
        if (dstall > dt_us)
                dstall = dt_us;
        drios = rios - st->last_rios;
        dwios = wios - st->last_wios;
        if (st->io_seen && drios == 0 && dwios == 0 && (double)dstall >= share * (double)dt_us) {
                if (!st->in_stall) {
                        st->in_stall = true;
                        st->reported = false;
                        st->start_ms = st->last_ms;
                        st->stalled_us = 0;
                        st->writes = st->last_was_write;
                }
                st->stalled_us += dstall;
                st->end_ms = t_ms;
                if (!st->reported && config->threshold_ms &&
                    st->stalled_us >= config->threshold_ms * 1000) {
                        st->reported = true;
                        change = GANTRY_IO_STALL_STARTED;
                }
        } else {
                end_stall(st, &change);
                if (drios || dwios) {
                        st->io_seen = true;
                        st->last_was_write = dwios > drios;
                }
        }
keep:
        st->have_last = true;
        st->last_ms = t_ms;
        st->last_stall_us = stall_us;
        st->last_rios = rios;
        st->last_wios = wios;
        return change;
}

uint64_t gantry_io_stall_length_ms(const struct gantry_io_stall *st)
{
        return st->stalled_us / 1000;
}

char *gantry_io_stall_message(const struct gantry_io_stall_report *r, char *buf, size_t size)
{
        char at[32] = "?", what[48];
        const struct gantry_io_stall_backend *b = &r->backend;
        unsigned long long secs = (unsigned long long)((r->stalled_ms + 500) / 1000);
        struct tm tm;
        size_t n;

        if (!buf || size == 0)
                return buf;
        if (gmtime_r(&r->started_at, &tm))
                strftime(at, sizeof(at), "%H:%M:%S UTC", &tm);
        snprintf(what, sizeof(what), "%s%s%s", r->tier && *r->tier ? r->tier : "",
                 r->tier && *r->tier ? " " : "", r->writes ? "writes" : "reads");
        if (r->ongoing)
                n = (size_t)snprintf(buf, size, "%s stalled since %s on volume %s, %llu s so far",
                                     what, at, r->volume_id ? r->volume_id : "-", secs);
        else
                n = (size_t)snprintf(buf, size, "%s stalled %llu s at %s on volume %s", what, secs,
                                     at, r->volume_id ? r->volume_id : "-");
        if (n >= size || !b->name || !*b->name || !b->state || !*b->state)
                return buf;
        if (b->reason && *b->reason)
                snprintf(buf + n, size - n, ": backend %s %s %s (%s)", b->name,
                         r->ongoing ? "is" : "was", b->state, b->reason);
        else
                snprintf(buf + n, size - n, ": backend %s %s %s", b->name,
                         r->ongoing ? "is" : "was", b->state);
        return buf;
}
