/*
 * The caps in force on this node: the table of records (one per published
 * target path), applying a cap to the pod's io.max, taking it back, and the
 * reconcile that makes io.max match the records after a restart or a pod
 * that went away. See qos.h.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "metrics.h"
#include "qos_internal.h"

#define QOS_MAX_RECORDS 4096

static struct {
        pthread_mutex_t lock;
        char *state_dir;
        char *cgroup_root;
        struct gantry_metrics *metrics;
        bool (*published)(const char *target_path);
        struct qos_record **recs;
        size_t n;
        /* the periodic reconcile */
        pthread_t thread;
        bool thread_running, stop;
        pthread_cond_t wake;
        int interval_seconds;
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static uint64_t scale(uint64_t v, double f)
{
        double x = (double)v * f;

        return v == 0 ? 0 : x >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(x);
}

struct gantry_qos_rates gantry_qos_cap_of(const struct gantry_qos_rates *declared,
                                          enum gantry_qos_policy policy, double burst_factor)
{
        struct gantry_qos_rates none = { 0 };
        double f = policy == GANTRY_QOS_POLICY_BURST && burst_factor > 1 ? burst_factor : 1;

        if (policy == GANTRY_QOS_POLICY_NONE)
                return none;
        return (struct gantry_qos_rates){ scale(declared->rbps, f), scale(declared->wbps, f),
                                          scale(declared->riops, f), scale(declared->wiops, f) };
}

static void count(const char *name, const char *help, const char *labels)
{
        if (q.metrics)
                gantry_metrics_counter_add(q.metrics, name, help, labels, 1);
}

/* Refreshes the gauge of caps in force. Lock held. */
static void gauge_locked(void)
{
        size_t enforced = 0;

        if (!q.metrics)
                return;
        for (size_t i = 0; i < q.n; i++)
                enforced += q.recs[i]->enforced;
        gantry_metrics_gauge_set(q.metrics, "gantry_node_qos_caps",
                                 "Pod x volume bandwidth caps in force in io.max", NULL,
                                 (double)enforced);
        gantry_metrics_gauge_set(q.metrics, "gantry_node_qos_caps_not_enforced",
                                 "Published pod x volume caps that could not be enforced "
                                 "(cgroup v1 node, pod cgroup not found)",
                                 NULL, (double)(q.n - enforced));
}

/* A record's names as log values (gantry_log_quote): they come from the CO and the API. */
struct rec_words {
        char vol[2 * GANTRY_QOS_NAME_MAX + 3], ns[2 * GANTRY_QOS_NAME_MAX + 3], pod[2 * GANTRY_QOS_NAME_MAX + 3];
        char path[2 * GANTRY_QOS_PATH_MAX + 3];
};

static struct rec_words *words_of(const struct qos_record *rec, struct rec_words *w)
{
        gantry_log_quote(rec->volume_id, w->vol, sizeof(w->vol));
        gantry_log_quote(rec->pod_namespace, w->ns, sizeof(w->ns));
        gantry_log_quote(rec->pod_name, w->pod, sizeof(w->pod));
        gantry_log_quote(rec->target_path, w->path, sizeof(w->path));
        return w;
}

static ssize_t find_locked(const char *target_path)
{
        for (size_t i = 0; i < q.n; i++)
                if (!strcmp(q.recs[i]->target_path, target_path))
                        return (ssize_t)i;
        return -1;
}

static void drop_locked(size_t i)
{
        free(q.recs[i]);
        q.recs[i] = q.recs[--q.n];
}

/*
 * Writes @rec's cap to its pod's io.max. Returns 1 when enforced, 0 when it
 * cannot be (cgroup v1, or no cgroup for the pod: @rec->cgroup_dir ""), or
 * -errno when io.max refused the line. Lock held.
 */
