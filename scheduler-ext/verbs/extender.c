/*
 * kube-scheduler's extender verbs over the placement library: decode the
 * request (ExtenderArgs / ExtenderBindingArgs), ask filter / prioritize /
 * reserve, encode the reply. See extender.h.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "extender.h"
#include "gang.h"
#include "json_out.h"
#include "log.h"
#include "metrics.h"
#include "sched_backends.h"
#include "sched_demand.h"
#include "status.h"
#include "volume_modify.h"

#define MAX_EXTENDER_PRIORITY 10 /* kube-scheduler's MaxExtenderPriority */
/* A log value of a name the request carries (a pod "ns/name", a gang, a node), quoted */
#define LOG_NAME_MAX (2 * GANTRY_PLACEMENT_NAME_MAX + 16)
#define Q(value, buf) gantry_log_quote((value), (buf), sizeof(buf))

struct gantry_extender {
        struct gantry_sched_state *state;
        struct gantry_extender_options opts;
        pthread_mutex_t expire_lock;
        double last_expire;
        /* not ready: every verb answers 503 (an extender error), never a refusal */
        pthread_mutex_t ready_lock;
        bool ready;
        char not_ready_why[128];
};

static const char *const verb_names[GANTRY_VERB_COUNT] = { "filter", "prioritize", "bind",
                                                             "modify" };

int gantry_extender_verb_parse(const char *name, enum gantry_extender_verb *ret_verb)
{
        for (int v = 0; v < GANTRY_VERB_COUNT; v++)
                if (name && !strcmp(name, verb_names[v])) {
                        *ret_verb = v;
                        return 0;
                }
        return -EINVAL;
}

const char *gantry_extender_verb_name(enum gantry_extender_verb verb)
{
        return verb < GANTRY_VERB_COUNT ? verb_names[verb] : "?";
}

double gantry_extender_now(void)
{
        return gantry_now_s();
}

int gantry_extender_new(struct gantry_sched_state *state, const struct gantry_extender_options *opts,
                        struct gantry_extender **ret_extender)
{
        struct gantry_extender *ext = calloc(1, sizeof(*ext));

        if (!ext)
                return -ENOMEM;
        ext->state = state;
        if (opts)
                ext->opts = *opts;
        if (ext->opts.reservation_ttl_seconds <= 0)
                ext->opts.reservation_ttl_seconds = 60;
        if (ext->opts.max_nodes == 0)
                ext->opts.max_nodes = 100000;
        pthread_mutex_init(&ext->expire_lock, NULL);
        pthread_mutex_init(&ext->ready_lock, NULL);
        ext->ready = true;
        *ret_extender = ext;
        return 0;
}

void gantry_extender_free(struct gantry_extender *ext)
{
        if (!ext)
                return;
        pthread_mutex_destroy(&ext->expire_lock);
        pthread_mutex_destroy(&ext->ready_lock);
        free(ext);
}

/* Drops expired reservations, at most once a second whatever the request rate. */
static void expire_reservations(struct gantry_extender *ext)
{
        double now = gantry_extender_now();
        size_t n;

        if (pthread_mutex_trylock(&ext->expire_lock) != 0)
                return;
        if (now - ext->last_expire >= 1.0) {
                ext->last_expire = now;
                n = gantry_cluster_expire(gantry_sched_state_cluster(ext->state), now);
                if (n)
                        log_info("sched.reservations_expired", "count=%zu", n);
                n = gantry_sched_state_expire_pending(ext->state, now);
                if (n)
                        log_info("sched.admitted_changes_expired", "volumes=%zu", n);
                n = ext->opts.gangs ? gantry_gangs_expire(ext->opts.gangs, now) : 0;
                if (n)
                        log_info("sched.gang_reservations_expired", "gangs=%zu", n);
        }
        pthread_mutex_unlock(&ext->expire_lock);
}

/* A reply body {"Error": msg}. */
static int error_reply(int status, const char *msg, char **ret_reply)
{
        json_t *o = json_pack("{s:s}", "Error", msg);

        *ret_reply = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return *ret_reply ? status : 500;
}

/* Decoded ExtenderArgs: the pod, and the candidate nodes by name. */
struct args {
        json_t *root;
        const json_t *pod;
        const json_t *node_items; /* Nodes.items when sent, else NULL */
        const char **names;
        size_t n;
};

