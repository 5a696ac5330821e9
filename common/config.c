/*
 * Loading and validating the driver configuration; see config.h.
 *
 * Decoding is table-free but strict: every object is checked for unknown keys
 * (a typo such as "monitor" must not silently mean "no monitors"), and every
 * error names the file and the JSON path of the field.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>


static int check_keys(json_t *obj, const char *where, const char *const *allowed,
                      struct gantry_error *err)
{
        const char *key;
        json_t *v;

        json_object_foreach(obj, key, v) {
                int ok = 0;
                for (const char *const *a = allowed; *a; a++)
                        if (strcmp(*a, key) == 0)
                                ok = 1;
                if (!ok)
                        return gantry_error_set(err, EINVAL, "%s%s%s: unknown field", where,
                                                *where ? "." : "", key);
        }
        (void)v;
        return 0;
}

static int valid_id(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > GANTRY_CONFIG_ID_MAX)
                return 0;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
                        return 0;
        return 1;
}

/* Reads an optional string; *ret stays NULL when absent. */
static int get_string(json_t *obj, const char *key, const char *where, int required, char **ret,
                      struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                if (required)
                        return gantry_error_set(err, EINVAL, "%s.%s: required", where, key);
                return 0;
        }
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4096)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a non-empty string", where, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_string_list(json_t *obj, const char *key, const char *where, int required,
                           char ***ret, size_t *ret_n, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key), *item;
        size_t i;

        if (!v) {
                if (required)
                        return gantry_error_set(err, EINVAL, "%s.%s: required", where, key);
                return 0;
        }
        if (!json_is_array(v) || (required && json_array_size(v) == 0) ||
            json_array_size(v) > GANTRY_CONFIG_MAX_LIST)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a %sarray of at most %d strings",
                                        where, key, required ? "non-empty " : "",
                                        GANTRY_CONFIG_MAX_LIST);
        *ret = calloc(json_array_size(v) + 1, sizeof(char *));
        if (!*ret)
                return -ENOMEM;
        json_array_foreach(v, i, item) {
                if (!json_is_string(item) || json_string_length(item) == 0)
                        return gantry_error_set(err, EINVAL, "%s.%s[%zu]: must be a non-empty string",
                                                where, key, i);
                (*ret)[i] = strdup(json_string_value(item));
                if (!(*ret)[i])
                        return -ENOMEM;
                *ret_n = i + 1;
        }
        return 0;
}

static int get_number(json_t *obj, const char *key, const char *where, double min, double max,
                      double *ret, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        if (!v)
                return 0;
        if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a number from %g to %g", where,
                                        key, min, max);
        *ret = json_number_value(v);
        return 0;
}

/* clusters[].evict: the demotion policy of the promoted copies kept in a cluster. */
static int parse_evict(json_t *o, const char *where, struct gantry_cluster_config *c,
                       struct gantry_error *err)
{
        static const char *const keys[] = { "highWatermark", "lowWatermark", "idleSeconds",
                                            "intervalSeconds", "capacityBytes", NULL };
        struct gantry_evict_policy *e = &c->evict;
        double high = 0.85, low = 0.70, idle = 3600, interval = 60, cap = 0;
        char w[128];
        int r;

        if (!o)
                return 0;
        snprintf(w, sizeof(w), "%s.evict", where);
        if (!json_is_object(o))
                return gantry_error_set(err, EINVAL, "%s: must be an object", w);
        if ((r = check_keys(o, w, keys, err)) < 0 ||
            (r = get_number(o, "highWatermark", w, 0, 1, &high, err)) < 0 ||
            (r = get_number(o, "lowWatermark", w, 0, 1, &low, err)) < 0 ||
            (r = get_number(o, "idleSeconds", w, 0, 1e9, &idle, err)) < 0 ||
            (r = get_number(o, "intervalSeconds", w, 1, 86400, &interval, err)) < 0 ||
            (r = get_number(o, "capacityBytes", w, 0, 1e18, &cap, err)) < 0)
                return r;
        if (!json_object_get(o, "lowWatermark") && low > high)
                low = high; /* only the high mark given, below the default low one */
        if (low > high)
                return gantry_error_set(err, EINVAL, "%s.lowWatermark: must not exceed highWatermark "
                                        "(%g)", w, high);
        if (!c->user_id)
                return gantry_error_set(err, EINVAL, "%s: needs the cluster's userID and keyFile (the "
                                        "controller reads the copies' records with them)", w);
        e->enabled = true;
        e->high_watermark = high;
        e->low_watermark = low;
        e->idle_seconds = (int64_t)idle;
        e->interval_seconds = (int)interval;
        e->capacity_bytes = (uint64_t)cap;
        return 0;
}

