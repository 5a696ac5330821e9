/*
 * `gantryctl tier status`: every copy of the tiering machinery in one
 * table, from a shell on the controller pod (it reads the same driver
 * config as gantry-csi, and the records in Ceph, not the plugin's memory).
 *
 *   gantryctl tier status [--config /etc/gantry/gantry.json] [--json]
 *   gantryctl tier promote --from CLUSTER/POOL/IMAGE[@SNAP] --to CLUSTER/POOL/IMAGE
 *                          [--data-pool POOL] [--refresh] [--config ...]
 *   gantryctl tier demote NAMESPACE/PVC|PV|UUID|IMAGE|CLUSTER/POOL/IMAGE
 *                         [--config ...] [--kubeconfig FILE]
 *
 * `promote` copies one image between clusters outside CSI (pre-warming a
 * dataset) with the promotion machinery of CreateVolume, in the foreground,
 * printing the progress line every second; Ctrl-C stops it with its
 * position recorded, and the same command resumes it. When the destination
 * pool holds a complete copy of an older snapshot of the same source image,
 * the new image is a refresh of it (a clone plus the changed extents);
 * --refresh refuses to make anything else.
 *
 * Rows come from row sources, each yielding records of copier/record.h:
 *   "promote"  dataset promotions, from the "gantry.copies" omap object of
 *              every pool of every configured cluster (controller/tiering/copy_records.c)
 *   "drain"    checkpoint drains: snapshots gantry-target copies
 *              into Ceph, from `bdev_get_bdevs` (driver_specific.lvol.drain)
 *              of every configured target, over the controller's target
 *              client; source "<target id>/<snapshot>", destination
 *              "<cluster>/<pool>/<image>", kept in "<target id>/-"
 *   "restore"  the reverse copies (driver_specific.lvol.restore): a drained
 *              image filled back into a new namespace on a target
 * `demote` discards one promoted copy's data by hand, as the eviction policy
 * (clusters[].evict) does: never one in use (a VolumeAttachment when the API
 * is reachable, a watcher on its image); the next ControllerPublishVolume
 * copies it again from its source.
 *
 * A cluster or target that cannot be read is listed under "errors" (and on
 * stderr), the others are still shown, and the exit status is 1.
 *
 * A copy whose record has not been updated for STALE_S while it says
 * "copying" is shown as stalled: its controller died or restarted, and the
 * copy resumes from its record when a controller starts or at the next
 * CreateVolume retry. A copy that refreshes an older one is shown in state
 * "refreshing" while it runs.
 */
#include "tier_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "controller.h"
#include "log.h"
#include "progress.h"
#include "record.h"
#include "target_client.h"

#define DEFAULT_CONFIG "/etc/gantry/gantry.json"
#define STALE_S 30
#define MAX_ROWS 100000
#define TARGET_TIMEOUT_MS 5000

struct row {
        char where[160]; /* cluster/pool the record is kept in, or the target */
        struct gantry_copier_record rec;
};

struct table {
        struct row *rows;
        size_t n, cap;
        json_t *errors; /* [{"source": ..., "error": ...}] */
};

static int add_row(const char *cluster_id, const char *pool, const struct gantry_copier_record *rec,
                   void *arg)
{
        struct table *t = arg;
        struct row *r;

        if (t->n == MAX_ROWS)
                return -E2BIG;
        if (t->n == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 16;
                struct row *rows = realloc(t->rows, cap * sizeof(*rows));
                if (!rows)
                        return -ENOMEM;
                t->rows = rows;
                t->cap = cap;
        }
        r = &t->rows[t->n];
        memset(r, 0, sizeof(*r));
        snprintf(r->where, sizeof(r->where), "%s/%s", cluster_id, pool);
        r->rec = *rec;
        r->rec.position = rec->position ? strdup(rec->position) : NULL;
        t->n++;
        return 0;
}

static void add_error(const char *source, const char *msg, void *arg)
{
        struct table *t = arg;

        json_array_append_new(t->errors, json_pack("{s:s, s:s}", "source", source, "error", msg));
        fprintf(stderr, "gantryctl tier status: %s: %s\n", source, msg);
}

/* Row sources: each adds its copies to the table; returns 0 or -EIO (errors reported). */
static int promotions(const struct gantry_config *config, struct table *t)
{
        return gantry_controller_list_copies(config, add_row, add_error, t);
}

