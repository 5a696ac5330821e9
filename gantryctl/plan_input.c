/*
 * Reading and checking the inputs of `gantryctl plan`; see plan_input.h.
 *
 * Table-driven: `fields` holds every numeric input once, so the JSON
 * decoder, the flag parser, the defaults, the range checks and the usage
 * text cannot disagree.
 */
#include "plan_input.h"
#include "read_file.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum section { SEC_CLUSTER, SEC_READS, SEC_CAPACITY, SEC_CHECKPOINT, SEC_PROMOTION, SEC_COUNT };

static const char *const section_keys[SEC_COUNT] = { "cluster", "reads", "capacity", "checkpoint",
                                                     "promotion" };

#define REQUIRED NAN /* a default of NaN: the field must be given */
#define OPTIONAL 0.0 /* 0 means "not given" for either-or fields */

struct field {
        enum section section;
        const char *key;  /* JSON key inside its section */
        const char *flag; /* without the leading "--" */
        size_t offset;    /* of a double in struct gantry_plan_input */
        double min, max;
        bool min_open;    /* min itself is not allowed */
        bool integer;
        double dflt;
        const char *help;
};

#define F(sec, key, flag, member, min, max, open, integer, dflt, help) \
        { sec, key, flag, offsetof(struct gantry_plan_input, member), min, max, open, integer, dflt, help }