/* copy.mode ("copy" | "rbd-mirror") and copy.mirrorTo, the pairs rbd-mirror serves. */
static int parse_copy_mode(json_t *copy, const char *where, struct gantry_cluster_config *c,
                           struct gantry_error *err)
{
        json_t *mode = json_object_get(copy, "mode");
        const char *m = mode ? json_string_value(mode) : "copy";
        int r;

        if (!m || (strcmp(m, "copy") != 0 && strcmp(m, "rbd-mirror") != 0))
                return gantry_error_set(err, EINVAL, "%s.mode: must be \"copy\" or \"rbd-mirror\"",
                                        where);
        c->copy_rbd_mirror = strcmp(m, "rbd-mirror") == 0;
        if ((r = get_string_list(copy, "mirrorTo", where, c->copy_rbd_mirror, &c->mirror_to,
                                 &c->n_mirror_to, err)) < 0)
                return r;
        if (!c->copy_rbd_mirror && c->n_mirror_to)
                return gantry_error_set(err, EINVAL, "%s.mirrorTo: only with mode \"rbd-mirror\"",
                                        where);
        return 0;
}

static int parse_cluster(json_t *o, const char *where, struct gantry_cluster_config *c,
                         struct gantry_error *err)
{
        static const char *const keys[] = { "clusterID", "monitors", "tier", "location",
                                            "rbdTimeoutSeconds", "userID", "keyFile", "copy", "evict",
                                            NULL };
        static const char *const loc_keys[] = { "leaves", "readGBps", NULL };
        static const char *const copy_keys[] = { "readMBps", "objectsInFlight", "mode", "mirrorTo",
                                                 "waitSeconds", NULL };
        double timeout = 10, read_mbps = 0, in_flight = 16, wait = 0;
        json_t *loc, *copy;
        char w[128];
        int r;

        if (!json_is_object(o))
                return gantry_error_set(err, EINVAL, "%s: must be an object", where);
        if ((r = check_keys(o, where, keys, err)) < 0)
                return r;
        if ((r = get_string(o, "clusterID", where, 1, &c->cluster_id, err)) < 0)
                return r;
        if (!valid_id(c->cluster_id))
                return gantry_error_set(err, EINVAL,
                                        "%s.clusterID: must be 1-%d characters of [A-Za-z0-9._-]",
                                        where, GANTRY_CONFIG_ID_MAX);
        if ((r = get_string_list(o, "monitors", where, 1, &c->monitors, &c->n_monitors, err)) < 0)
                return r;
        if ((r = get_string(o, "tier", where, 0, &c->tier, err)) < 0 ||
            (r = get_string(o, "userID", where, 0, &c->user_id, err)) < 0 ||
            (r = get_string(o, "keyFile", where, 0, &c->key_file, err)) < 0)
                return r;
        if (!c->user_id != !c->key_file)
                return gantry_error_set(err, EINVAL, "%s.%s: required with %s", where,
                                        c->user_id ? "keyFile" : "userID",
                                        c->user_id ? "userID" : "keyFile");
        if ((r = get_number(o, "rbdTimeoutSeconds", where, 1, 3600, &timeout, err)) < 0)
                return r;
        c->rbd_timeout_seconds = (int)timeout;
        loc = json_object_get(o, "location");
        if (loc) {
                snprintf(w, sizeof(w), "%s.location", where);
                if (!json_is_object(loc))
                        return gantry_error_set(err, EINVAL, "%s: must be an object", w);
                if ((r = check_keys(loc, w, loc_keys, err)) < 0)
                        return r;
                if ((r = get_string_list(loc, "leaves", w, 0, &c->leaves, &c->n_leaves, err)) < 0)
                        return r;
                if ((r = get_number(loc, "readGBps", w, 0, 1e6, &c->read_gbps, err)) < 0)
                        return r;
        }
        copy = json_object_get(o, "copy");
        if (copy) {
                snprintf(w, sizeof(w), "%s.copy", where);
                if (!json_is_object(copy))
                        return gantry_error_set(err, EINVAL, "%s: must be an object", w);
                if ((r = check_keys(copy, w, copy_keys, err)) < 0 ||
                    (r = get_number(copy, "readMBps", w, 0, 1e7, &read_mbps, err)) < 0 ||
                    (r = get_number(copy, "objectsInFlight", w, 1, 64, &in_flight, err)) < 0 ||
                    (r = get_number(copy, "waitSeconds", w, 0, 3600, &wait, err)) < 0 ||
                    (r = parse_copy_mode(copy, w, c, err)) < 0)
                        return r;
        }
        c->copy_read_bytes_per_s = (uint64_t)(read_mbps * 1e6);
        c->copy_objects_in_flight = (int)in_flight;
        c->copy_wait_seconds = (int)wait;
        return parse_evict(json_object_get(o, "evict"), where, c, err);
}