/*
 * One target's drain or restore status (bdev_get_bdevs:
 * driver_specific.lvol.drain / .restore) as a record: the target's states
 * running/complete/failed become copying/done/failed. A drain goes from the
 * target's snapshot to Ceph, a restore the other way.
 */
static void target_copy(const char *target_id, json_t *bdev, const char *kind, json_t *d,
                        struct gantry_copier_record *ret)
{
        const char *name = json_string_value(json_object_get(bdev, "name")) ?: "";
        const char *alias = json_string_value(json_array_get(json_object_get(bdev, "aliases"), 0));
        const char *state = json_string_value(json_object_get(d, "state")) ?: "";
        char local[512], remote[512];

        memset(ret, 0, sizeof(*ret));
        snprintf(ret->kind, sizeof(ret->kind), "%s", kind);
        snprintf(ret->id, sizeof(ret->id), "%s", name);
        snprintf(ret->name, sizeof(ret->name), "%s", alias ?: name);
        snprintf(ret->state, sizeof(ret->state), "%s",
                 strcmp(state, "running") == 0 ? "copying" : strcmp(state, "complete") == 0 ? "done" : state);
        snprintf(local, sizeof(local), "%s/%s", target_id, alias ?: name);
        snprintf(remote, sizeof(remote), "%s/%s/%s", json_string_value(json_object_get(d, "cluster_id")) ?: "",
                 json_string_value(json_object_get(d, "pool")) ?: "",
                 json_string_value(json_object_get(d, "image")) ?: "");
        snprintf(ret->source, sizeof(ret->source), "%s", strcmp(kind, "drain") == 0 ? local : remote);
        snprintf(ret->destination, sizeof(ret->destination), "%s", strcmp(kind, "drain") == 0 ? remote : local);
        ret->bytes_done = (uint64_t)json_integer_value(json_object_get(d, "bytes_done"));
        ret->bytes_total = (uint64_t)json_integer_value(json_object_get(d, "bytes_total"));
        ret->rate = json_number_value(json_object_get(d, "rate"));
        ret->eta = json_object_get(d, "eta_seconds") ? json_number_value(json_object_get(d, "eta_seconds")) : -1;
        snprintf(ret->error, sizeof(ret->error), "%s", json_string_value(json_object_get(d, "error")) ?: "");
}

/* Drains and restores: asked of each configured target over its JSON-RPC. */
static int target_copies(const struct gantry_config *config, struct table *t)
{
        static const char *const kinds[] = { "drain", "restore" };
        struct gantry_copier_record rec;
        int ret = 0;

        for (size_t i = 0; i < config->n_targets; i++) {
                const struct gantry_target_config *tc = &config->targets[i];
                struct gantry_error err = { 0 };
                json_t *bdevs = NULL, *b, *d;
                size_t k;
                int r;

                if ((r = gantry_target_call(tc, "bdev_get_bdevs", NULL, TARGET_TIMEOUT_MS, &bdevs, &err)) < 0) {
                        add_error(tc->id, err.msg[0] ? err.msg : strerror(-r), t);
                        ret = -EIO;
                        continue;
                }
                json_array_foreach(bdevs, k, b) {
                        for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++) {
                                d = json_object_get(json_object_get(json_object_get(b, "driver_specific"), "lvol"),
                                                    kinds[j]);
                                if (!json_is_object(d) || !json_string_value(json_object_get(d, "state")) ||
                                    strcmp(json_string_value(json_object_get(d, "state")), "none") == 0)
                                        continue;
                                target_copy(tc->id, b, kinds[j], d, &rec);
                                if ((r = add_row(tc->id, "-", &rec, t)) < 0) {
                                        add_error(tc->id, strerror(-r), t);
                                        ret = -EIO;
                                }
                        }
                }
                json_decref(bdevs);
        }
        return ret;
}

static int (*const row_sources[])(const struct gantry_config *, struct table *) = {
        promotions,
        target_copies,
};

static void bytes(uint64_t n, char *buf, size_t size)
{
        static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
        double v = (double)n;
        unsigned u = 0;

        while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0])) {
                v /= 1000;
                u++;
        }
        snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void progress(const struct gantry_copier_record *r, time_t now, char *buf, size_t size)
{
        char age[32], line[128];

        gantry_copier_record_format(r, line, sizeof(line));
        if (strcmp(r->state, "copying") == 0 && r->updated && now - r->updated > STALE_S) {
                gantry_copier_format_duration((double)(now - r->updated), age, sizeof(age));
                snprintf(buf, size, "%u %%, stalled for %s (resumes at controller start or retry)",
                         r->bytes_total ? (unsigned)(r->bytes_done * 100 / r->bytes_total) : 0, age);
                return;
        }
        snprintf(buf, size, "%s", line);
}