static void args_free(struct args *a)
{
        free(a->names);
        json_decref(a->root);
}

static int parse_body(const char *body, size_t len, json_t **ret_root, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);

        if (!root)
                return gantry_error_set(err, EINVAL,
                                        "request body: invalid JSON at line %d column %d: %s",
                                        jerr.line, jerr.column, jerr.text);
        if (!json_is_object(root)) {
                json_decref(root);
                return gantry_error_set(err, EINVAL, "request body: must be a JSON object");
        }
        *ret_root = root;
        return 0;
}

static int parse_args(struct gantry_extender *ext, const char *body, size_t len, struct args *a,
                      struct gantry_error *err)
{
        const json_t *nodes, *names, *v;
        size_t i;
        int r;

        memset(a, 0, sizeof(*a));
        if ((r = parse_body(body, len, &a->root, err)) < 0)
                return r;
        a->pod = json_object_get(a->root, "Pod");
        if (!json_is_object(a->pod))
                return gantry_error_set(err, EINVAL, "ExtenderArgs.Pod: must be a Pod object");
        nodes = json_object_get(a->root, "Nodes");
        names = json_object_get(a->root, "NodeNames");
        if (nodes && !json_is_null(nodes)) {
                a->node_items = json_object_get(nodes, "items");
                if (!json_is_object(nodes) || !json_is_array(a->node_items))
                        return gantry_error_set(err, EINVAL,
                                                "ExtenderArgs.Nodes: must be a NodeList with items");
                a->n = json_array_size(a->node_items);
        } else if (names && !json_is_null(names)) {
                if (!json_is_array(names))
                        return gantry_error_set(err, EINVAL,
                                                "ExtenderArgs.NodeNames: must be an array of names");
                a->n = json_array_size(names);
        } else {
                return gantry_error_set(err, EINVAL,
                                        "ExtenderArgs: Nodes and NodeNames are both missing or null");
        }
        if (a->n > ext->opts.max_nodes)
                return gantry_error_set(err, E2BIG, "ExtenderArgs: %zu nodes, at most %zu", a->n,
                                        ext->opts.max_nodes);
        a->names = calloc(a->n ? a->n : 1, sizeof(*a->names));
        if (!a->names)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if (a->node_items) {
                json_array_foreach(a->node_items, i, v) {
                        a->names[i] = json_string_value(
                                json_object_get(json_object_get(v, "metadata"), "name"));
                        if (!a->names[i] || !*a->names[i])
                                return gantry_error_set(err, EINVAL,
                                                        "ExtenderArgs.Nodes.items[%zu].metadata.name: "
                                                        "must be a non-empty string", i);
                }
        } else {
                json_array_foreach(names, i, v) {
                        a->names[i] = json_string_value(v);
                        if (!a->names[i] || !*a->names[i])
                                return gantry_error_set(err, EINVAL,
                                                        "ExtenderArgs.NodeNames[%zu]: must be a "
                                                        "non-empty string", i);
                }
        }
        return 0;
}

/* nodeCacheCapable false: the request's Nodes are the freshest view of them. */
static int apply_request_nodes(struct gantry_extender *ext, const struct args *a,
                               struct gantry_error *err)
{
        const json_t *v;
        size_t i;
        int r;

        json_array_foreach(a->node_items, i, v) {
                r = gantry_sched_state_apply(ext->state, GANTRY_OBJ_NODE, false, v, err);
                if (r < 0) {
                        char where[64];

                        snprintf(where, sizeof(where), "ExtenderArgs.Nodes.items[%zu]", i);
                        return gantry_error_prefix(err, where);
                }
        }
        return 0;
}

#define REFUSAL_EXAMPLES 3 /* refused nodes named in a filter's log line */

/*
 * One filter call's refusals, summarised: a metric per cause and one log line
 * with the counts per cause and a few refused nodes with their leaf, backend
 * and exact numbers (the FailedNodes reasons carry none of them, so that
 * kube-scheduler folds them). A gang (@gang its key, else NULL) refused on
 * every node has one reason for all of them: its line is sched.gang_refused
 * with the gang and that reason instead of examples.
 */
