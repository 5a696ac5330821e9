/*
 * The smoother of a backend's samples (see backend_state.h): which raw
 * state a sample shows, the rate averages over a sliding window, and the
 * hysteresis that keeps the published state from flapping.
 */
#include <stdio.h>
#include <string.h>

#include "backend_state.h"

const char *gantry_observed_state_name(enum gantry_observed_state state)
{
        static const char *const names[] = { "Healthy", "Degraded", "Recovering", "Unavailable" };

        return (unsigned)state < GANTRY_OBSERVED_STATE_COUNT ? names[state] : "?";
}

/* An OSD (or a host, rack, ... of them) down: OSD_DOWN, OSD_HOST_DOWN, ... */
static bool is_down_check(const char *code)
{
        size_t n = strlen(code);

        return strncmp(code, "OSD_", 4) == 0 && n >= 8 && strcmp(code + n - 5, "_DOWN") == 0;
}

static bool has_check(const struct gantry_backend_sample *s, const char *code)
{
        for (size_t i = 0; i < s->n_checks; i++)
                if (strcmp(s->checks[i].code, code) == 0)
                        return true;
        return false;
}

static bool is_degraded(const struct gantry_backend_sample *s)
{
        for (size_t i = 0; i < s->n_checks; i++)
                if (is_down_check(s->checks[i].code))
                        return true;
        return has_check(s, "PG_DEGRADED") || s->pgs_degraded > 0 || s->degraded_ratio > 0;
}

static bool has_inactive(const struct gantry_backend_sample *s)
{
        return s->pgs_inactive > 0 || has_check(s, "PG_AVAILABILITY");
}

/* The state of @s; inactive PGs count only when @count_inactive (see the smoother's grace). */
static enum gantry_observed_state state_of(const struct gantry_backend_sample *s, bool count_inactive)
{
        if (!s->reachable || (count_inactive && has_inactive(s)))
                return GANTRY_OBSERVED_UNAVAILABLE;
        /* a rate alone, with every PG clean, is what is left of a recovery that ended */
        if (s->pgs_recovering > 0 || (s->recovery_bytes_per_sec > 0 && s->pgs_unclean > 0))
                return GANTRY_OBSERVED_RECOVERING;
        if (is_degraded(s))
                return GANTRY_OBSERVED_DEGRADED;
        return GANTRY_OBSERVED_HEALTHY;
}

enum gantry_observed_state gantry_backend_sample_state(const struct gantry_backend_sample *s)
{
        return state_of(s, true);
}

/* Whether check @code is one that bears on @state (the reason names only those). */
static bool check_bears_on(const char *code, enum gantry_observed_state state)
{
        if (state == GANTRY_OBSERVED_HEALTHY)
                return false;
        if (strcmp(code, "PG_AVAILABILITY") == 0)
                return true;
        return state != GANTRY_OBSERVED_UNAVAILABLE &&
               (is_down_check(code) || strcmp(code, "PG_DEGRADED") == 0 ||
                strcmp(code, "OBJECT_MISPLACED") == 0 || strncmp(code, "PG_RECOVERY", 11) == 0 ||
                strncmp(code, "PG_BACKFILL", 11) == 0);
}

/* Appends "; " (unless first) and the formatted text to @buf, truncating. */
static void append(char *buf, size_t size, const char *text)
{
        size_t n = strlen(buf);

        if (n + 1 >= size)
                return;
        snprintf(buf + n, size - n, "%s%s", n ? "; " : "", text);
}

/* One line a user can read: why the sample shows @state. */
static void sample_reason(const struct gantry_backend_sample *s, enum gantry_observed_state state,
                          char *buf, size_t size)
{
        char part[GANTRY_BACKEND_CHECK_CODE_MAX + GANTRY_BACKEND_CHECK_MSG_MAX + 8];

        buf[0] = '\0';
        if (!s->reachable) {
                snprintf(buf, size, "unreachable: %s", s->error[0] ? s->error : "no answer");
                return;
        }
        if (state == GANTRY_OBSERVED_UNAVAILABLE && s->pgs_inactive > 0) {
                snprintf(part, sizeof(part), "%u of %u PGs inactive", s->pgs_inactive, s->pgs);
                append(buf, size, part);
        }
        if (state == GANTRY_OBSERVED_RECOVERING && s->pgs_recovering > 0) {
                snprintf(part, sizeof(part), "%u of %u PGs recovering or waiting to",
                         s->pgs_recovering, s->pgs);
                append(buf, size, part);
        }
        for (size_t i = 0; i < s->n_checks; i++) {
                if (!check_bears_on(s->checks[i].code, state))
                        continue;
                snprintf(part, sizeof(part), "%s: %s", s->checks[i].code, s->checks[i].message);
                append(buf, size, part);
        }
        if (!buf[0])
                snprintf(buf, size, state == GANTRY_OBSERVED_HEALTHY && s->pgs
                                            ? "all %u PGs active+clean"
                                            : "%u PGs, no health check names the cause",
                         s->pgs);
}