/* The state column: a running refresh is told apart from a full copy. */
static const char *shown_state(const struct gantry_copier_record *r)
{
        return strcmp(r->state, "copying") == 0 && r->refresh_of[0] ? "refreshing" : r->state;
}

static void print_table(const struct table *t)
{
        time_t now = time(NULL);
        char done[32], total[32], line[256], age[32];

        printf("%-8s %-8s %-32s %-10s %-10s %-46s %-10s %s -> %s\n", "KIND", "STATE", "NAME", "DONE",
               "TOTAL", "PROGRESS", "UPDATED", "SOURCE", "DESTINATION");
        for (size_t i = 0; i < t->n; i++) {
                const struct gantry_copier_record *r = &t->rows[i].rec;

                bytes(r->bytes_done, done, sizeof(done));
                bytes(r->bytes_total, total, sizeof(total));
                progress(r, now, line, sizeof(line));
                gantry_copier_format_duration(r->updated ? (double)(now - r->updated) : -1, age,
                                            sizeof(age));
                printf("%-8s %-8s %-32s %-10s %-10s %-46s %-10s %s -> %s\n", r->kind, shown_state(r),
                       r->name, done, total, line, age, r->source, r->destination);
        }
        if (t->n == 0)
                printf("(no copies)\n");
}

static int print_json(const struct table *t)
{
        json_t *rows = json_array(), *o;
        char *s, line[256];
        time_t now = time(NULL);

        for (size_t i = 0; i < t->n; i++) {
                if (gantry_copier_record_encode(&t->rows[i].rec, &s) < 0)
                        return -ENOMEM;
                o = json_loads(s, 0, NULL);
                free(s);
                if (!o)
                        return -ENOMEM;
                progress(&t->rows[i].rec, now, line, sizeof(line));
                json_object_set_new(o, "keptIn", json_string(t->rows[i].where));
                json_object_set_new(o, "progress", json_string(line));
                json_array_append_new(rows, o);
        }
        o = json_pack("{s:o, s:O}", "copies", rows, "errors", t->errors);
        s = json_dumps(o, JSON_INDENT(2));
        json_decref(o);
        if (!s)
                return -ENOMEM;
        printf("%s\n", s);
        free(s);
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f, "usage: gantryctl tier status [--config FILE] [--json]\n"
                   "       gantryctl tier promote --from CLUSTER/POOL/IMAGE[@SNAP] --to CLUSTER/POOL/IMAGE\n"
                   "                              [--data-pool POOL] [--refresh] [--config FILE]\n"
                   "       gantryctl tier demote NAMESPACE/PVC|PV|UUID|IMAGE|CLUSTER/POOL/IMAGE\n"
                   "                             [--config FILE] [--kubeconfig FILE]\n"
                   "status lists every tiering copy (dataset promotions between clusters, from the\n"
                   "records in Ceph; checkpoint drains and restores, asked of every configured\n"
                   "target) with its source, destination, bytes done, rate, ETA and state.\n"
                   "promote copies one image into a new one in another cluster, resumably (Ctrl-C\n"
                   "stops it; the same command resumes). A complete copy of an older snapshot of\n"
                   "the same source in the destination pool is refreshed instead (only the changed\n"
                   "extents copied); --refresh fails rather than copy everything.\n"
                   "demote discards a promoted copy's data (never one in use); the next\n"
                   "ControllerPublishVolume copies it again from its source.\n"
                   "Default config: " DEFAULT_CONFIG " (the driver config of gantry-csi).\n");
}