static void report_refusals(struct gantry_extender *ext, const struct args *a,
                            const struct gantry_sched_demand *d,
                            const struct gantry_node_verdict *v, const char *gang)
{
        size_t count[GANTRY_REFUSAL_CAUSE_COUNT] = { 0 }, refused = 0, ex = 0;
        char counts[512], examples[REFUSAL_EXAMPLES * 600], q[sizeof(examples) + 64];
        char qpod[LOG_NAME_MAX], qgang[LOG_NAME_MAX];
        size_t cl = 0, el = 0;

        for (size_t i = 0; i < a->n; i++) {
                if (v[i].fits)
                        continue;
                count[v[i].cause < GANTRY_REFUSAL_CAUSE_COUNT ? v[i].cause : 0]++;
                refused++;
                if (ex < REFUSAL_EXAMPLES) {
                        char detail[GANTRY_PLACEMENT_REASON_MAX + GANTRY_PLACEMENT_NAME_MAX];

                        gantry_node_verdict_detail(&v[i], a->names[i], detail, sizeof(detail));
                        /* "gpu-7 NIC: ..." names the node; "leaf-3 uplink: ..." does not */
                        if (strstr(detail, a->names[i]))
                                el += snprintf(examples + el, sizeof(examples) - el, "%s%s",
                                               ex ? "; " : "", detail);
                        else
                                el += snprintf(examples + el, sizeof(examples) - el, "%s%.64s: %s",
                                               ex ? "; " : "", a->names[i], detail);
                        el = el < sizeof(examples) ? el : sizeof(examples) - 1;
                        ex++;
                }
        }
        if (!refused)
                return;
        counts[0] = '\0';
        for (int k = 0; k < GANTRY_REFUSAL_CAUSE_COUNT; k++) {
                if (!count[k])
                        continue;
                cl += snprintf(counts + cl, sizeof(counts) - cl, "%s%s:%zu", cl ? "," : "",
                               gantry_refusal_cause_name(k), count[k]);
                cl = cl < sizeof(counts) ? cl : sizeof(counts) - 1;
                if (ext->opts.metrics) {
                        char labels[64];

                        snprintf(labels, sizeof(labels), "resource=\"%s\"",
                                 gantry_refusal_cause_name(k));
                        gantry_metrics_counter_add(ext->opts.metrics,
                                                   "gantry_scheduler_node_refusals_total",
                                                   "Nodes refused by filter, by cause", labels,
                                                   (double)count[k]);
                }
        }
        if (gang && refused == a->n)
                log_info("sched.gang_refused", "pod=%s gang=%s nodes=%zu refused=%zu causes=%s reason=%s",
                         Q(d->name, qpod), Q(gang, qgang), a->n, refused, counts,
                         Q(v[0].reason, q));
        else
                log_info("sched.filter_refused", "pod=%s nodes=%zu refused=%zu causes=%s examples=%s",
                         Q(d->name, qpod), a->n, refused, counts, Q(examples, q));
}

/*
 * A pod refused on every node because a storage backend lacks headroom (the
 * FailedNodes reasons say only "storage backend recovering"): the backend,
 * its state and the numbers go to the log and to an Event on the pod, and
 * the backend is remembered, so that its recovery requeues the pod.
 */
static void report_backend_hold(struct gantry_extender *ext, const struct args *a,
                                const struct gantry_sched_demand *d,
                                const struct gantry_node_verdict *v)
{
        const json_t *md = json_object_get(a->pod, "metadata");
        char detail[GANTRY_PLACEMENT_REASON_MAX + GANTRY_PLACEMENT_NAME_MAX], q[sizeof(detail) + 8];
        const struct gantry_node_verdict *why = NULL;

        for (size_t i = 0; i < a->n; i++) {
                if (v[i].fits)
                        return;
                if (!why && v[i].where &&
                    (v[i].cause == GANTRY_REFUSAL_BACKEND || v[i].cause == GANTRY_REFUSAL_TARGET ||
                     v[i].cause == GANTRY_REFUSAL_GANG))
                        why = &v[i];
        }
        if (!why)
                return;
        gantry_node_verdict_detail(why, NULL, detail, sizeof(detail));
        log_info("sched.backend_held", "pod=%s backend=%s detail=%s", d->name, why->where,
                 gantry_log_quote(detail, q, sizeof(q)));
        gantry_sched_backends_note_held(gantry_sched_state_backends(ext->state), why->where);
        if (ext->opts.event)
                ext->opts.event(ext->opts.event_ctx,
                                json_string_value(json_object_get(md, "namespace")),
                                json_string_value(json_object_get(md, "name")), d->d.uid,
                                GANTRY_EVENT_BACKEND_HELD, detail);
}