void gantry_backend_smoother_init(struct gantry_backend_smoother *s,
                                  const struct gantry_backend_smoother_options *opts)
{
        memset(s, 0, sizeof(*s));
        s->inactive_since = -1;
        if (opts)
                s->o = *opts;
        if (s->o.window_seconds <= 0)
                s->o.window_seconds = 10;
        if (s->o.confirm_samples <= 0)
                s->o.confirm_samples = 2;
        if (s->o.inactive_grace_seconds <= 0)
                s->o.inactive_grace_seconds = 10;
}

static void averages(const struct gantry_backend_smoother *s, double now,
                     struct gantry_backend_view *v)
{
        double read = 0, write = 0, recovery = 0;
        size_t used = 0;

        for (size_t i = 0; i < s->n; i++) {
                size_t k = (s->head + GANTRY_BACKEND_WINDOW_MAX - 1 - i) % GANTRY_BACKEND_WINDOW_MAX;
                if (now - s->ring[k].at >= s->o.window_seconds)
                        break;
                used++;
                read += (double)s->ring[k].read;
                write += (double)s->ring[k].write;
                recovery += (double)s->ring[k].recovery;
        }
        v->read_bytes_per_sec = used ? (uint64_t)(read / (double)used + 0.5) : 0;
        v->write_bytes_per_sec = used ? (uint64_t)(write / (double)used + 0.5) : 0;
        v->recovery_bytes_per_sec = used ? (uint64_t)(recovery / (double)used + 0.5) : 0;
}

void gantry_backend_smoother_add(struct gantry_backend_smoother *s, double now,
                                 const struct gantry_backend_sample *sample,
                                 struct gantry_backend_view *ret_view)
{
        enum gantry_observed_state raw;
        char reason[GANTRY_BACKEND_REASON_MAX];

        /* the window holds what was served: an unreachable poll counts as zero IO */
        s->ring[s->head].at = now;
        s->ring[s->head].reachable = sample->reachable;
        s->ring[s->head].read = sample->reachable ? sample->read_bytes_per_sec : 0;
        s->ring[s->head].write = sample->reachable ? sample->write_bytes_per_sec : 0;
        s->ring[s->head].recovery = sample->reachable ? sample->recovery_bytes_per_sec : 0;
        s->head = (s->head + 1) % GANTRY_BACKEND_WINDOW_MAX;
        if (s->n < GANTRY_BACKEND_WINDOW_MAX)
                s->n++;
        if (sample->reachable)
                s->degraded_ratio = sample->degraded_ratio;

        /*
         * PGs peer for a few seconds after every map change (an OSD down,
         * out, back): inactive PGs make the backend Unavailable only once
         * they stay inactive for the grace.
         */
        if (sample->reachable && has_inactive(sample)) {
                if (s->inactive_since < 0)
                        s->inactive_since = now;
        } else {
                s->inactive_since = -1;
        }
        raw = state_of(sample, s->inactive_since >= 0 &&
                                       now - s->inactive_since >= s->o.inactive_grace_seconds);
        sample_reason(sample, raw, reason, sizeof(reason));
        if (!s->started || raw == s->state) {
                s->started = true;
                s->state = raw;
                s->pending_count = 0;
                memcpy(s->reason, reason, sizeof(reason));
        } else {
                if (raw == s->pending)
                        s->pending_count++;
                else
                        s->pending = raw, s->pending_count = 1;
                if (s->pending_count >= s->o.confirm_samples) {
                        s->state = raw;
                        s->pending_count = 0;
                        memcpy(s->reason, reason, sizeof(reason));
                }
        }

        ret_view->state = s->state;
        ret_view->reason = s->reason;
        ret_view->degraded_ratio = s->degraded_ratio;
        averages(s, now, ret_view);
}