static const struct field fields[] = {
        F(SEC_CLUSTER, "gpus", "gpus", cluster.gpus, 0, 1e7, true, true, REQUIRED,
          "GPUs reading at once"),
        F(SEC_CLUSTER, "gpusPerNode", "gpus-per-node", cluster.gpus_per_node, 0, 64, true, true, 8,
          "GPUs per node"),
        F(SEC_CLUSTER, "nodeNicGbps", "node-nic-gbps", cluster.node_nic_gbps, 0, 1e5, true, false,
          REQUIRED, "storage-facing NIC per GPU node, Gbit/s"),
        F(SEC_CLUSTER, "oversubscription", "oversubscription", cluster.oversubscription, 1, 64, false,
          false, 1, "leaf downlink:uplink ratio (2 means 2:1)"),
        F(SEC_READS, "ingestMBps", "ingest-mbps", reads.ingest_mbps, 0, 1e6, true, false, OPTIONAL,
          "per-GPU ingest, MB/s (or the next two)"),
        F(SEC_READS, "samplesPerSecond", "samples-per-sec", reads.samples_per_s, 0, 1e9, true, false,
          OPTIONAL, "per-GPU samples/s"),
        F(SEC_READS, "bytesPerSample", "bytes-per-sample", reads.bytes_per_sample, 0, 1e12, true,
          false, OPTIONAL, "bytes per sample"),
        F(SEC_READS, "datasetGB", "dataset-gb", reads.dataset_gb, 0, 1e9, true, false, REQUIRED,
          "dataset size, GB"),
        F(SEC_READS, "nodeCacheGB", "node-cache-gb", reads.node_cache_gb, 0, 1e6, false, false, 0,
          "page cache per node for the dataset, GB"),
        F(SEC_READS, "storageNodes", "storage-nodes", reads.storage_nodes, 0, 1e5, true, true,
          REQUIRED, "storage nodes"),
        F(SEC_READS, "storageReadGBps", "storage-read-gbytes", reads.storage_read_gbytes, 0, 1e4, true,
          false, REQUIRED, "read GB/s per storage node"),
        F(SEC_READS, "storageNicGbps", "storage-nic-gbps", reads.storage_nic_gbps, 0, 1e5, true, false,
          REQUIRED, "NIC per storage node, Gbit/s"),
        F(SEC_READS, "rebuildShare", "rebuild-share", reads.rebuild_share, 0, 0.99, false, false, 0.25,
          "survivors' bandwidth spent rebuilding a lost node"),
        F(SEC_CAPACITY, "rawTB", "raw-tb", capacity.raw_tb, 0, 1e9, true, false, REQUIRED,
          "raw capacity, TB"),
        F(SEC_CAPACITY, "ecK", "ec-k", capacity.ec_k, 1, 64, false, true, 4, "erasure code data chunks"),
        F(SEC_CAPACITY, "ecM", "ec-m", capacity.ec_m, 1, 64, false, true, 2,
          "erasure code coding chunks"),
        F(SEC_CAPACITY, "replicas", "replicas", capacity.replicas, 1, 16, false, true, 3,
          "copies for n-way replication"),
        F(SEC_CAPACITY, "fill", "fill", capacity.fill, 0, 1, true, false, 0.85,
          "fraction of raw you allow to fill"),
        F(SEC_CHECKPOINT, "sizeGB", "ckpt-size-gb", checkpoint.size_gb, 0, 1e9, true, false, OPTIONAL,
          "checkpoint size, GB (or the next three)"),
        F(SEC_CHECKPOINT, "paramsBillion", "params-billion", checkpoint.params_billion, 0, 1e6, true,
          false, OPTIONAL, "model parameters, billions"),
        F(SEC_CHECKPOINT, "bytesPerParam", "bytes-per-param", checkpoint.bytes_per_param, 0, 64, true,
          false, 2, "bytes per parameter"),
        F(SEC_CHECKPOINT, "optimizerMultiplier", "optimizer-multiplier",
          checkpoint.optimizer_multiplier, 1, 64, false, false, 7,
          "checkpoint bytes / weight bytes (bf16+fp32 Adam: 7)"),
        F(SEC_CHECKPOINT, "gdsEfficiency", "gds-efficiency", checkpoint.gds_efficiency, 0, 1, true,
          false, 0.9, "GPUDirect Storage share of the path"),
        F(SEC_CHECKPOINT, "bounceEfficiency", "bounce-efficiency", checkpoint.bounce_efficiency, 0, 1,
          true, false, 0.6, "bounce-buffer share of the path"),
        F(SEC_CHECKPOINT, "intervalMinutes", "interval-min", checkpoint.interval_min, 0, 1e6, true,
          false, REQUIRED, "checkpoint start to next start, minutes"),
        F(SEC_CHECKPOINT, "mtbfHours", "mtbf-hours", checkpoint.mtbf_hours, 0, 1e7, false, false, 0,
          "cluster mean time between failures, hours"),
        F(SEC_CHECKPOINT, "drainGBps", "drain-gbytes", checkpoint.drain_gbytes, 0, 1e5, false, false, 0,
          "durable tier write GB/s for drains (0: none)"),
        F(SEC_CHECKPOINT, "drainCapGBps", "drain-cap-gbytes", checkpoint.drain_cap_gbytes, 0, 1e5, false,
          false, 0, "sum of the targets' drain caps, GB/s (0: none)"),
        F(SEC_PROMOTION, "datasetGB", "promote-gb", promotion.dataset_gb, 0, 1e9, true, false, REQUIRED,
          "dataset to promote (its allocated bytes), GB"),
        F(SEC_PROMOTION, "sourceReadGBps", "source-read-gbytes", promotion.source_read_gbytes, 0, 1e5,
          true, false, REQUIRED, "source cluster's read GB/s left for copies"),
        F(SEC_PROMOTION, "destinationWriteGBps", "dest-write-gbytes", promotion.dest_write_gbytes, 0,
          1e5, true, false, REQUIRED, "destination cluster's write GB/s"),
        F(SEC_PROMOTION, "copyReadMBps", "copy-read-mbps", promotion.read_cap_mbps, 0, 1e8, false,
          false, 0, "the source's clusters[].copy.readMBps (0: no cap)"),
        F(SEC_PROMOTION, "linkGbps", "link-gbps", promotion.link_gbps, 0, 1e6, false, false, 0,
          "network between the clusters, Gbit/s (0: not a limit)"),
        F(SEC_PROMOTION, "copierGBps", "copier-gbytes", promotion.copier_gbytes, 0, 1e5, false, false, 0,
          "one copy's own top speed, GB/s (bench/tier; 0: not a limit)"),
        F(SEC_PROMOTION, "promotions", "promotions", promotion.promotions, 1, 1e4, false, true, 1,
          "copies from the source at once (they share it all)"),
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

struct parse {
        struct gantry_plan_input in;
        bool set[N_FIELDS];
        bool tiers_set, tiers_from_flags;
};

static double *slot(struct gantry_plan_input *in, const struct field *f)
{
        return (double *)((char *)in + f->offset);
}

/* Stores @v in field @i, checked; @as_named is how the user named it. */
static int set_value(struct parse *p, size_t i, double v, const char *as_named,
                     struct gantry_error *err)
{
        const struct field *f = &fields[i];

        if (!isfinite(v) || v < f->min || v > f->max || (f->min_open && v == f->min))
                return gantry_error_set(err, EINVAL, "%s: must be a number %s %g and <= %g", as_named,
                                        f->min_open ? ">" : ">=", f->min, f->max);
        if (f->integer && v != floor(v))
                return gantry_error_set(err, EINVAL, "%s: must be a whole number", as_named);
        *slot(&p->in, f) = v;
        p->set[i] = true;
        return 0;
}

static int add_tier(struct parse *p, const char *name, double gbytes, const char *as_named,
                    struct gantry_error *err)
{
        struct gantry_plan_checkpoint_in *c = &p->in.checkpoint;

        if (c->n_tiers >= GANTRY_PLAN_MAX_TIERS)
                return gantry_error_set(err, EINVAL, "%s: at most %d tiers", as_named,
                                        GANTRY_PLAN_MAX_TIERS);
        if (!name[0] || strlen(name) >= GANTRY_PLAN_NAME_MAX)
                return gantry_error_set(err, EINVAL, "%s: name must have 1 to %d characters", as_named,
                                        GANTRY_PLAN_NAME_MAX - 1);
        if (!isfinite(gbytes) || gbytes <= 0 || gbytes > 1e6)
                return gantry_error_set(err, EINVAL, "%s: write GB/s must be a number > 0 and <= 1e6",
                                        as_named);
        snprintf(c->tiers[c->n_tiers].name, GANTRY_PLAN_NAME_MAX, "%s", name);
        c->tiers[c->n_tiers].write_gbytes = gbytes;
        c->n_tiers++;
        p->tiers_set = true;
        return 0;
}

static int parse_json_tiers(struct parse *p, json_t *arr, struct gantry_error *err)
{
        json_t *t;
        size_t i;
        char where[64];

        if (!json_is_array(arr) || json_array_size(arr) == 0)
                return gantry_error_set(err, EINVAL, "checkpoint.tiers: must be a non-empty array");
        json_array_foreach(arr, i, t) {
                json_t *name = json_object_get(t, "name"), *bw = json_object_get(t, "writeGBps");

                snprintf(where, sizeof(where), "checkpoint.tiers[%zu]", i);
                if (!json_is_object(t) || json_object_size(t) != 2 || !json_is_string(name) ||
                    !json_is_number(bw))
                        return gantry_error_set(err, EINVAL,
                                                "%s: must be {\"name\": string, \"writeGBps\": number}",
                                                where);
                if (add_tier(p, json_string_value(name), json_number_value(bw), where, err) < 0)
                        return -EINVAL;
        }
        return 0;
}

static int parse_json_section(struct parse *p, enum section s, json_t *obj, struct gantry_error *err)
{
        const char *key;
        json_t *v;
        char where[96];

        if (!json_is_object(obj))
                return gantry_error_set(err, EINVAL, "%s: must be an object", section_keys[s]);
        json_object_foreach(obj, key, v) {
                size_t i;

                snprintf(where, sizeof(where), "%s.%s", section_keys[s], key);
                if (s == SEC_CHECKPOINT && strcmp(key, "tiers") == 0) {
                        if (parse_json_tiers(p, v, err) < 0)
                                return -EINVAL;
                        continue;
                }
                for (i = 0; i < N_FIELDS; i++)
                        if (fields[i].section == s && strcmp(fields[i].key, key) == 0)
                                break;
                if (i == N_FIELDS)
                        return gantry_error_set(err, EINVAL, "%s: unknown field", where);
                if (!json_is_number(v))
                        return gantry_error_set(err, EINVAL, "%s: must be a number", where);
                if (set_value(p, i, json_number_value(v), where, err) < 0)
                        return -EINVAL;
        }
        return 0;
}

static int parse_json(struct parse *p, const char *text, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        const char *key;
        json_t *v;
        int r = 0;

        if (!root)
                return gantry_error_set(err, EINVAL, "line %d column %d: %s", jerr.line, jerr.column,
                                        jerr.text);
        if (!json_is_object(root)) {
                r = gantry_error_set(err, EINVAL, "top level: must be an object");
                goto out;
        }
        json_object_foreach(root, key, v) {
                enum section s;

                for (s = 0; s < SEC_COUNT; s++)
                        if (strcmp(section_keys[s], key) == 0)
                                break;
                if (s == SEC_COUNT) {
                        r = gantry_error_set(err, EINVAL, "%s: unknown section (cluster, reads, "
                                             "capacity, checkpoint, promotion)", key);
                        goto out;
                }
                r = parse_json_section(p, s, v, err);
                if (r < 0)
                        goto out;
        }
out:
        json_decref(root);
        return r;
}

static bool section_touched(const struct parse *p, enum section s)
{
        for (size_t i = 0; i < N_FIELDS; i++)
                if (fields[i].section == s && p->set[i])
                        return true;
        return s == SEC_CHECKPOINT && p->tiers_set;
}

static int field_index(enum section s, const char *key)
{
        for (size_t i = 0; i < N_FIELDS; i++)
                if (fields[i].section == s && strcmp(fields[i].key, key) == 0)
                        return (int)i;
        return -1;
}

static int missing(enum section s, const char *key, const char *why, struct gantry_error *err)
{
        const struct field *f = &fields[field_index(s, key)];

        return gantry_error_set(err, EINVAL, "%s.%s (--%s): %s", section_keys[s], f->key, f->flag, why);
}

/* Fills defaults, then checks required, either-or and cross-field rules. */
static int finish(struct parse *p, struct gantry_error *err)
{
        struct gantry_plan_input *in = &p->in;
        bool want[SEC_COUNT];

        for (int s = 0; s < SEC_COUNT; s++)
                want[s] = section_touched(p, s);
        if (!want[SEC_READS] && !want[SEC_CAPACITY] && !want[SEC_CHECKPOINT] && !want[SEC_PROMOTION])
                return gantry_error_set(err, EINVAL, "nothing to plan: give the fields of reads, "
                                        "capacity, checkpoint or promotion (see --help)");
        want[SEC_CLUSTER] = want[SEC_CLUSTER] || want[SEC_READS] || want[SEC_CHECKPOINT];
        for (size_t i = 0; i < N_FIELDS; i++) {
                const struct field *f = &fields[i];

                if (!want[f->section] || p->set[i])
                        continue;
                if (isnan(f->dflt))
                        return missing(f->section, f->key, "required", err);
                *slot(in, f) = f->dflt;
        }
        in->has_reads = want[SEC_READS];
        in->has_capacity = want[SEC_CAPACITY];
        in->has_checkpoint = want[SEC_CHECKPOINT];
        in->has_promotion = want[SEC_PROMOTION];

        if (in->has_reads) {
                bool by_samples = in->reads.samples_per_s > 0 || in->reads.bytes_per_sample > 0;

                if (in->reads.ingest_mbps > 0 && by_samples)
                        return missing(SEC_READS, "ingestMBps", "give it or samplesPerSecond and "
                                       "bytesPerSample, not both", err);
                if (in->reads.ingest_mbps == 0 && !by_samples)
                        return missing(SEC_READS, "ingestMBps", "required (or samplesPerSecond "
                                       "and bytesPerSample)", err);
                if (by_samples && in->reads.samples_per_s == 0)
                        return missing(SEC_READS, "samplesPerSecond", "required with "
                                       "bytesPerSample", err);
                if (by_samples && in->reads.bytes_per_sample == 0)
                        return missing(SEC_READS, "bytesPerSample", "required with "
                                       "samplesPerSecond", err);
        }
        if (in->has_capacity && in->has_reads) {
                /* one chunk or copy per storage node (failure domain host) */
                if (in->capacity.ec_k + in->capacity.ec_m > in->reads.storage_nodes)
                        return gantry_error_set(err, EINVAL, "capacity.ecK + capacity.ecM: %g chunks "
                                                "need %g storage nodes, reads.storageNodes is %g",
                                                in->capacity.ec_k + in->capacity.ec_m,
                                                in->capacity.ec_k + in->capacity.ec_m,
                                                in->reads.storage_nodes);
                if (in->capacity.replicas > in->reads.storage_nodes)
                        return gantry_error_set(err, EINVAL, "capacity.replicas: %g copies need %g "
                                                "storage nodes, reads.storageNodes is %g",
                                                in->capacity.replicas, in->capacity.replicas,
                                                in->reads.storage_nodes);
        }
        if (in->has_checkpoint) {
                struct gantry_plan_checkpoint_in *c = &in->checkpoint;

                if (c->size_gb > 0 && c->params_billion > 0)
                        return missing(SEC_CHECKPOINT, "sizeGB", "give it or paramsBillion, not "
                                       "both", err);
                if (c->size_gb == 0 && c->params_billion == 0)
                        return missing(SEC_CHECKPOINT, "sizeGB", "required (or paramsBillion)", err);
                if (c->n_tiers == 0)
                        return gantry_error_set(err, EINVAL, "checkpoint.tiers (--tier NAME=GBPS): "
                                                "at least one write tier is required");
        }
        return 0;
}

int gantry_plan_input_parse_json(const char *text, struct gantry_plan_input *ret,
                                 struct gantry_error *err)
{
        struct parse p = { 0 };
        int r = parse_json(&p, text, err);

        if (r < 0)
                return r;
        r = finish(&p, err);
        if (r < 0)
                return r;
        *ret = p.in;
        return 0;
}

static int load_file(struct parse *p, const char *path, struct gantry_error *err)
{
        char *buf = NULL;
        int r = gantryctl_read_file(path, 1 << 20, &buf, err);

        if (r < 0)
                return gantry_error_prefix(err, "--input");
        r = parse_json(p, buf, err);
        if (r < 0)
                r = gantry_error_prefix(err, path);
        free(buf);
        return r;
}

json_t *gantry_plan_input_json(const struct gantry_plan_input *in)
{
        bool want[SEC_COUNT] = { in->has_reads || in->has_checkpoint, in->has_reads, in->has_capacity,
                                 in->has_checkpoint, in->has_promotion };
        json_t *root = json_object(), *sec[SEC_COUNT] = { NULL }, *tiers;

        if (!root)
                return NULL;
        for (int s = 0; s < SEC_COUNT; s++)
                if (want[s]) {
                        sec[s] = json_object();
                        json_object_set_new(root, section_keys[s], sec[s]);
                }
        for (size_t i = 0; i < N_FIELDS; i++) {
                double v = *slot((struct gantry_plan_input *)in, &fields[i]);

                /* either-or fields left at 0 were not used */
                if (sec[fields[i].section] && !(v == 0 && fields[i].dflt == OPTIONAL &&
                                                !isnan(fields[i].dflt)))
                        json_object_set_new(sec[fields[i].section], fields[i].key, json_real(v));
        }
        if (sec[SEC_CHECKPOINT]) {
                tiers = json_array();
                for (int t = 0; tiers && t < in->checkpoint.n_tiers; t++)
                        json_array_append_new(tiers, json_pack("{s:s, s:f}", "name",
                                                               in->checkpoint.tiers[t].name, "writeGBps",
                                                               in->checkpoint.tiers[t].write_gbytes));
                json_object_set_new(sec[SEC_CHECKPOINT], "tiers", tiers);
        }
        return root;
}

void gantry_plan_input_usage(void)
{
        printf("usage: gantryctl plan [--input FILE.json] [--FIELD VALUE ...] [--tier NAME=GBPS ...]\n"
               "                      [--json] [--svg FILE]\n\n"
               "Fields (JSON path, flag, default):\n");
        for (size_t i = 0; i < N_FIELDS; i++) {
                const struct field *f = &fields[i];
                char d[32], path[64];

                if (isnan(f->dflt))
                        snprintf(d, sizeof(d), "required");
                else if (f->dflt == 0)
                        snprintf(d, sizeof(d), "-");
                else
                        snprintf(d, sizeof(d), "%g", f->dflt);
                snprintf(path, sizeof(path), "%s.%s", section_keys[f->section], f->key);
                printf("  %-31s --%-21s %-9s %s\n", path, f->flag, d, f->help);
        }
        printf("  %-31s --%-21s %-9s %s\n", "checkpoint.tiers[]", "tier NAME=GBPS", "required",
               "a write tier and its aggregate GB/s (repeat)");
}

static int parse_flag_value(const char *flag, const char *s, double *ret, struct gantry_error *err)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end)
                return gantry_error_set(err, EINVAL, "--%s: '%s' is not a number", flag, s);
        *ret = v;
        return 0;
}