/* Writes {"name": "reason", ...} of the refused nodes of one kind. */
static void write_failed(struct json_out *o, const struct args *a,
                         const struct gantry_node_verdict *v, bool unresolvable)
{
        bool first = true;

        json_out_raw(o, "{");
        for (size_t i = 0; i < a->n; i++) {
                if (v[i].fits || v[i].unresolvable != unresolvable)
                        continue;
                json_out_raw(o, first ? "" : ",");
                json_out_string(o, a->names[i]);
                json_out_raw(o, ":");
                json_out_string(o, v[i].reason);
                first = false;
        }
        json_out_raw(o, "}");
}

/* Whether @d is a member of a gang placed whole. */
static bool gang_of(const struct gantry_extender *ext, const struct gantry_sched_demand *d)
{
        return ext->opts.gangs && d->gang_size > 1 && d->d.job;
}

#define GANG_SPEC(sd) { .key = (sd)->d.job, .size = (sd)->gang_size, .spread = (sd)->gang_spread }

/*
 * The names stay out of the reasons (they aggregate); they go in the log: the
 * node a member is sent to. A refusal is report_refusals()'s one line.
 */
static void log_gang_filter(const struct gantry_sched_demand *d, const struct args *a,
                            const struct gantry_node_verdict *v)
{
        char qpod[LOG_NAME_MAX], qgang[LOG_NAME_MAX], qnode[LOG_NAME_MAX];

        for (size_t i = 0; i < a->n; i++)
                if (v[i].fits) {
                        log_info("sched.gang_member", "pod=%s gang=%s node=%s", Q(d->name, qpod),
                                 Q(d->d.job, qgang), Q(a->names[i], qnode));
                        return;
                }
        if (!a->n)
                log_info("sched.gang_refused", "pod=%s gang=%s nodes=0 reason=\"no nodes\"",
                         Q(d->name, qpod), Q(d->d.job, qgang));
}

static bool gang_retry(const char *reason)
{
        size_t n = strlen(reason), k = strlen(GANTRY_GANG_RETRY_SUFFIX);

        return n >= k && !strcmp(reason + n - k, GANTRY_GANG_RETRY_SUFFIX);
}

/*
 * The watch may delete pod @uid between the deletion check and the gang
 * call that makes it a member: the feed's gantry_gangs_pod_gone() then ran
 * before the pod joined. Looked at again after the call, so a deleted pod
 * never stays a member (whose gang would hold its reservation until TTL).
 */
static void gang_forget_if_deleted(struct gantry_extender *ext, const char *uid)
{
        if (gantry_sched_state_pod_deleted(ext->state, uid))
                gantry_gangs_pod_gone(ext->opts.gangs, uid, gantry_extender_now());
}

