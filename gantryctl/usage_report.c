/*
 * The model of `gantryctl usage` (see usage_report.h): a table of (node
 * source, namespace, pod, volume) rows filled from sample lines, then
 * folded per (namespace, job). The exposition parser reads only what
 * gantry_metrics_render writes (name, optional {labels}, value) and skips
 * every other family, so other metrics on the same endpoint cost nothing.
 */
#include "usage_report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX 256

enum field {
        F_READ_BYTES, F_WRITTEN_BYTES, F_CAP_R, F_CAP_W, F_DECL_R, F_DECL_W, F_RATE_R, F_RATE_W,
        F_ATCAP_R, F_ATCAP_W, F_N
};

struct row {
        char ns[LABEL_MAX], pod[LABEL_MAX], volume[LABEL_MAX], job[LABEL_MAX];
        int source;
        bool is_pod; /* a gantry_node_pod_* row: stall only */
        double v[F_N];
        double stall;
};

struct gantry_usage_report {
        struct row *rows;
        size_t n, cap;
        int n_sources;
};

struct gantry_usage_report *gantry_usage_report_new(void)
{
        return calloc(1, sizeof(struct gantry_usage_report));
}

void gantry_usage_report_free(struct gantry_usage_report *r)
{
        if (!r)
                return;
        free(r->rows);
        free(r);
}

struct labels {
        char ns[LABEL_MAX], pod[LABEL_MAX], volume[LABEL_MAX], job[LABEL_MAX], direction[16];
};

/* Parses `{k="v",...}` at *p; leaves *p after the '}'. */
static int parse_labels(const char **p, const char *end, struct labels *l)
{
        const char *s = *p;

        if (s >= end || *s != '{')
                return 0;
        s++;
        while (s < end && *s != '}') {
                const char *k = s;
                char val[LABEL_MAX], *dst = NULL;
                size_t klen, n = 0, dmax = LABEL_MAX;

                while (s < end && *s != '=')
                        s++;
                if (s + 1 >= end || s[1] != '"')
                        return -EINVAL;
                klen = (size_t)(s - k);
                s += 2;
                while (s < end && *s != '"') {
                        char c = *s++;

                        if (c == '\\') {
                                if (s >= end)
                                        return -EINVAL;
                                c = *s++;
                                c = c == 'n' ? '\n' : c;
                        }
                        if (n + 1 >= sizeof(val))
                                return -EINVAL;
                        val[n++] = c;
                }
                if (s >= end)
                        return -EINVAL;
                val[n] = '\0';
                s++; /* closing quote */
                if (klen == 9 && !memcmp(k, "namespace", 9))
                        dst = l->ns;
                else if (klen == 3 && !memcmp(k, "pod", 3))
                        dst = l->pod;
                else if (klen == 6 && !memcmp(k, "volume", 6))
                        dst = l->volume;
                else if (klen == 3 && !memcmp(k, "job", 3))
                        dst = l->job;
                else if (klen == 9 && !memcmp(k, "direction", 9)) {
                        dst = l->direction;
                        dmax = sizeof(l->direction);
                }
                if (dst) {
                        if (n >= dmax)
                                return -EINVAL;
                        memcpy(dst, val, n + 1);
                }
                if (s < end && *s == ',')
                        s++;
                else if (s < end && *s != '}')
                        return -EINVAL;
        }
        if (s >= end)
                return -EINVAL;
        *p = s + 1;
        return 0;
}

static const struct {
        const char *name;
        int field_read, field_write; /* by direction; the same for counters */
        bool pod;
} families[] = {
        { "gantry_node_volume_read_bytes_total", F_READ_BYTES, F_READ_BYTES, false },
        { "gantry_node_volume_written_bytes_total", F_WRITTEN_BYTES, F_WRITTEN_BYTES, false },
        { "gantry_node_volume_cap_bytes_per_second", F_CAP_R, F_CAP_W, false },
        { "gantry_node_volume_declared_bytes_per_second", F_DECL_R, F_DECL_W, false },
        { "gantry_node_volume_rate_bytes_per_second", F_RATE_R, F_RATE_W, false },
        { "gantry_node_volume_at_cap_ratio", F_ATCAP_R, F_ATCAP_W, false },
        { "gantry_node_pod_io_stall_ratio", -1, -1, true },
};

static struct row *row_for(struct gantry_usage_report *r, int source, const struct labels *l, bool pod)
{
        for (size_t i = 0; i < r->n; i++) {
                struct row *x = &r->rows[i];

                if (x->source == source && x->is_pod == pod && !strcmp(x->ns, l->ns) &&
                    !strcmp(x->pod, l->pod) && (pod || !strcmp(x->volume, l->volume)))
                        return x;
        }
        if (r->n >= GANTRY_USAGE_REPORT_MAX_VOLUMES)
                return NULL;
        if (r->n == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 64;
                struct row *n = realloc(r->rows, cap * sizeof(*n));

                if (!n)
                        return NULL;
                r->rows = n;
                r->cap = cap;
        }
        memset(&r->rows[r->n], 0, sizeof(r->rows[0]));
        r->rows[r->n].source = source;
        r->rows[r->n].is_pod = pod;
        strcpy(r->rows[r->n].ns, l->ns);
        strcpy(r->rows[r->n].pod, l->pod);
        strcpy(r->rows[r->n].volume, l->volume);
        strcpy(r->rows[r->n].job, l->job);
        return &r->rows[r->n++];
}