int gantry_plan_input_parse(int argc, char **argv, struct gantry_plan_input *ret,
                            struct gantry_error *err)
{
        struct parse p = { 0 };
        int r;

        /* the file first, wherever --input stands, so flags override it */
        for (int i = 0; i < argc; i++)
                if (strcmp(argv[i], "--input") == 0) {
                        if (i + 1 >= argc)
                                return gantry_error_set(err, EINVAL, "--input: needs a file");
                        r = load_file(&p, argv[i + 1], err);
                        if (r < 0)
                                return r;
                }
        for (int i = 0; i < argc; i++) {
                const char *a = argv[i], *val;
                double v;
                size_t f;

                if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        gantry_plan_input_usage();
                        return 1;
                }
                if (strcmp(a, "--json") == 0) {
                        p.in.json = true;
                        continue;
                }
                if (strncmp(a, "--", 2) != 0)
                        return gantry_error_set(err, EINVAL, "%s: unexpected argument", a);
                if (i + 1 >= argc)
                        return gantry_error_set(err, EINVAL, "%s: needs a value", a);
                val = argv[++i];
                if (strcmp(a, "--input") == 0)
                        continue;
                if (strcmp(a, "--svg") == 0) {
                        p.in.svg_path = val;
                        continue;
                }
                if (strcmp(a, "--tier") == 0) {
                        const char *eq = strchr(val, '=');
                        char name[GANTRY_PLAN_NAME_MAX + 1];

                        if (!p.tiers_from_flags) /* flags replace the file's tiers */
                                p.in.checkpoint.n_tiers = 0;
                        p.tiers_from_flags = true;
                        if (!eq || (size_t)(eq - val) > GANTRY_PLAN_NAME_MAX)
                                return gantry_error_set(err, EINVAL, "--tier: '%s' is not NAME=GBPS",
                                                        val);
                        snprintf(name, sizeof(name), "%.*s", (int)(eq - val), val);
                        if (parse_flag_value("tier", eq + 1, &v, err) < 0 ||
                            add_tier(&p, name, v, "--tier", err) < 0)
                                return -EINVAL;
                        continue;
                }
                for (f = 0; f < N_FIELDS; f++)
                        if (strcmp(fields[f].flag, a + 2) == 0)
                                break;
                if (f == N_FIELDS)
                        return gantry_error_set(err, EINVAL, "%s: unknown flag (see --help)", a);
                if (parse_flag_value(fields[f].flag, val, &v, err) < 0 ||
                    set_value(&p, f, v, a, err) < 0)
                        return -EINVAL;
        }
        r = finish(&p, err);
        if (r < 0)
                return r;
        *ret = p.in;
        return 0;
}