static int parse_target(json_t *o, const char *where, struct gantry_target_config *t,
                        struct gantry_error *err)
{
        static const char *const keys[] = { "id", "url", "tokenFile", "caFile", "addresses",
                                            "leaf", "capacityBytes", NULL };
        static const char *const addr_keys[] = { "transport", "traddr", "trsvcid", NULL };
        json_t *addrs, *a;
        double cap = 0;
        size_t i;
        int r;

        if (!json_is_object(o))
                return gantry_error_set(err, EINVAL, "%s: must be an object", where);
        if ((r = check_keys(o, where, keys, err)) < 0)
                return r;
        if ((r = get_string(o, "id", where, 1, &t->id, err)) < 0)
                return r;
        if (!valid_id(t->id))
                return gantry_error_set(err, EINVAL,
                                        "%s.id: must be 1-%d characters of [A-Za-z0-9._-]", where,
                                        GANTRY_CONFIG_ID_MAX);
        if ((r = get_string(o, "url", where, 1, &t->url, err)) < 0)
                return r;
        if (strncmp(t->url, "http://", 7) != 0 && strncmp(t->url, "https://", 8) != 0)
                return gantry_error_set(err, EINVAL, "%s.url: must start with http:// or https://",
                                        where);
        if ((r = get_string(o, "tokenFile", where, 0, &t->token_file, err)) < 0 ||
            (r = get_string(o, "caFile", where, 0, &t->ca_file, err)) < 0 ||
            (r = get_string(o, "leaf", where, 0, &t->leaf, err)) < 0)
                return r;
        if ((r = get_number(o, "capacityBytes", where, 0, 9.0e18, &cap, err)) < 0)
                return r;
        t->capacity_bytes = (uint64_t)cap;
        addrs = json_object_get(o, "addresses");
        if (!json_is_array(addrs) || json_array_size(addrs) == 0 ||
            json_array_size(addrs) > GANTRY_CONFIG_MAX_LIST)
                return gantry_error_set(err, EINVAL, "%s.addresses: must be a non-empty array",
                                        where);
        t->addresses = calloc(json_array_size(addrs), sizeof(*t->addresses));
        if (!t->addresses)
                return -ENOMEM;
        json_array_foreach(addrs, i, a) {
                struct gantry_target_address *ad = &t->addresses[i];
                char w[160];

                t->n_addresses = i + 1;
                snprintf(w, sizeof(w), "%s.addresses[%zu]", where, i);
                if (!json_is_object(a))
                        return gantry_error_set(err, EINVAL, "%s: must be an object", w);
                if ((r = check_keys(a, w, addr_keys, err)) < 0 ||
                    (r = get_string(a, "transport", w, 1, &ad->transport, err)) < 0 ||
                    (r = get_string(a, "traddr", w, 1, &ad->traddr, err)) < 0 ||
                    (r = get_string(a, "trsvcid", w, 1, &ad->trsvcid, err)) < 0)
                        return r;
                if (strcmp(ad->transport, "tcp") != 0 && strcmp(ad->transport, "rdma") != 0)
                        return gantry_error_set(err, EINVAL, "%s.transport: must be tcp or rdma", w);
        }
        return 0;
}