static int do_filter(struct gantry_extender *ext, const struct args *a,
                     const struct gantry_sched_demand *d, char **ret_reply, struct gantry_error *err)
{
        struct gantry_node_verdict *v = calloc(a->n ? a->n : 1, sizeof(*v));
        struct json_out o = { 0 };
        json_t *passed = NULL, *nodes = NULL;
        char qpod[LOG_NAME_MAX], qgang[LOG_NAME_MAX];
        bool first = true;
        char *nodes_text = NULL;
        int r;

        if (!v)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if (gang_of(ext, d) && gantry_sched_state_pod_deleted(ext->state, d->d.uid)) {
                /* its gang would be planned for a member that never comes */
                free(v);
                return gantry_error_set(err, ENOENT, "pod %s: deleted; not placed", d->name);
        }
        if (gang_of(ext, d)) {
                r = gantry_gangs_filter(ext->opts.gangs, &(struct gantry_gang_spec)GANG_SPEC(d),
                                        &d->d, a->names, a->n, gantry_extender_now(), v, err);
                gang_forget_if_deleted(ext, d->d.uid);
        }
        else
                r = gantry_cluster_filter(gantry_sched_state_cluster(ext->state), &d->d, a->names,
                                          a->n, v, err);
        if (r < 0)
                goto out;
        if (gang_of(ext, d) && a->n > 0 && !v[0].fits && gang_retry(v[0].reason)) {
                /* the member's place was not in kube-scheduler's sample: an
                 * error sends it to backoff (seconds, another sample), where a
                 * refusal would park it with kube-scheduler's unschedulable
                 * pods until a cluster event or the 5-minute flush whenever
                 * an in-tree filter also refused a node (a full one) */
                log_info("sched.gang_retry", "pod=%s gang=%s nodes=%zu", Q(d->name, qpod),
                         Q(d->d.job, qgang), a->n);
                r = gantry_error_set(err, EAGAIN, "%s", v[0].reason);
                goto out;
        }
        if (gang_of(ext, d))
                log_gang_filter(d, a, v);
        report_refusals(ext, a, d, v, gang_of(ext, d) ? d->d.job : NULL);
        if (a->n > 0)
                report_backend_hold(ext, a, d, v);
        if (a->node_items) {
                /* nodeCacheCapable false: the passing Node objects, as sent */
                passed = json_array();
                for (size_t i = 0; passed && i < a->n; i++)
                        if (v[i].fits)
                                json_array_append(passed, json_array_get(a->node_items, i));
                nodes = passed ? json_pack("{s:{},s:O}", "metadata", "items", passed) : NULL;
                nodes_text = nodes ? json_dumps(nodes, JSON_COMPACT) : NULL;
                if (!nodes_text) {
                        r = gantry_error_set(err, ENOMEM, "out of memory");
                        goto out;
                }
                json_out_raw(&o, "{\"Nodes\":");
                json_out_raw(&o, nodes_text);
                json_out_raw(&o, ",\"NodeNames\":null");
        } else {
                json_out_raw(&o, "{\"Nodes\":null,\"NodeNames\":[");
                for (size_t i = 0; i < a->n; i++) {
                        if (!v[i].fits)
                                continue;
                        json_out_raw(&o, first ? "" : ",");
                        json_out_string(&o, a->names[i]);
                        first = false;
                }
                json_out_raw(&o, "]");
        }
        json_out_raw(&o, ",\"FailedNodes\":");
        write_failed(&o, a, v, false);
        json_out_raw(&o, ",\"FailedAndUnresolvableNodes\":");
        write_failed(&o, a, v, true);
        json_out_raw(&o, ",\"Error\":\"\"}");
        *ret_reply = json_out_finish(&o);
        r = *ret_reply ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
        log_debug("sched.filter", "pod=%s nodes=%zu", Q(d->name, qpod), a->n);
out:
        free(nodes_text);
        json_decref(nodes);
        json_decref(passed);
        free(v);
        return r;
}

static int do_prioritize(struct gantry_extender *ext, const struct args *a,
                         const struct gantry_sched_demand *d, char **ret_reply,
                         struct gantry_error *err)
{
        int *scores = calloc(a->n ? a->n : 1, sizeof(*scores));
        struct json_out o = { 0 };
        int r;

        if (!scores)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if (gang_of(ext, d))
                r = gantry_gangs_prioritize(ext->opts.gangs, &(struct gantry_gang_spec)GANG_SPEC(d),
                                            &d->d, a->names, a->n, scores, err);
        else
                r = gantry_cluster_prioritize(gantry_sched_state_cluster(ext->state), &d->d,
                                              a->names, a->n, scores, err);
        if (r < 0)
                goto out;
        json_out_raw(&o, "[");
        for (size_t i = 0; i < a->n; i++) {
                /* 0..100 -> 0..10, rounded */
                int s = (scores[i] * MAX_EXTENDER_PRIORITY + GANTRY_PLACEMENT_SCORE_MAX / 2) /
                        GANTRY_PLACEMENT_SCORE_MAX;

                json_out_raw(&o, i ? ",{\"Host\":" : "{\"Host\":");
                json_out_string(&o, a->names[i]);
                json_out_raw(&o, ",\"Score\":");
                json_out_int(&o, s);
                json_out_raw(&o, "}");
        }
        json_out_raw(&o, "]");
        *ret_reply = json_out_finish(&o);
        r = *ret_reply ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
out:
        free(scores);
        return r;
}