int gantry_usage_report_add_text(struct gantry_usage_report *r, const char *text, size_t len,
                                 const char *source, struct gantry_error *err)
{
        const char *pos = text, *end = text + len;
        int used = 0, line_no = 0, src;

        if (!r || (!text && len))
                return gantry_error_set(err, EINVAL, "%s: no text", source);
        src = r->n_sources++;
        while (pos < end) {
                const char *nl = memchr(pos, '\n', (size_t)(end - pos));
                const char *line = pos, *lend = nl ? nl : end, *p;
                struct labels l = { 0 };
                struct row *row;
                char num[64];
                size_t nlen;
                double v;
                char *vend;
                int fam = -1;

                pos = nl ? nl + 1 : end;
                line_no++;
                if (lend - line > GANTRY_USAGE_REPORT_MAX_LINE)
                        return gantry_error_set(err, E2BIG, "%s: line %d: longer than %d bytes", source,
                                                line_no, GANTRY_USAGE_REPORT_MAX_LINE);
                if (line == lend || *line == '#')
                        continue;
                for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
                        size_t fl = strlen(families[f].name);

                        if ((size_t)(lend - line) > fl && !memcmp(line, families[f].name, fl) &&
                            (line[fl] == '{' || line[fl] == ' ')) {
                                fam = (int)f;
                                break;
                        }
                }
                if (fam < 0)
                        continue;
                p = line + strlen(families[fam].name);
                if (parse_labels(&p, lend, &l) < 0)
                        return gantry_error_set(err, EINVAL, "%s: line %d: %s: malformed labels", source,
                                                line_no, families[fam].name);
                while (p < lend && *p == ' ')
                        p++;
                nlen = (size_t)(lend - p);
                while (nlen && (p[nlen - 1] == ' ' || p[nlen - 1] == '\r'))
                        nlen--;
                if (nlen == 0 || nlen >= sizeof(num) || memchr(p, ' ', nlen))
                        return gantry_error_set(err, EINVAL, "%s: line %d: %s: bad value", source, line_no,
                                                families[fam].name);
                memcpy(num, p, nlen);
                num[nlen] = '\0';
                v = strtod(num, &vend);
                if (*vend || !isfinite(v) || v < 0)
                        return gantry_error_set(err, EINVAL, "%s: line %d: %s: bad value \"%s\"", source,
                                                line_no, families[fam].name, num);
                if (!*l.ns || !*l.pod || (!families[fam].pod && !*l.volume))
                        return gantry_error_set(err, EINVAL,
                                                "%s: line %d: %s: namespace, pod or volume label missing",
                                                source, line_no, families[fam].name);
                row = row_for(r, src, &l, families[fam].pod);
                if (!row)
                        return gantry_error_set(err, E2BIG, "%s: more than %d volumes", source,
                                                GANTRY_USAGE_REPORT_MAX_VOLUMES);
                if (families[fam].pod)
                        row->stall = v;
                else
                        row->v[strcmp(l.direction, "write") == 0 ? families[fam].field_write
                                                                 : families[fam].field_read] = v;
                used++;
        }
        return used;
}

/* One job's totals. */
struct job {
        const char *ns, *job, *first_pod;
        bool by_pod; /* no job label: the pod is the job */
        unsigned pods, volumes;
        double v[F_N];
        double at_cap, stall;
};

static const char *job_name(const struct row *x)
{
        return *x->job ? x->job : x->pod;
}

static int cmp_jobs(const void *a, const void *b)
{
        const struct job *x = a, *y = b;
        int c = strcmp(x->ns, y->ns);

        return c ? c : strcmp(x->job, y->job);
}

/* Folds the rows per (namespace, job); returns a sorted array, *ret_n jobs. */
static struct job *fold(const struct gantry_usage_report *r, size_t *ret_n)
{
        struct job *jobs = calloc(r->n ? r->n : 1, sizeof(*jobs));
        size_t n = 0;

        if (!jobs)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                const struct row *x = &r->rows[i];
                struct job *j = NULL;
                bool new_pod = true;