static int parse_node(json_t *o, struct gantry_node_config *n, struct gantry_error *err)
{
        static const char *const keys[] = { "topology", "maxVolumesPerNode", "maxParallelMaps",
                                            "crushLocation", "readFromReplica", "hostNQN",
                                            "kernelModules", "bandwidthWindowSeconds",
                                            "bandwidthSampleSeconds", NULL };
        double maxvol = 0, maxmaps = 8, window = 600, sample = 10;
        json_t *topo, *v;
        const char *key;
        int r;

        if (!json_is_object(o))
                return gantry_error_set(err, EINVAL, "node: must be an object");
        if ((r = check_keys(o, "node", keys, err)) < 0)
                return r;
        if ((r = get_number(o, "maxVolumesPerNode", "node", 0, 1e6, &maxvol, err)) < 0 ||
            (r = get_number(o, "maxParallelMaps", "node", 1, 1024, &maxmaps, err)) < 0 ||
            (r = get_number(o, "bandwidthWindowSeconds", "node", 10, 86400, &window, err)) < 0 ||
            (r = get_number(o, "bandwidthSampleSeconds", "node", 1, 600, &sample, err)) < 0 ||
            (r = get_string(o, "crushLocation", "node", 0, &n->crush_location, err)) < 0 ||
            (r = get_string(o, "readFromReplica", "node", 0, &n->read_from_replica, err)) < 0 ||
            (r = get_string(o, "hostNQN", "node", 0, &n->host_nqn, err)) < 0 ||
            (r = get_string_list(o, "kernelModules", "node", 0, &n->kernel_modules,
                                 &n->n_kernel_modules, err)) < 0)
                return r;
        n->kernel_modules_set = json_object_get(o, "kernelModules") != NULL;
        for (size_t i = 0; i < n->n_kernel_modules; i++)
                if (strspn(n->kernel_modules[i], "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
                            strlen(n->kernel_modules[i]) ||
                    strlen(n->kernel_modules[i]) > 55)
                        return gantry_error_set(err, EINVAL,
                                                "node.kernelModules[%zu]: not a module name", i);
        n->max_volumes_per_node = (int64_t)maxvol;
        n->max_parallel_maps = (int)maxmaps;
        if (sample * 2 > window)
                return gantry_error_set(err, EINVAL,
                                        "node.bandwidthSampleSeconds: must be at most half of "
                                        "node.bandwidthWindowSeconds (%g)", window);
        n->bandwidth_window_seconds = (int)window;
        n->bandwidth_sample_seconds = (int)sample;
        if (n->read_from_replica && strcmp(n->read_from_replica, "balance") != 0 &&
            strcmp(n->read_from_replica, "localize") != 0)
                return gantry_error_set(err, EINVAL,
                                        "node.readFromReplica: must be balance or localize");
        topo = json_object_get(o, "topology");
        if (!topo)
                return 0;
        if (!json_is_object(topo) || json_object_size(topo) > GANTRY_CONFIG_MAX_LIST)
                return gantry_error_set(err, EINVAL, "node.topology: must be an object of strings");
        n->topology = calloc(json_object_size(topo) + 1, sizeof(*n->topology));
        if (!n->topology)
                return -ENOMEM;
        json_object_foreach(topo, key, v) {
                if (!json_is_string(v) || json_string_length(v) == 0)
                        return gantry_error_set(err, EINVAL,
                                                "node.topology.%s: must be a non-empty string", key);
                n->topology[n->n_topology].key = strdup(key);
                n->topology[n->n_topology].value = strdup(json_string_value(v));
                n->n_topology++;
                if (!n->topology[n->n_topology - 1].key || !n->topology[n->n_topology - 1].value)
                        return -ENOMEM;
        }
        return 0;
}

static int parse_root(json_t *root, struct gantry_config *c, struct gantry_error *err)
{
        static const char *const keys[] = { "logLevel", "clusters", "targets", "node", "dhchapKeyDir", NULL };
        json_t *v, *item;
        size_t i;
        int r;

        if (!json_is_object(root))
                return gantry_error_set(err, EINVAL, "(top level): must be a JSON object");
        if ((r = check_keys(root, "", keys, err)) < 0)
                return r;
        if ((r = get_string(root, "dhchapKeyDir", "", 0, &c->dhchap_key_dir, err)) < 0)
                return r;
        if (c->dhchap_key_dir && c->dhchap_key_dir[0] != '/')
                return gantry_error_set(err, EINVAL, "dhchapKeyDir: must be an absolute path");
        v = json_object_get(root, "logLevel");
        if (v && (!json_is_string(v) || gantry_log_level_parse(json_string_value(v), &c->log_level) < 0))
                return gantry_error_set(err, EINVAL, "logLevel: must be debug, info, warn or error");

        v = json_object_get(root, "clusters");
        if (v) {
                if (!json_is_array(v) || json_array_size(v) > GANTRY_CONFIG_MAX_CLUSTERS)
                        return gantry_error_set(err, EINVAL, "clusters: must be an array of at most %d",
                                                GANTRY_CONFIG_MAX_CLUSTERS);
                c->clusters = calloc(json_array_size(v) + 1, sizeof(*c->clusters));
                if (!c->clusters)
                        return -ENOMEM;
                json_array_foreach(v, i, item) {
                        char w[32];
                        snprintf(w, sizeof(w), "clusters[%zu]", i);
                        c->n_clusters = i + 1;
                        if ((r = parse_cluster(item, w, &c->clusters[i], err)) < 0)
                                return r;
                        for (size_t j = 0; j < i; j++)
                                if (strcmp(c->clusters[j].cluster_id, c->clusters[i].cluster_id) == 0)
                                        return gantry_error_set(err, EINVAL,
                                                                "%s.clusterID: duplicate of clusters[%zu]",
                                                                w, j);
                }
        }
        for (i = 0; i < c->n_clusters; i++) {
                const struct gantry_cluster_config *cl = &c->clusters[i];
                for (size_t j = 0; j < cl->n_mirror_to; j++)
                        if (!gantry_config_find_cluster(c, cl->mirror_to[j]) ||
                            strcmp(cl->mirror_to[j], cl->cluster_id) == 0)
                                return gantry_error_set(err, EINVAL,
                                                        "clusters[%zu].copy.mirrorTo[%zu]: %s is not "
                                                        "another configured clusterID",
                                                        i, j, cl->mirror_to[j]);
        }
        v = json_object_get(root, "targets");
        if (v) {
                if (!json_is_array(v) || json_array_size(v) > GANTRY_CONFIG_MAX_TARGETS)
                        return gantry_error_set(err, EINVAL, "targets: must be an array of at most %d",
                                                GANTRY_CONFIG_MAX_TARGETS);
                c->targets = calloc(json_array_size(v) + 1, sizeof(*c->targets));
                if (!c->targets)
                        return -ENOMEM;
                json_array_foreach(v, i, item) {
                        char w[32];
                        snprintf(w, sizeof(w), "targets[%zu]", i);
                        c->n_targets = i + 1;
                        if ((r = parse_target(item, w, &c->targets[i], err)) < 0)
                                return r;
                        for (size_t j = 0; j < i; j++)
                                if (strcmp(c->targets[j].id, c->targets[i].id) == 0)
                                        return gantry_error_set(err, EINVAL,
                                                                "%s.id: duplicate of targets[%zu]", w, j);
                }
        }
        v = json_object_get(root, "node");
        if (v && (r = parse_node(v, &c->node, err)) < 0)
                return r;
        return 0;
}

int gantry_config_new_default(struct gantry_config **ret_config)
{
        struct gantry_config *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->path = strdup("<defaults>");
        if (!c->path) {
                free(c);
                return -ENOMEM;
        }
        c->log_level = GANTRY_LOG_INFO;
        c->node.max_parallel_maps = 8;
        c->node.bandwidth_window_seconds = 600;
        c->node.bandwidth_sample_seconds = 10;
        *ret_config = c;
        return 0;
}

static int finish(json_t *root, const char *origin, struct gantry_config **ret_config,
                  struct gantry_error *err)
{
        struct gantry_config *c = NULL;
        int r;

        r = gantry_config_new_default(&c);
        if (r < 0)
                goto out;
        free(c->path);
        c->path = strdup(origin);
        if (!c->path) {
                r = -ENOMEM;
                goto out;
        }
        r = parse_root(root, c, err);
        if (r == -ENOMEM)
                gantry_error_set(err, ENOMEM, "out of memory");
        if (r < 0) {
                gantry_error_prefix(err, origin);
                goto out;
        }
        *ret_config = c;
        c = NULL;
out:
        gantry_config_free(c);
        json_decref(root);
        return r;
}

int gantry_config_parse(const char *json, const char *origin, struct gantry_config **ret_config,
                        struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);

        if (!root)
                return gantry_error_set(err, EINVAL, "%s: line %d column %d: %s", origin, jerr.line,
                                        jerr.column, jerr.text);
        return finish(root, origin, ret_config, err);
}