static int handle_args(struct gantry_extender *ext, enum gantry_extender_verb verb,
                       const char *body, size_t len, char **ret_reply)
{
        struct gantry_sched_demand d;
        struct gantry_error err = { 0 };
        struct args a;
        int r;

        r = parse_args(ext, body, len, &a, &err);
        if (r == 0 && a.node_items)
                r = apply_request_nodes(ext, &a, &err);
        if (r < 0) {
                args_free(&a);
                return error_reply(gantry_status_http_from_errno(r), err.msg, ret_reply);
        }
        if (verb == GANTRY_VERB_FILTER)
                gantry_sched_state_remember_pod(ext->state, a.pod);
        r = gantry_sched_demand_from_pod(gantry_sched_state_cache(ext->state), a.pod, &d, &err);
        if (r < 0) {
                /* a pod Gantry cannot read: the protocol's Error, not a bad request */
                args_free(&a);
                return error_reply(r == -ENOMEM ? 500 : 200, err.msg, ret_reply);
        }
        if (verb == GANTRY_VERB_FILTER)
                r = do_filter(ext, &a, &d, ret_reply, &err);
        else
                r = do_prioritize(ext, &a, &d, ret_reply, &err);
        args_free(&a);
        if (r < 0)
                return error_reply(gantry_status_http_from_errno(r), err.msg, ret_reply);
        return 200;
}

static int handle_bind(struct gantry_extender *ext, const char *body, size_t len, char **ret_reply)
{
        struct gantry_cluster *c = gantry_sched_state_cluster(ext->state);
        struct gantry_error err = { 0 };
        struct gantry_sched_demand d;
        const char *ns, *name, *uid, *node;
        json_t *root = NULL, *pod = NULL;
        const char *result = "bound";
        uint64_t token = 0; /* the ledger's token of this bind's reservation */
        char pod_name[LOG_NAME_MAX], qpod[LOG_NAME_MAX], qnode[LOG_NAME_MAX];
        int r, status = 200;

        if ((r = parse_body(body, len, &root, &err)) < 0)
                return error_reply(400, err.msg, ret_reply);
        ns = json_string_value(json_object_get(root, "PodNamespace"));
        name = json_string_value(json_object_get(root, "PodName"));
        uid = json_string_value(json_object_get(root, "PodUID"));
        node = json_string_value(json_object_get(root, "Node"));
        if (!name || !*name)
                r = gantry_error_set(&err, EINVAL, "ExtenderBindingArgs.PodName: must be a non-empty string");
        else if (!ns || !*ns)
                r = gantry_error_set(&err, EINVAL, "ExtenderBindingArgs.PodNamespace: must be a non-empty string");
        else if (!uid || !*uid)
                r = gantry_error_set(&err, EINVAL, "ExtenderBindingArgs.PodUID: must be a non-empty string");
        else if (!node || !*node)
                r = gantry_error_set(&err, EINVAL, "ExtenderBindingArgs.Node: must be a non-empty string");
        if (r < 0) {
                json_decref(root);
                return error_reply(400, err.msg, ret_reply);
        }
        expire_reservations(ext);
        pod = gantry_sched_state_get_pod(ext->state, uid);
        if (!pod)
                /* its demand is unknown (never filtered here, or forgotten):
                 * binding would charge nothing, so kube-scheduler filters again */
                r = gantry_error_set(&err, ENOENT, "pod %s/%s: not seen in filter; retry", ns, name);
        else
                r = gantry_sched_demand_from_pod(gantry_sched_state_cache(ext->state), pod, &d,
                                                 &err);
        if (r == 0) {
                snprintf(d.uid, sizeof(d.uid), "%s", uid);
                d.d.uid = d.uid;
                double now = gantry_extender_now();
                /* without an API server (--state) nothing will ever confirm a
                 * bind: it is final, not a reservation that expires */
                double expires_at = ext->opts.bind ? now + ext->opts.reservation_ttl_seconds : 0;

                if (gantry_sched_state_pod_deleted(ext->state, uid))
                        /* kube-scheduler's cache still held it: the API
                         * server would answer 404, and a gang would hold a
                         * place for a member that never comes */
                        r = gantry_error_set(&err, ENOENT, "pod %s/%s: deleted; not bound", ns, name);
                else if (gang_of(ext, &d))
                        r = gantry_gangs_bind(ext->opts.gangs, &(struct gantry_gang_spec)GANG_SPEC(&d),
                                              &d.d, node, now, expires_at, &token, &err);
                else
                        r = gantry_cluster_reserve(c, &d.d, node, expires_at, &token, &err);
                if (r == 0 && gang_of(ext, &d))
                        gang_forget_if_deleted(ext, uid);
        }
        if (r == 0 && ext->opts.bind) {
                r = ext->opts.bind(ext->opts.bind_ctx, ns, name, uid, node, &err);
                /* undone by this bind's token: another bind of the same pod
                 * may have replaced the reservation meanwhile, and won */
                if (r < 0 && gang_of(ext, &d)) {
                        gantry_gangs_unbind(ext->opts.gangs, uid, token);
                        if (r == -ENOENT) {
                                /* 404: the pod is gone, and its DELETED event
                                 * may have passed already: it leaves its gang
                                 * now (a gang with no member left gives its
                                 * reservation back) rather than at TTL */
                                gantry_sched_state_note_deleted(ext->state, uid);
                                gantry_gangs_pod_gone(ext->opts.gangs, uid, gantry_extender_now());
                        }
                } else if (r < 0) {
                        gantry_cluster_release_reservation(c, uid, token);
                }
        }
        /* the request's names, as sent: whoever reaches the port chooses them */
        snprintf(pod_name, sizeof(pod_name), "%s/%s", ns, name);
        if (r < 0) {
                char q[256];

                result = r == -ENOSPC ? "no_headroom" : "error";
                log_warn("sched.bind_failed", "pod=%s node=%s error=%s", Q(pod_name, qpod),
                         Q(node, qnode), Q(err.msg, q));
                status = error_reply(200, err.msg, ret_reply);
        } else {
                log_info("sched.bound", "pod=%s node=%s flows=%zu", Q(pod_name, qpod),
                         Q(node, qnode), d.d.n_flows);
                status = error_reply(200, "", ret_reply);
        }
        if (ext->opts.metrics) {
                char labels[64];

                snprintf(labels, sizeof(labels), "result=\"%s\"", result);
                gantry_metrics_counter_add(ext->opts.metrics, "gantry_scheduler_binds_total",
                                           "Bind requests by result", labels, 1);
        }
        json_decref(pod);
        json_decref(root);
        return status;
}