static int status_main(int argc, char **argv)
{
        static const struct option opts[] = { { "config", required_argument, NULL, 'c' },
                                              { "json", no_argument, NULL, 'j' },
                                              { "help", no_argument, NULL, 'h' },
                                              { 0 } };
        const char *path = DEFAULT_CONFIG;
        struct gantry_config *config = NULL;
        struct gantry_error err = { 0 };
        struct table t = { 0 };
        bool json = false, failed = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c': path = optarg; break;
                case 'j': json = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc + 1) {
                usage(stderr);
                return 2;
        }
        if ((r = gantry_config_load(path, &config, &err)) < 0) {
                fprintf(stderr, "gantryctl tier status: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_log_set_level(GANTRY_LOG_WARN); /* the table is the output */
        t.errors = json_array();
        for (size_t i = 0; i < sizeof(row_sources) / sizeof(row_sources[0]); i++)
                if (row_sources[i](config, &t) < 0)
                        failed = true;
        r = json ? print_json(&t) : (print_table(&t), 0);
        for (size_t i = 0; i < t.n; i++)
                gantry_copier_record_clear(&t.rows[i].rec);
        free(t.rows);
        json_decref(t.errors);
        gantry_controller_shutdown();
        gantry_config_free(config);
        return r < 0 || failed ? 1 : 0;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
        (void)sig;
        interrupted = 1;
}

static int print_progress(const char *line, void *arg)
{
        (void)arg;
        printf("%s\n", line);
        fflush(stdout);
        return interrupted ? -1 : 0;
}

static int promote_main(int argc, char **argv)
{
        static const struct option opts[] = { { "config", required_argument, NULL, 'c' },
                                              { "from", required_argument, NULL, 'f' },
                                              { "to", required_argument, NULL, 't' },
                                              { "data-pool", required_argument, NULL, 'd' },
                                              { "refresh", no_argument, NULL, 'r' },
                                              { "help", no_argument, NULL, 'h' },
                                              { 0 } };
        const char *path = DEFAULT_CONFIG, *from = NULL, *to = NULL, *data_pool = NULL;
        struct gantry_config *config = NULL;
        struct gantry_error err = { 0 };
        struct sigaction sa = { .sa_handler = on_signal };
        bool refresh = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c': path = optarg; break;
                case 'f': from = optarg; break;
                case 't': to = optarg; break;
                case 'd': data_pool = optarg; break;
                case 'r': refresh = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc + 1 || !from || !to) {
                fprintf(stderr, "gantryctl tier promote: --from and --to are required\n");
                return 2;
        }
        if ((r = gantry_config_load(path, &config, &err)) < 0) {
                fprintf(stderr, "gantryctl tier promote: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_log_set_level(GANTRY_LOG_WARN);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        r = (refresh ? gantry_controller_refresh_image : gantry_controller_promote_image)(
                config, from, to, data_pool, print_progress, NULL, &err);
        if (r == 0)
                printf("%s %s -> %s\n", refresh ? "refreshed" : "promoted", from, to);
        else
                fprintf(stderr, "gantryctl tier promote: %s\n", err.msg);
        gantry_controller_shutdown();
        gantry_config_free(config);
        return r == 0 ? 0 : r == -EINVAL || r == -EEXIST ? 2 : 1;
}

/* `tier demote`: exit 0 demoted (or already), 1 kept (in use) or failed, 2 usage / not found. */
static int demote_main(int argc, char **argv)
{
        static const struct option opts[] = { { "config", required_argument, NULL, 'c' },
                                              { "kubeconfig", required_argument, NULL, 'k' },
                                              { "help", no_argument, NULL, 'h' },
                                              { 0 } };
        const char *path = DEFAULT_CONFIG, *kubeconfig = NULL;
        struct gantry_config *config = NULL;
        struct gantry_error err = { 0 };
        char out[512] = "";
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c': path = optarg; break;
                case 'k': kubeconfig = optarg; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gantryctl tier demote: name one copy (a PVC NAMESPACE/NAME, a PV, "
                                "a volume uuid or an image)\n");
                return 2;
        }
        if ((r = gantry_config_load(path, &config, &err)) < 0) {
                fprintf(stderr, "gantryctl tier demote: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_log_set_level(GANTRY_LOG_WARN);
        r = gantry_controller_demote(config, argv[optind - 1], kubeconfig, out, sizeof(out), &err);
        if (r >= 0)
                printf("%s\n", out);
        else
                fprintf(stderr, "gantryctl tier demote: %s\n", err.msg);
        gantry_controller_shutdown();
        gantry_config_free(config);
        return r >= 0 ? 0 : r == -EINVAL || r == -ENOENT ? 2 : 1;
}

int gantry_tier_main(int argc, char **argv)
{
        if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
                usage(argc < 1 ? stderr : stdout);
                return argc < 1 ? 2 : 0;
        }
        if (strcmp(argv[0], "status") == 0)
                return status_main(argc - 1, argv + 1);
        if (strcmp(argv[0], "promote") == 0)
                return promote_main(argc - 1, argv + 1);
        if (strcmp(argv[0], "demote") == 0)
                return demote_main(argc - 1, argv + 1);
        fprintf(stderr, "gantryctl tier: %s: unknown subcommand\n", argv[0]);
        usage(stderr);
        return 2;
}