int gantry_config_load(const char *path, struct gantry_config **ret_config, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);

        if (!root) {
                if (json_error_code(&jerr) == json_error_cannot_open_file)
                        return gantry_error_set(err, ENOENT, "%s: cannot open: %s", path, jerr.text);
                return gantry_error_set(err, EINVAL, "%s: line %d column %d: %s", path, jerr.line,
                                        jerr.column, jerr.text);
        }
        return finish(root, path, ret_config, err);
}

static void free_list(char **list, size_t n)
{
        for (size_t i = 0; list && i < n; i++)
                free(list[i]);
        free(list);
}

void gantry_config_free(struct gantry_config *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n_clusters; i++) {
                struct gantry_cluster_config *cl = &c->clusters[i];
                free(cl->cluster_id);
                free_list(cl->monitors, cl->n_monitors);
                free(cl->tier);
                free(cl->user_id);
                free(cl->key_file);
                free_list(cl->leaves, cl->n_leaves);
                free_list(cl->mirror_to, cl->n_mirror_to);
        }
        free(c->clusters);
        for (size_t i = 0; i < c->n_targets; i++) {
                struct gantry_target_config *t = &c->targets[i];
                free(t->id);
                free(t->url);
                free(t->token_file);
                free(t->ca_file);
                free(t->leaf);
                for (size_t j = 0; j < t->n_addresses; j++) {
                        free(t->addresses[j].transport);
                        free(t->addresses[j].traddr);
                        free(t->addresses[j].trsvcid);
                }
                free(t->addresses);
        }
        free(c->targets);
        for (size_t i = 0; i < c->node.n_topology; i++) {
                free(c->node.topology[i].key);
                free(c->node.topology[i].value);
        }
        free(c->node.topology);
        free(c->node.crush_location);
        free(c->dhchap_key_dir);
        free(c->node.read_from_replica);
        free(c->node.host_nqn);
        free_list(c->node.kernel_modules, c->node.n_kernel_modules);
        free(c->path);
        free(c);
}

const struct gantry_cluster_config *gantry_config_find_cluster(const struct gantry_config *c,
                                                               const char *cluster_id)
{
        for (size_t i = 0; c && cluster_id && i < c->n_clusters; i++)
                if (strcmp(c->clusters[i].cluster_id, cluster_id) == 0)
                        return &c->clusters[i];
        return NULL;
}

bool gantry_config_rbd_mirror(const struct gantry_cluster_config *src, const char *dst_id)
{
        for (size_t i = 0; src && dst_id && src->copy_rbd_mirror && i < src->n_mirror_to; i++)
                if (strcmp(src->mirror_to[i], dst_id) == 0)
                        return true;
        return false;
}

const struct gantry_target_config *gantry_config_find_target(const struct gantry_config *c,
                                                             const char *id)
{
        for (size_t i = 0; c && id && i < c->n_targets; i++)
                if (strcmp(c->targets[i].id, id) == 0)
                        return &c->targets[i];
        return NULL;
}