void gantry_extender_set_ready(struct gantry_extender *ext, bool ready, const char *why)
{
        pthread_mutex_lock(&ext->ready_lock);
        if (ext->ready != ready)
                log_info("sched.readiness", "ready=%s why=\"%s\"", ready ? "yes" : "no",
                         why ? why : "");
        ext->ready = ready;
        snprintf(ext->not_ready_why, sizeof(ext->not_ready_why), "%s", why ? why : "");
        pthread_mutex_unlock(&ext->ready_lock);
}

bool gantry_extender_ready(struct gantry_extender *ext, char *why, size_t size)
{
        bool ready;

        pthread_mutex_lock(&ext->ready_lock);
        ready = ext->ready;
        if (why && size)
                snprintf(why, size, "%s", ext->not_ready_why);
        pthread_mutex_unlock(&ext->ready_lock);
        return ready;
}

int gantry_extender_handle(struct gantry_extender *ext, enum gantry_extender_verb verb,
                           const char *body, size_t len, char **ret_reply)
{
        char why[128], msg[200];

        *ret_reply = NULL;
        if (verb < GANTRY_VERB_COUNT && !gantry_extender_ready(ext, why, sizeof(why))) {
                /* an error, not a refusal: kube-scheduler sends the pod to
                 * backoff (seconds), not to the unschedulable pool (minutes) */
                snprintf(msg, sizeof(msg), "gantry-scheduler is not ready (%s); retry", why);
                return error_reply(503, msg, ret_reply);
        }
        if (verb == GANTRY_VERB_BIND)
                return handle_bind(ext, body, len, ret_reply);
        if (verb == GANTRY_VERB_MODIFY)
                return gantry_volume_modify_handle(ext->state, body, len, ret_reply);
        if (verb == GANTRY_VERB_FILTER || verb == GANTRY_VERB_PRIORITIZE) {
                expire_reservations(ext);
                return handle_args(ext, verb, body, len, ret_reply);
        }
        return error_reply(404, "unknown verb", ret_reply);
}

