/*
 * Prometheus metrics registry, text exposition and a /metrics endpoint; see
 * metrics.h.
 *
 * Series live in a flat array searched linearly: a Gantry process has tens of
 * series (methods x codes), updated once per request, so a hash table would
 * buy nothing. Families keep first-seen order so the output is stable.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define MAX_SERIES 4096

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

static const double buckets[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                  0.5,   1,     2.5,  5,     10,   30,  60 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct series {
        char *name;
        char *help;
        char *labels;
        enum metric_type type;
        double value; /* counter/gauge; histogram: sum */
        unsigned long long count;
        unsigned long long bucket_counts[N_BUCKETS];
};

struct gantry_metrics {
        pthread_mutex_t lock;
        struct series *series;
        size_t n_series;
        size_t cap;
};

struct gantry_metrics *gantry_metrics_new(void)
{
        struct gantry_metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        pthread_mutex_init(&m->lock, NULL);
        return m;
}

void gantry_metrics_free(struct gantry_metrics *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n_series; i++) {
                free(m->series[i].name);
                free(m->series[i].help);
                free(m->series[i].labels);
        }
        free(m->series);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/* Finds or creates a series. Called with the lock held. */
static int lookup(struct gantry_metrics *m, const char *name, const char *help, const char *labels,
                  enum metric_type type, struct series **ret)
{
        struct series *s;

        if (!name || !*name)
                return -EINVAL;
        if (!labels)
                labels = "";
        for (size_t i = 0; i < m->n_series; i++) {
                s = &m->series[i];
                if (strcmp(s->name, name) != 0)
                        continue;
                if (s->type != type)
                        return -EINVAL;
                if (strcmp(s->labels, labels) == 0) {
                        *ret = s;
                        return 0;
                }
        }
        if (m->n_series >= MAX_SERIES)
                return -ENOSPC;
        if (m->n_series == m->cap) {
                size_t cap = m->cap ? m->cap * 2 : 32;
                struct series *n = realloc(m->series, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                m->series = n;
                m->cap = cap;
        }
        s = &m->series[m->n_series];
        memset(s, 0, sizeof(*s));
        s->name = strdup(name);
        s->help = strdup(help ? help : "");
        s->labels = strdup(labels);
        s->type = type;
        if (!s->name || !s->help || !s->labels) {
                free(s->name);
                free(s->help);
                free(s->labels);
                return -ENOMEM;
        }
        m->n_series++;
        *ret = s;
        return 0;
}

static int update(struct gantry_metrics *m, const char *name, const char *help, const char *labels,
                  enum metric_type type, double value)
{
        struct series *s;
        int r;

        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        r = lookup(m, name, help, labels, type, &s);
        if (r == 0) {
                switch (type) {
                case METRIC_COUNTER:
                        s->value += value;
                        break;
                case METRIC_GAUGE:
                        s->value = value;
                        break;
                case METRIC_HISTOGRAM:
                        s->value += value;
                        s->count++;
                        for (size_t i = 0; i < N_BUCKETS; i++)
                                if (value <= buckets[i])
                                        s->bucket_counts[i]++;
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

int gantry_metrics_counter_add(struct gantry_metrics *m, const char *name, const char *help,
                               const char *labels, double value)
{
        if (value < 0)
                return -EINVAL;
        return update(m, name, help, labels, METRIC_COUNTER, value);
}

int gantry_metrics_gauge_set(struct gantry_metrics *m, const char *name, const char *help,
                             const char *labels, double value)
{
        return update(m, name, help, labels, METRIC_GAUGE, value);
}

int gantry_metrics_histogram_observe(struct gantry_metrics *m, const char *name, const char *help,
                                     const char *labels, double value)
{
        return update(m, name, help, labels, METRIC_HISTOGRAM, value);
}

int gantry_metrics_remove(struct gantry_metrics *m, const char *name, const char *label_prefix)
{
        size_t plen = label_prefix ? strlen(label_prefix) : 0;
        int removed = 0;

        if (!m || !name)
                return 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_series;) {
                struct series *s = &m->series[i];

                if (strcmp(s->name, name) != 0 || strncmp(s->labels, label_prefix ? label_prefix : "", plen) != 0) {
                        i++;
                        continue;
                }
                free(s->name);
                free(s->help);
                free(s->labels);
                memmove(s, s + 1, (m->n_series - i - 1) * sizeof(*s));
                m->n_series--;
                removed++;
        }
        pthread_mutex_unlock(&m->lock);
        return removed;
}

static const char *type_name(enum metric_type t)
{
        return t == METRIC_COUNTER ? "counter" : t == METRIC_GAUGE ? "gauge" : "histogram";
}

/* Writes `name{labels,extra}` into f; braces only when there is a label. */
static void write_series_name(FILE *f, const char *name, const char *suffix, const char *labels,
                              const char *extra)
{
        int has = labels && *labels, has_extra = extra && *extra;

        fprintf(f, "%s%s", name, suffix);
        if (has || has_extra)
                fprintf(f, "{%s%s%s}", has ? labels : "", has && has_extra ? "," : "",
                        has_extra ? extra : "");
}

int gantry_metrics_render(struct gantry_metrics *m, char **ret_text)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (!m)
                return -EINVAL;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_series; i++) {
                const char *name = m->series[i].name;
                int seen = 0;

                for (size_t j = 0; j < i; j++)
                        if (strcmp(m->series[j].name, name) == 0)
                                seen = 1;
                if (seen)
                        continue;
                fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, m->series[i].help, name,
                        type_name(m->series[i].type));
                for (size_t j = i; j < m->n_series; j++) {
                        const struct series *s = &m->series[j];
                        char le[48];

                        if (strcmp(s->name, name) != 0)
                                continue;
                        if (s->type != METRIC_HISTOGRAM) {
                                write_series_name(f, name, "", s->labels, NULL);
                                fprintf(f, " %.17g\n", s->value);
                                continue;
                        }
                        for (size_t b = 0; b < N_BUCKETS; b++) {
                                snprintf(le, sizeof(le), "le=\"%g\"", buckets[b]);
                                write_series_name(f, name, "_bucket", s->labels, le);
                                fprintf(f, " %llu\n", s->bucket_counts[b]);
                        }
                        write_series_name(f, name, "_bucket", s->labels, "le=\"+Inf\"");
                        fprintf(f, " %llu\n", s->count);
                        write_series_name(f, name, "_sum", s->labels, NULL);
                        fprintf(f, " %.17g\n", s->value);
                        write_series_name(f, name, "_count", s->labels, NULL);
                        fprintf(f, " %llu\n", s->count);
                }
        }
        pthread_mutex_unlock(&m->lock);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret_text = buf;
        return 0;
}