                for (size_t k = 0; k < n; k++)
                        if (!strcmp(jobs[k].ns, x->ns) && !strcmp(jobs[k].job, job_name(x)))
                                j = &jobs[k];
                if (!j) {
                        j = &jobs[n++];
                        j->ns = x->ns;
                        j->job = job_name(x);
                        j->by_pod = !*x->job;
                }
                /* a pod counts once per job, whatever its volumes */
                for (size_t k = 0; k < i; k++)
                        if (!strcmp(r->rows[k].ns, x->ns) && !strcmp(r->rows[k].pod, x->pod) &&
                            r->rows[k].source == x->source)
                                new_pod = false;
                j->pods += new_pod;
                if (x->is_pod) {
                        j->stall = fmax(j->stall, x->stall);
                        continue;
                }
                j->volumes++;
                for (int f = 0; f < F_N; f++)
                        j->v[f] += x->v[f];
                j->at_cap = fmax(j->at_cap, fmax(x->v[F_ATCAP_R], x->v[F_ATCAP_W]));
        }
        qsort(jobs, n, sizeof(*jobs), cmp_jobs);
        *ret_n = n;
        return jobs;
}

json_t *gantry_usage_report_json(const struct gantry_usage_report *r)
{
        json_t *out = json_object(), *arr = json_array();
        struct job *jobs;
        size_t n = 0;

        if (!out || !arr || !(jobs = fold(r, &n))) {
                json_decref(out);
                json_decref(arr);
                return NULL;
        }
        for (size_t i = 0; i < n; i++) {
                const struct job *j = &jobs[i];
                double decl = j->v[F_DECL_R] + j->v[F_DECL_W];
                json_t *o = json_pack(
                        "{s:s, s:s, s:b, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                        "namespace", j->ns, "job", j->job, "jobIsPod", j->by_pod, "pods", (int)j->pods,
                        "volumes", (int)j->volumes, "declaredReadBps", j->v[F_DECL_R],
                        "declaredWriteBps", j->v[F_DECL_W], "readBps", j->v[F_RATE_R], "writeBps",
                        j->v[F_RATE_W], "capReadBps", j->v[F_CAP_R], "capWriteBps", j->v[F_CAP_W],
                        "readBytes", j->v[F_READ_BYTES], "writtenBytes", j->v[F_WRITTEN_BYTES],
                        "atCapShare", j->at_cap, "stallShare", j->stall);

                if (!o)
                        continue;
                json_object_set_new(o, "usedShare",
                                    decl > 0 ? json_real((j->v[F_RATE_R] + j->v[F_RATE_W]) / decl)
                                             : json_null());
                json_array_append_new(arr, o);
        }
        free(jobs);
        json_object_set_new(out, "jobs", arr);
        return out;
}

static const char *gbps(double bytes_per_s, char *buf, size_t size)
{
        double g = bytes_per_s * 8 / 1e9;

        if (bytes_per_s == 0)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, g >= 10 ? "%.0f" : g >= 1 ? "%.1f" : "%.2f", g);
        return buf;
}

void gantry_usage_report_table(const struct gantry_usage_report *r, FILE *f)
{
        struct job *jobs;
        size_t n = 0;
        char a[16], b[16], c[16], d[16], e[16], g[16], used[16];

        if (!(jobs = fold(r, &n)))
                return;
        fprintf(f, "%-12s %-24s %4s %4s %-13s %-13s %-13s %6s %7s %6s\n", "NAMESPACE", "JOB", "PODS",
                "VOLS", "DECLARED R/W", "USED R/W", "CAP R/W", "USED%", "AT-CAP", "STALL");
        for (size_t i = 0; i < n; i++) {
                const struct job *j = &jobs[i];
                double decl = j->v[F_DECL_R] + j->v[F_DECL_W];
                char dr[40], ur[40], cr[40]; /* 2 × 16 + 1 */

                snprintf(dr, sizeof(dr), "%s/%s", gbps(j->v[F_DECL_R], a, sizeof(a)),
                         gbps(j->v[F_DECL_W], b, sizeof(b)));
                snprintf(ur, sizeof(ur), "%s/%s", gbps(j->v[F_RATE_R], c, sizeof(c)),
                         gbps(j->v[F_RATE_W], d, sizeof(d)));
                snprintf(cr, sizeof(cr), "%s/%s", gbps(j->v[F_CAP_R], e, sizeof(e)),
                         gbps(j->v[F_CAP_W], g, sizeof(g)));
                if (decl > 0)
                        snprintf(used, sizeof(used), "%.0f%%",
                                 (j->v[F_RATE_R] + j->v[F_RATE_W]) / decl * 100);
                else
                        snprintf(used, sizeof(used), "-");
                fprintf(f, "%-12s %-24s %4u %4u %-13s %-13s %-13s %6s %6.0f%% %5.0f%%\n", j->ns,
                        j->job, j->pods, j->volumes, dr, ur, cr, used, j->at_cap * 100,
                        j->stall * 100);
        }
        fprintf(f, "(rates in Gbps; USED is the mean over each node's usage window; AT-CAP the largest "
                   "share of the window a volume spent at its cap; STALL the largest share a pod waited on IO)\n");
        free(jobs);
}