/* gantry_backend_*{backend}: each backend as admission sees it now. */
static void update_backend_gauges(struct gantry_extender *ext, size_t n)
{
        static const struct {
                const char *name, *help;
                size_t offset;
        } gauges[] = {
                { "gantry_backend_nominal_gbps", "A backend's capacity in the topology file",
                  offsetof(struct gantry_backend_view, nominal_gbps) },
                { "gantry_backend_effective_gbps", "A backend's capacity that admission charges against",
                  offsetof(struct gantry_backend_view, effective_gbps) },
                { "gantry_backend_reserved_gbps", "Gbps Gantry's pods, binds and gangs hold on a backend",
                  offsetof(struct gantry_backend_view, reserved_gbps) },
                { "gantry_backend_unaccounted_gbps", "Client IO on a backend that no bound Gantry pod "
                  "accounts for", offsetof(struct gantry_backend_view, unaccounted_gbps) },
                { "gantry_backend_recovery_gbps", "A backend's recovery and backfill traffic",
                  offsetof(struct gantry_backend_view, recovery_gbps) },
        };
        struct gantry_metrics *m = ext->opts.metrics;
        struct gantry_backend_view v;
        char labels[GANTRY_PLACEMENT_NAME_MAX + 64];

        for (size_t i = 0; i < n; i++) {
                if (gantry_cluster_backend_view(gantry_sched_state_cluster(ext->state), i, &v) < 0)
                        continue;
                for (size_t k = 0; k < sizeof(gauges) / sizeof(gauges[0]); k++) {
                        snprintf(labels, sizeof(labels), "backend=\"%s\"", v.name);
                        gantry_metrics_gauge_set(m, gauges[k].name, gauges[k].help, labels,
                                                 *(const double *)((const char *)&v + gauges[k].offset));
                }
                snprintf(labels, sizeof(labels), "backend=\"%s\"", v.name);
                gantry_metrics_gauge_set(m, "gantry_backend_stale",
                                         "1 when a backend's observation is stale (nominal capacity)",
                                         labels, v.stale ? 1 : 0);
                for (int st = GANTRY_BACKEND_STATE_HEALTHY; st < GANTRY_BACKEND_STATE_COUNT; st++) {
                        snprintf(labels, sizeof(labels), "backend=\"%s\",state=\"%s\"", v.name,
                                 gantry_backend_state_name(st));
                        gantry_metrics_gauge_set(m, "gantry_backend_state",
                                                 "1 for a backend's current state, 0 for the others",
                                                 labels, (int)v.state == st ? 1 : 0);
                }
        }
}

void gantry_extender_update_gauges(struct gantry_extender *ext)
{
        struct gantry_cluster_stats s;
        struct gantry_metrics *m = ext->opts.metrics;

        if (!m)
                return;
        expire_reservations(ext); /* an idle extender still lets reservations go */
        gantry_cluster_stats(gantry_sched_state_cluster(ext->state), &s);
        gantry_metrics_gauge_set(m, "gantry_scheduler_nodes", "Nodes in the model", NULL, (double)s.nodes);
        gantry_metrics_gauge_set(m, "gantry_scheduler_leaves", "Leaves in the model", NULL, (double)s.leaves);
        gantry_metrics_gauge_set(m, "gantry_scheduler_backends", "Storage backends in the model", NULL,
                                 (double)s.backends);
        gantry_metrics_gauge_set(m, "gantry_scheduler_ledger_entries", "Pods charged in the ledger",
                                 NULL, (double)s.entries);
        gantry_metrics_gauge_set(m, "gantry_scheduler_reservations",
                                 "Bind reservations not yet confirmed by the watch", NULL,
                                 (double)s.reservations);
        /* what /readyz answers: an alert can tell "no replica serves" (none
         * holds the Lease, or the leader has not synced) from a standby */
        gantry_metrics_gauge_set(m, "gantry_scheduler_ready",
                                 "1 when this replica answers the verbs (synced, recovered, "
                                 "and with --leader-elect the Lease's holder)",
                                 NULL, gantry_extender_ready(ext, NULL, 0) ? 1 : 0);
        update_backend_gauges(ext, s.backends);
        if (ext->opts.gangs) {
                struct gantry_gangs_stats gs;

                gantry_gangs_stats(ext->opts.gangs, &gs);
                gantry_metrics_gauge_set(m, "gantry_scheduler_gangs_planned",
                                         "Gangs holding a reservation for their members", NULL,
                                         (double)gs.planned);
                gantry_metrics_gauge_set(m, "gantry_scheduler_gangs_waiting",
                                         "Gangs queued because they do not fit whole", NULL,
                                         (double)gs.waiting);
                gantry_metrics_gauge_set(m, "gantry_scheduler_gang_slots_held",
                                         "Members' places reserved, not yet bound", NULL,
                                         (double)gs.held_slots);
        }
}
