/*
 * Parser of Ceph's `status` answer (see ceph_status.h). Tolerant where Ceph
 * is terse (absent numbers are 0, an idle cluster has no rate fields) and
 * strict where a wrong answer would mislead: no `pgmap` object, a
 * `pgs_by_state` that is not a list, or a negative count is an error, not a
 * healthy cluster.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ceph_status.h"

/* A non-negative number field of @obj, 0 when absent; -EINVAL when of another type. */
static int number(const json_t *obj, const char *key, double *ret)
{
        const json_t *v = json_object_get(obj, key);

        if (!v) {
                *ret = 0;
                return 0;
        }
        if (!json_is_number(v) || json_number_value(v) < 0)
                return -EINVAL;
        *ret = json_number_value(v);
        return 0;
}

static int rate(const json_t *pgmap, const char *key, uint64_t *ret, struct gantry_error *err)
{
        double v;

        if (number(pgmap, key, &v) < 0)
                return gantry_error_set(err, EINVAL, "status: pgmap.%s: must be a number >= 0", key);
        *ret = v > (double)UINT64_MAX ? UINT64_MAX : (uint64_t)v;
        return 0;
}

static bool has_word(const char *state, const char *word)
{
        size_t n = strlen(word);

        for (const char *p = state; (p = strstr(p, word)); p += n)
                if ((p == state || p[-1] == '+') && (p[n] == '\0' || p[n] == '+'))
                        return true;
        return false;
}

/* Adds one `pgs_by_state` entry ("active+recovery_wait+degraded", 27) to @s. */
static void count_pgs(struct gantry_backend_sample *s, const char *state, uint32_t count)
{
        if (!has_word(state, "active"))
                s->pgs_inactive += count;
        if (has_word(state, "recovering") || has_word(state, "recovery_wait") ||
            has_word(state, "backfilling") || has_word(state, "backfill_wait"))
                s->pgs_recovering += count;
        if (has_word(state, "degraded") || has_word(state, "undersized"))
                s->pgs_degraded += count;
        if (!has_word(state, "clean"))
                s->pgs_unclean += count;
}

static int parse_pgs(const json_t *pgmap, struct gantry_backend_sample *s, struct gantry_error *err)
{
        const json_t *list = json_object_get(pgmap, "pgs_by_state");
        const json_t *e;
        double total;
        size_t i;

        if (number(pgmap, "num_pgs", &total) < 0 || total > UINT32_MAX)
                return gantry_error_set(err, EINVAL, "status: pgmap.num_pgs: must be a count");
        s->pgs = (uint32_t)total;
        if (!list)
                return 0;
        if (!json_is_array(list))
                return gantry_error_set(err, EINVAL, "status: pgmap.pgs_by_state: must be a list");
        json_array_foreach(list, i, e) {
                const char *name = json_string_value(json_object_get(e, "state_name"));
                double count;
                if (!name || number(e, "count", &count) < 0 || count > UINT32_MAX)
                        return gantry_error_set(err, EINVAL,
                                                "status: pgmap.pgs_by_state[%zu]: needs state_name "
                                                "and a count", i);
                count_pgs(s, name, (uint32_t)count);
        }
        return 0;
}

static void parse_checks(const json_t *health, struct gantry_backend_sample *s)
{
        const json_t *checks = json_object_get(health, "checks");
        const json_t *check;
        const char *code;

        json_object_foreach((json_t *)checks, code, check) {
                const char *msg = json_string_value(
                        json_object_get(json_object_get(check, "summary"), "message"));
                struct gantry_backend_check *c;
                if (s->n_checks == GANTRY_BACKEND_CHECKS_MAX)
                        break;
                c = &s->checks[s->n_checks++];
                snprintf(c->code, sizeof(c->code), "%s", code);
                snprintf(c->message, sizeof(c->message), "%s", msg ? msg : "");
        }
}

int gantry_ceph_status_parse(const char *json, size_t len, struct gantry_backend_sample *ret,
                             struct gantry_error *err)
{
        struct gantry_backend_sample s = { .reachable = true };
        json_error_t jerr;
        json_t *root;
        const json_t *pgmap;
        int r;

        if (len > GANTRY_CEPH_STATUS_MAX_BYTES)
                return gantry_error_set(err, EINVAL, "status: answer of %zu bytes is too long", len);
        root = json_loadb(json, len, 0, &jerr);
        if (!root)
                return gantry_error_set(err, EINVAL, "status: not JSON: %s", jerr.text);
        pgmap = json_object_get(root, "pgmap");
        if (!json_is_object(pgmap)) {
                r = gantry_error_set(err, EINVAL, "status: pgmap: missing");
                goto out;
        }
        if ((r = rate(pgmap, "read_bytes_sec", &s.read_bytes_per_sec, err)) < 0 ||
            (r = rate(pgmap, "write_bytes_sec", &s.write_bytes_per_sec, err)) < 0 ||
            (r = rate(pgmap, "recovering_bytes_per_sec", &s.recovery_bytes_per_sec, err)) < 0)
                goto out;
        if (number(pgmap, "degraded_ratio", &s.degraded_ratio) < 0 || s.degraded_ratio > 1) {
                r = gantry_error_set(err, EINVAL, "status: pgmap.degraded_ratio: must be in 0..1");
                goto out;
        }
        if ((r = parse_pgs(pgmap, &s, err)) < 0)
                goto out;
        parse_checks(json_object_get(root, "health"), &s);
        *ret = s;
        r = 0;
out:
        json_decref(root);
        return r;
}