static int enforce_locked(struct qos_record *rec)
{
        struct gantry_qos_rates cap = gantry_qos_cap_of(&rec->declared, rec->policy,
                                                        rec->burst_factor);
        int r;

        rec->enforced = false;
        rec->cgroup_dir[0] = '\0';
        memset(&rec->in_force, 0, sizeof(rec->in_force));
        if (!gantry_qos_cgroup_v2(q.cgroup_root))
                return 0;
        r = gantry_qos_cgroup_find(q.cgroup_root, rec->pod_uid, rec->cgroup_dir,
                                   sizeof(rec->cgroup_dir));
        if (r <= 0) {
                rec->cgroup_dir[0] = '\0';
                return r < 0 ? r : 0;
        }
        r = gantry_qos_iomax_write(q.cgroup_root, rec->cgroup_dir, rec->dev_major, rec->dev_minor,
                                   &cap);
        if (r < 0)
                return r;
        rec->in_force = cap;
        rec->enforced = true;
        return 1;
}

/* Takes @rec's line back ("max" everywhere). A vanished cgroup is fine. */
static int release(const struct qos_record *rec)
{
        struct gantry_qos_rates max = { 0 };
        char dir[GANTRY_QOS_PATH_MAX];
        int r;

        if (rec->cgroup_dir[0])
                snprintf(dir, sizeof(dir), "%s", rec->cgroup_dir);
        else if (gantry_qos_cgroup_find(q.cgroup_root, rec->pod_uid, dir, sizeof(dir)) <= 0)
                return 0;
        r = gantry_qos_iomax_write(q.cgroup_root, dir, rec->dev_major, rec->dev_minor, &max);
        return r == -ENOENT || r == -ENODEV ? 0 : r;
}

/* Whether another record holds a line for the same pod and device (a pod
 * publishing one volume at two target paths keeps the line until the last). */
static bool line_shared_locked(const struct qos_record *rec)
{
        for (size_t i = 0; i < q.n; i++)
                if (q.recs[i] != rec && !strcmp(q.recs[i]->pod_uid, rec->pod_uid) &&
                    q.recs[i]->dev_major == rec->dev_major && q.recs[i]->dev_minor == rec->dev_minor)
                        return true;
        return false;
}

