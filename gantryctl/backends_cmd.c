/*
 * `gantryctl backends`: every storage backend's live state beside what
 * Gantry holds on it, as gantry-scheduler's admission sees them now, read
 * from its /metrics (the gantry_backend_* gauges):
 *
 *   gantryctl backends --metrics URL [--cacert F --cert F --key F] [--json]
 *
 *   BACKEND  STATE       NOMINAL  EFFECTIVE  RESERVED  FREE  UNACCOUNTED  RECOVERY
 *   ceph-a   Recovering       40         26        12    14            0         0
 *
 * (Gbps; "(stale)" after the state when the observer has gone quiet and
 * the nominal capacity holds). gantry-scheduler's port wants a client
 * certificate: --cert/--key of one its --client-ca signed.
 */
#include "backends_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "metrics_fetch.h"

#define MAX_BACKENDS 256

struct row {
        char name[254];
        char state[32];
        double stale, nominal, effective, reserved, unaccounted, recovery;
};

static const struct {
        const char *metric;
        size_t offset;
} gauges[] = {
        { "gantry_backend_stale", offsetof(struct row, stale) },
        { "gantry_backend_nominal_gbps", offsetof(struct row, nominal) },
        { "gantry_backend_effective_gbps", offsetof(struct row, effective) },
        { "gantry_backend_reserved_gbps", offsetof(struct row, reserved) },
        { "gantry_backend_unaccounted_gbps", offsetof(struct row, unaccounted) },
        { "gantry_backend_recovery_gbps", offsetof(struct row, recovery) },
};

static struct row *row_of(struct row *rows, size_t *n, const char *name, size_t len)
{
        for (size_t i = 0; i < *n; i++)
                if (strlen(rows[i].name) == len && !strncmp(rows[i].name, name, len))
                        return &rows[i];
        if (*n == MAX_BACKENDS || len >= sizeof(rows[0].name))
                return NULL;
        rows[*n] = (struct row){ 0 };
        memcpy(rows[*n].name, name, len);
        return &rows[(*n)++];
}

/* The value of label @key in "{a=\"x\",b=\"y\"} 1": a pointer and length. */
static const char *label(const char *line, const char *key, size_t *ret_len)
{
        char pat[64];
        const char *p, *end;

        snprintf(pat, sizeof(pat), "%s=\"", key);
        if (!(p = strstr(line, pat)))
                return NULL;
        p += strlen(pat);
        if (!(end = strchr(p, '"')))
                return NULL;
        *ret_len = (size_t)(end - p);
        return p;
}

/* Reads the gantry_backend_* lines of a metrics page into @rows. */
static size_t parse(char *text, struct row *rows)
{
        size_t n = 0;

        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                const char *name, *value = strrchr(line, ' '), *st;
                size_t len, slen;
                struct row *r;

                if (strncmp(line, "gantry_backend_", 15) || !value ||
                    !(name = label(line, "backend", &len)) || !(r = row_of(rows, &n, name, len)))
                        continue;
                if (!strncmp(line, "gantry_backend_state{", 21)) {
                        if (atof(value + 1) == 1 && (st = label(line, "state", &slen)) &&
                            slen < sizeof(r->state)) {
                                memcpy(r->state, st, slen);
                                r->state[slen] = '\0';
                        }
                        continue;
                }
                for (size_t k = 0; k < sizeof(gauges) / sizeof(gauges[0]); k++) {
                        size_t ml = strlen(gauges[k].metric);

                        if (!strncmp(line, gauges[k].metric, ml) && line[ml] == '{')
                                *(double *)((char *)r + gauges[k].offset) = atof(value + 1);
                }
        }
        return n;
}

static void print_table(const struct row *rows, size_t n, FILE *f)
{
        fprintf(f, "%-24s %-20s %8s %10s %9s %8s %12s %9s\n", "BACKEND", "STATE", "NOMINAL",
                "EFFECTIVE", "RESERVED", "FREE", "UNACCOUNTED", "RECOVERY");
        for (size_t i = 0; i < n; i++) {
                const struct row *r = &rows[i];
                char state[48];
                double free_gbps = r->effective - r->reserved;

                snprintf(state, sizeof(state), "%s%s", r->state[0] ? r->state : "(not observed)",
                         r->stale > 0 ? " (stale)" : "");
                fprintf(f, "%-24s %-20s %8.1f %10.1f %9.1f %8.1f %12.1f %9.1f\n", r->name, state,
                        r->nominal, r->effective, r->reserved, free_gbps > 0 ? free_gbps : 0,
                        r->unaccounted, r->recovery);
        }
}

static void print_json(const struct row *rows, size_t n, FILE *f)
{
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++) {
                const struct row *r = &rows[i];

                json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:f, s:f, s:f, s:f, s:f}",
                                                   "backend", r->name, "state", r->state,
                                                   "stale", r->stale > 0, "nominalGbps", r->nominal,
                                                   "effectiveGbps", r->effective,
                                                   "reservedGbps", r->reserved,
                                                   "unaccountedGbps", r->unaccounted,
                                                   "recoveryGbps", r->recovery));
        }
        json_dumpf(a, f, JSON_INDENT(2));
        fputc('\n', f);
        json_decref(a);
}

static void usage_text(FILE *f)
{
        fprintf(f, "usage: gantryctl backends --metrics URL [--cacert F --cert F --key F] [--json] "
                   "[--timeout S]\n"
                   "  every storage backend's live state beside Gantry's reservations, from\n"
                   "  gantry-scheduler's /metrics (Gbps)\n");
}

int gantry_backends_main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "metrics", required_argument, NULL, 'm' },
                { "cacert", required_argument, NULL, 'a' },
                { "cert", required_argument, NULL, 'c' },
                { "key", required_argument, NULL, 'k' },
                { "json", no_argument, NULL, 'j' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        struct gantry_metrics_tls tls = { 0 };
        struct gantry_buf b = { .max = GANTRY_METRICS_FETCH_MAX };
        struct gantry_error err = { 0 };
        struct row *rows = NULL;
        const char *url = NULL;
        bool as_json = false;
        long timeout_s = 10;
        int c, rc = 1;
        size_t n;

        optind = 0;
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'm': url = optarg; break;
                case 'a': tls.cacert = optarg; break;
                case 'c': tls.cert = optarg; break;
                case 'k': tls.key = optarg; break;
                case 'j': as_json = true; break;
                case 't':
                        timeout_s = strtol(optarg, NULL, 10);
                        if (timeout_s < 1 || timeout_s > 600) {
                                fprintf(stderr, "gantryctl backends: --timeout: 1 to 600 seconds\n");
                                return 2;
                        }
                        break;
                case 'h': usage_text(stdout); return 0;
                default: usage_text(stderr); return 2;
                }
        }
        if (!url || !!tls.cert != !!tls.key) {
                fprintf(stderr, "gantryctl backends: --metrics is required; --cert and --key go "
                                "together\n");
                usage_text(stderr);
                return 2;
        }
        if (gantry_metrics_fetch(url, timeout_s, &tls, &b, &err) < 0 ||
            gantry_buf_append(&b, "", 1) < 0) {
                fprintf(stderr, "gantryctl backends: %s\n", err.msg[0] ? err.msg : "out of memory");
                goto out;
        }
        if (!(rows = calloc(MAX_BACKENDS, sizeof(*rows)))) {
                fprintf(stderr, "gantryctl backends: out of memory\n");
                goto out;
        }
        n = parse(b.data, rows);
        if (as_json)
                print_json(rows, n, stdout);
        else
                print_table(rows, n, stdout);
        rc = 0;
out:
        free(rows);
        free(b.data);
        return rc;
}