static int load_records(struct gantry_error *err)
{
        DIR *d = opendir(q.state_dir);
        struct dirent *de;
        int r = 0;

        if (!d)
                return gantry_error_set(err, errno, "qos state dir %s: %s", q.state_dir,
                                        strerror(errno));
        while ((de = readdir(d))) {
                char path[GANTRY_QOS_PATH_MAX];
                struct qos_record *rec;
                size_t len = strlen(de->d_name);

                if (strncmp(de->d_name, "qos-", 4) != 0 || len < 8 ||
                    strcmp(de->d_name + len - 4, ".rec") != 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", q.state_dir, de->d_name);
                if (q.n == QOS_MAX_RECORDS) {
                        log_warn("node.qos_record_ignored", "path=%s reason=too_many", path);
                        continue;
                }
                rec = calloc(1, sizeof(*rec));
                if (!rec) {
                        r = gantry_error_set(err, ENOMEM, "qos: out of memory");
                        break;
                }
                if (gantry_qos_record_read(path, rec) < 0) {
                        log_warn("node.qos_record_ignored", "path=%s reason=malformed", path);
                        free(rec);
                        continue;
                }
                q.recs[q.n++] = rec;
        }
        closedir(d);
        return r;
}

/*
 * mkdir -p of @path, each folder it makes mode 0700 (the records name pods
 * and volumes): a node plugin run outside a DaemonSet finds no kubelet
 * plugin folder to write in. 0 or -errno.
 */
static int make_state_dir(const char *path)
{
        char buf[GANTRY_QOS_PATH_MAX];

        if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        return mkdir(buf, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int gantry_qos_init(const struct gantry_qos_options *opts, struct gantry_error *err)
{
        int r;

        if (!opts || !opts->state_dir || opts->state_dir[0] != '/')
                return gantry_error_set(err, EINVAL, "qos: state dir: must be an absolute path");
        pthread_mutex_lock(&q.lock);
        free(q.state_dir);
        free(q.cgroup_root);
        q.state_dir = strdup(opts->state_dir);
        q.cgroup_root = strdup(opts->cgroup_root && *opts->cgroup_root ? opts->cgroup_root
                                                                         : "/sys/fs/cgroup");
        q.metrics = opts->metrics;
        q.published = opts->published;
        if (!q.recs)
                q.recs = calloc(QOS_MAX_RECORDS, sizeof(*q.recs));
        if (!q.state_dir || !q.cgroup_root || !q.recs) {
                r = gantry_error_set(err, ENOMEM, "qos: out of memory");
                goto out;
        }
        if ((r = make_state_dir(q.state_dir)) < 0) {
                r = gantry_error_set(err, r, "qos state dir %s (--qos-state-dir): cannot create it: %s",
                                     q.state_dir, strerror(-r));
                goto out;
        }
        while (q.n)
                drop_locked(0);
        r = load_records(err);
        if (r == 0)
                log_info("node.qos_started", "state_dir=%s cgroup_root=%s records=%zu v2=%d",
                         q.state_dir, q.cgroup_root, q.n, gantry_qos_cgroup_v2(q.cgroup_root));
out:
        pthread_mutex_unlock(&q.lock);
        return r;
}

void gantry_qos_shutdown(void)
{
        pthread_mutex_lock(&q.lock);
        q.stop = true;
        pthread_cond_broadcast(&q.wake);
        pthread_mutex_unlock(&q.lock);
        if (q.thread_running) {
                pthread_join(q.thread, NULL);
                q.thread_running = false;
        }
        pthread_mutex_lock(&q.lock);
        q.stop = false;
        while (q.n)
                drop_locked(0);
        free(q.recs);
        q.recs = NULL;
        free(q.state_dir);
        free(q.cgroup_root);
        q.state_dir = q.cgroup_root = NULL;
        pthread_mutex_unlock(&q.lock);
}

static int check_name(const char *field, const char *s, size_t max, struct gantry_error *err)
{
        if (!s || !*s || strlen(s) > max || strchr(s, '\n'))
                return gantry_error_set(err, EINVAL, "%s: must be 1 to %zu characters, one line",
                                        field, max);
        return 0;
}

/* Whether @a and @b write different io.max lines (another pod or another device). */
static bool other_line(const struct qos_record *a, const struct qos_record *b)
{
        return strcmp(a->pod_uid, b->pod_uid) != 0 || a->dev_major != b->dev_major ||
               a->dev_minor != b->dev_minor;
}

/*
 * A re-publish whose new cap could not be put in force: @rec goes back to
 * @old, in memory and on disk, and @old's line (never touched) stays in
 * force. Best effort: a record left with the new device is found wrong by
 * the next reconcile, which rewrites the line. Lock held.
 */
static void keep_old_locked(struct qos_record *rec, const struct qos_record *old)
{
        char vol[2 * GANTRY_QOS_NAME_MAX];
        int r;

        *rec = *old;
        if ((r = gantry_qos_record_write(q.state_dir, rec)) < 0)
                log_warn("node.qos_record_restore_failed", "volume_id=%s error=\"%s\"",
                         gantry_log_quote(rec->volume_id, vol, sizeof(vol)), strerror(-r));
}

/*
 * After a re-publish put @rec's new line in force: takes back the line of
 * @old (the record before) when it was another pod's or device's and no other
 * record needs it. When that fails the new line is taken back too and @rec
 * returns to @old: the cap moves whole or not at all. Returns 0 or -errno
 * with @err. Lock held.
 */
static int move_off_old_locked(struct qos_record *rec, const struct qos_record *old,
                               struct gantry_error *err)
{
        char vol[2 * GANTRY_QOS_NAME_MAX];
        int r;

        if (!other_line(rec, old) || line_shared_locked(old))
                return 0;
        r = release(old);
        if (r == 0) {
                log_info("node.qos_moved", "volume_id=%s from=%u:%u to=%u:%u",
                         gantry_log_quote(rec->volume_id, vol, sizeof(vol)), old->dev_major, old->dev_minor,
                         rec->dev_major, rec->dev_minor);
                return 0;
        }
        gantry_error_set(err, r, "io.max of pod %s/%s: cannot take back the cap of %u:%u to move it to %u:%u: %s",
                         rec->pod_namespace, rec->pod_name, old->dev_major, old->dev_minor,
                         rec->dev_major, rec->dev_minor, strerror(-r));
        count("gantry_node_qos_errors_total", "io.max writes that failed", NULL);
        if (rec->enforced && !line_shared_locked(rec))
                (void)release(rec);
        keep_old_locked(rec, old);
        return r;
}

int gantry_qos_apply(const struct gantry_qos_request *req, struct gantry_error *err)
{
        struct qos_record *rec, old;
        struct rec_words w;
        ssize_t at;
        bool added = false;
        int r, moved;

        if ((r = check_name("pod uid", req->pod_uid, 64, err)) < 0 ||
            (r = check_name("pod namespace", req->pod_namespace, GANTRY_QOS_NAME_MAX, err)) < 0 ||
            (r = check_name("pod name", req->pod_name, GANTRY_QOS_NAME_MAX, err)) < 0 ||
            (r = check_name("volume_id", req->volume_id, GANTRY_QOS_NAME_MAX, err)) < 0 ||
            (r = check_name("target_path", req->target_path, GANTRY_QOS_PATH_MAX - 1, err)) < 0)
                return r;
        if (strchr(req->job, '\n') || strnlen(req->job, sizeof(req->job)) == sizeof(req->job))
                return gantry_error_set(err, EINVAL,
                                        "job (the pod's gantry.io/job, JobSet, pod group or "
                                        "owner): must be one line of at most %zu characters",
                                        sizeof(req->job) - 1);
        /* the UID becomes a path component: the finder's own check, against no tree */
        if (gantry_qos_cgroup_find("/nonexistent", req->pod_uid, NULL, 0) == -EINVAL)
                return gantry_error_set(err, EINVAL, "pod uid: \"%.64s\" is not a UID",
                                        req->pod_uid);
        pthread_mutex_lock(&q.lock);
        if (!q.state_dir) {
                r = gantry_error_set(err, ENODEV, "qos: not initialised");
                goto out;
        }
        at = find_locked(req->target_path);
        if (at >= 0) {
                rec = q.recs[at];
        } else if (req->update_only) {
                r = gantry_error_set(err, ENOENT, "qos: no cap recorded for %s", req->target_path);
                goto out;
        } else {
                if (q.n == QOS_MAX_RECORDS) {
                        r = gantry_error_set(err, ENOSPC, "qos: more than %d published volumes",
                                             QOS_MAX_RECORDS);
                        goto out;
                }
                rec = calloc(1, sizeof(*rec));
                if (!rec) {
                        r = gantry_error_set(err, ENOMEM, "qos: out of memory");
                        goto out;
                }
                q.recs[q.n++] = rec;
                added = true;
        }
        old = *rec; /* a re-publish: what to put back if the new cap cannot be put in force */
        snprintf(rec->target_path, sizeof(rec->target_path), "%s", req->target_path);
        snprintf(rec->volume_id, sizeof(rec->volume_id), "%s", req->volume_id);
        snprintf(rec->pod_uid, sizeof(rec->pod_uid), "%s", req->pod_uid);
        snprintf(rec->pod_namespace, sizeof(rec->pod_namespace), "%s", req->pod_namespace);
        snprintf(rec->pod_name, sizeof(rec->pod_name), "%s", req->pod_name);
        snprintf(rec->job, sizeof(rec->job), "%s", req->job);
        rec->dev_major = req->dev_major;
        rec->dev_minor = req->dev_minor;
        rec->declared = req->declared;
        rec->policy = req->policy;
        rec->burst_factor = req->policy == GANTRY_QOS_POLICY_BURST && req->burst_factor > 1
                                    ? req->burst_factor
                                    : 1;
        /* the record first: a crash after the line leaves a cap reconcile knows */
        r = gantry_qos_record_write(q.state_dir, rec);
        if (r < 0) {
                gantry_error_set(err, r, "qos: cannot record the cap in %s: %s", q.state_dir,
                                 strerror(-r));
                if (added)
                        drop_locked((size_t)q.n - 1);
                else
                        *rec = old;
                goto out;
        }
        r = enforce_locked(rec);
        if (r < 0) {
                gantry_error_set(err, r, "io.max of pod %s/%s (%s): cannot write the cap for %u:%u: %s",
                                 rec->pod_namespace, rec->pod_name, rec->cgroup_dir,
                                 rec->dev_major, rec->dev_minor, strerror(-r));
                count("gantry_node_qos_errors_total", "io.max writes that failed", NULL);
                if (added) {
                        gantry_qos_record_remove(q.state_dir, rec->target_path);
                        drop_locked((size_t)find_locked(rec->target_path));
                } else {
                        keep_old_locked(rec, &old);
                }
                goto out;
        }
        if (!added && (moved = move_off_old_locked(rec, &old, err)) < 0) {
                r = moved;
                goto out;
        }
        if (r == 0) {
                const char *why = gantry_qos_cgroup_v2(q.cgroup_root) ? "no_pod_cgroup" : "cgroup_v1";

                log_warn("node.qos_not_enforced",
                         "volume_id=%s pod=%s/%s uid=%s reason=%s: bandwidth not enforced",
                         words_of(rec, &w)->vol, w.ns, w.pod, rec->pod_uid, why);
                count("gantry_node_qos_not_enforced_total",
                      "Publishes whose bandwidth cap could not be enforced",
                      !strcmp(why, "cgroup_v1") ? "reason=\"cgroup_v1\"" : "reason=\"no_pod_cgroup\"");
        } else {
                log_info("node.qos_applied",
                         "volume_id=%s pod=%s/%s dev=%u:%u policy=%s rbps=%llu wbps=%llu "
                         "riops=%llu wiops=%llu cgroup=%s",
                         words_of(rec, &w)->vol, w.ns, w.pod, rec->dev_major,
                         rec->dev_minor, gantry_qos_policy_name(rec->policy),
                         (unsigned long long)rec->in_force.rbps,
                         (unsigned long long)rec->in_force.wbps,
                         (unsigned long long)rec->in_force.riops,
                         (unsigned long long)rec->in_force.wiops, rec->cgroup_dir);
        }
        r = 0;
out:
        gauge_locked();
        pthread_mutex_unlock(&q.lock);
        return r;
}

/* Takes back @i's line (unless another record of the pod needs it) and forgets it. Lock held. */
static int forget_locked(size_t i, struct gantry_error *err)
{
        struct qos_record *rec = q.recs[i];
        struct rec_words w;
        int r = 0;

        if (!line_shared_locked(rec))
                r = release(rec);
        if (r < 0)
                return gantry_error_set(err, r, "io.max of pod %s/%s: cannot remove the cap: %s",
                                        rec->pod_namespace, rec->pod_name, strerror(-r));
        if ((r = gantry_qos_record_remove(q.state_dir, rec->target_path)) < 0)
                return gantry_error_set(err, r, "qos: cannot remove the record of %s: %s",
                                        rec->target_path, strerror(-r));
        log_info("node.qos_removed", "volume_id=%s pod=%s/%s dev=%u:%u", words_of(rec, &w)->vol,
                 w.ns, w.pod, rec->dev_major, rec->dev_minor);
        drop_locked(i);
        return 0;
}

int gantry_qos_in_force(const char *target_path, const char **why)
{
        ssize_t at;
        int r = -ENOENT;

        pthread_mutex_lock(&q.lock);
        if (q.state_dir && target_path && (at = find_locked(target_path)) >= 0) {
                r = q.recs[at]->enforced;
                if (!r && why)
                        *why = gantry_qos_cgroup_v2(q.cgroup_root) ? "no_pod_cgroup" : "cgroup_v1";
        }
        pthread_mutex_unlock(&q.lock);
        return r;
}

int gantry_qos_remove(const char *target_path, struct gantry_error *err)
{
        ssize_t at;
        int r = 0;

        pthread_mutex_lock(&q.lock);
        if (q.state_dir && target_path && (at = find_locked(target_path)) >= 0)
                r = forget_locked((size_t)at, err);
        gauge_locked();
        pthread_mutex_unlock(&q.lock);
        return r;
}

int gantry_qos_reconcile(void)
{
        struct gantry_error err = { 0 };
        struct rec_words w;
        char why[1024];
        size_t i = 0;
        int in_force = 0, r;

        pthread_mutex_lock(&q.lock);
        if (!q.state_dir) {
                pthread_mutex_unlock(&q.lock);
                return -ENODEV;
        }
        while (i < q.n) {
                struct qos_record *rec = q.recs[i];
                char dir[GANTRY_QOS_PATH_MAX];
                bool v2 = gantry_qos_cgroup_v2(q.cgroup_root);

                if (q.published && !q.published(rec->target_path)) {
                        log_info("node.qos_reconcile_drop", "volume_id=%s path=%s reason=unpublished",
                                 words_of(rec, &w)->vol, w.path);
                        if (forget_locked(i, &err) < 0) {
                                log_warn("node.qos_reconcile_failed", "error=%s",
                                         gantry_log_quote(err.msg, why, sizeof(why)));
                                i++;
                        }
                        continue;
                }
                if (v2 && gantry_qos_cgroup_find(q.cgroup_root, rec->pod_uid, dir, sizeof(dir)) == 0) {
                        /* the pod is gone: its lines went with its cgroup */
                        log_info("node.qos_reconcile_drop", "volume_id=%s pod=%s/%s reason=pod_gone",
                                 words_of(rec, &w)->vol, w.ns, w.pod);
                        rec->cgroup_dir[0] = '\0';
                        gantry_qos_record_remove(q.state_dir, rec->target_path);
                        drop_locked(i);
                        continue;
                }
                r = enforce_locked(rec);
                if (r < 0) {
                        log_warn("node.qos_reconcile_failed", "volume_id=%s pod=%s/%s error=%s",
                                 rec->volume_id, rec->pod_namespace, rec->pod_name, strerror(-r));
                        count("gantry_node_qos_errors_total", "io.max writes that failed", NULL);
                }
                in_force += r > 0;
                i++;
        }
        gauge_locked();
        pthread_mutex_unlock(&q.lock);
        return in_force;
}

static void *reconcile_loop(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&q.lock);
        while (!q.stop) {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += q.interval_seconds;
                pthread_cond_timedwait(&q.wake, &q.lock, &ts);
                if (q.stop)
                        break;
                pthread_mutex_unlock(&q.lock);
                gantry_qos_reconcile();
                pthread_mutex_lock(&q.lock);
        }
        pthread_mutex_unlock(&q.lock);
        return NULL;
}

int gantry_qos_reconcile_start(int interval_seconds)
{
        int r;

        if (interval_seconds < 1)
                return -EINVAL;
        if (q.thread_running)
                return -EALREADY;
        q.interval_seconds = interval_seconds;
        r = -pthread_create(&q.thread, NULL, reconcile_loop, NULL);
        if (r == 0)
                q.thread_running = true;
        return r;
}

int gantry_qos_for_each(gantry_qos_visit_fn fn, void *userdata)
{
        int r = 0;

        pthread_mutex_lock(&q.lock);
        for (size_t i = 0; i < q.n && r == 0; i++) {
                const struct qos_record *rec = q.recs[i];
                struct gantry_qos_entry e = {
                        .pod_uid = rec->pod_uid,
                        .pod_namespace = rec->pod_namespace,
                        .pod_name = rec->pod_name,
                        .job = rec->job,
                        .volume_id = rec->volume_id,
                        .target_path = rec->target_path,
                        .cgroup_dir = rec->cgroup_dir,
                        .dev_major = rec->dev_major,
                        .dev_minor = rec->dev_minor,
                        .in_force = rec->in_force,
                        .declared = rec->declared,
                        .policy = rec->policy,
                        .burst_factor = rec->burst_factor,
                        .enforced = rec->enforced,
                };

                r = fn(&e, userdata);
        }
        pthread_mutex_unlock(&q.lock);
        return r;
}
