/*
 * Optional kinds: an informer per kind while API discovery says the kind is
 * served, re-checked on a thread of the set's own. See kube_optional.h.
 *
 * Why discovery and not the informer's own failures: a list of a kind
 * not served answers 404, which an informer cannot tell from a transient
 * error without retrying (seconds, error lines); the group version's
 * discovery document says it in one request, which every authenticated
 * client may make.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "kube_optional.h"
#include "log.h"

#define DEFAULT_SYNC_TIMEOUT_MS 120000
#define DEFAULT_MAX_ERRORS 3
#define ABSENT_LINE_MAX 512

struct optional_kind {
        enum gantry_kube_kind kind;
        struct gantry_kube_informer_options informer_opts;
        struct gantry_kube_informer *informer; /* under set->lock; NULL: not followed */
        bool discovery_failing; /* warned once until discovery answers again */
};

struct gantry_kube_optional {
        struct gantry_kube_client *client;
        gantry_kube_event_fn fn;
        void *ctx;
        long recheck_ms;
        int sync_timeout_ms, max_errors;
        const atomic_bool *stop;

        pthread_mutex_t lock;
        struct optional_kind kinds[GANTRY_KUBE_KIND_COUNT];
        size_t n;

        struct kube_waker waker; /* stops the re-check thread, even mid-request */
        pthread_t thread;
        bool running;
};

static const char *label(enum gantry_kube_kind kind)
{
        return gantry_kube_kind_name(kind);
}

static void warn(const char *event, enum gantry_kube_kind kind, const char *msg)
{
        char q[GANTRY_ERROR_MSG_MAX + 8];

        log_warn(event, "kind=%s error=%s", label(kind), gantry_log_quote(msg, q, sizeof(q)));
}

/* Starts @k's informer; the caller publishes it. */
static int start_informer(struct gantry_kube_optional *set, struct optional_kind *k,
                          struct gantry_kube_informer **ret_informer, struct gantry_error *err)
{
        return gantry_kube_informer_start(set->client, k->kind, &k->informer_opts, set->fn, set->ctx,
                                          ret_informer, err);
}

static void publish(struct gantry_kube_optional *set, struct optional_kind *k,
                    struct gantry_kube_informer *informer)
{
        pthread_mutex_lock(&set->lock);
        k->informer = informer;
        pthread_mutex_unlock(&set->lock);
}

/*
 * Asks discovery about @k: 1 served, 0 not, -errno (warned once in a row).
 * The re-check thread's request carries the set's waker (a stop interrupts
 * it); the caller's at start carries none, so that
 * gantry_kube_client_cancel() (a SIGTERM at start) aborts it as it does
 * the caller's other requests.
 */
static int ask(struct gantry_kube_optional *set, struct optional_kind *k)
{
        struct gantry_error err = { 0 };
        int r = kube_served(set->client, k->kind, set->running ? &set->waker : NULL, &err);

        if (r == -ECANCELED)
                return r;
        if (r < 0 && !k->discovery_failing)
                warn("kube.optional.discovery_failed", k->kind, err.msg);
        k->discovery_failing = r < 0;
        return r;
}

int gantry_kube_optional_new(struct gantry_kube_client *client, gantry_kube_event_fn fn, void *ctx,
                             const struct gantry_kube_optional_options *opts,
                             struct gantry_kube_optional **ret_set, struct gantry_error *err)
{
        static const struct gantry_kube_optional_options defaults;
        struct gantry_kube_optional *set;
        double recheck;
        int r;

        if (!opts)
                opts = &defaults;
        if (!client || !fn || !ret_set)
                return gantry_error_set(err, EINVAL, "optional kinds: client and callback are required");
        if (opts->recheck_seconds < 0 || opts->recheck_seconds > 86400 || opts->sync_timeout_ms < 0 ||
            opts->max_errors < 0)
                return gantry_error_set(err, EINVAL, "optional kinds: options: recheck_seconds from 0 "
                                                     "to 86400, others not negative");
        set = calloc(1, sizeof(*set));
        if (!set)
                return gantry_error_set(err, ENOMEM, "out of memory");
        r = kube_waker_init(&set->waker);
        if (r < 0) {
                free(set);
                return gantry_error_set(err, -r, "optional kinds: cannot make a curl multi handle");
        }
        pthread_mutex_init(&set->lock, NULL);
        set->client = client;
        set->fn = fn;
        set->ctx = ctx;
        recheck = opts->recheck_seconds ? opts->recheck_seconds : GANTRY_KUBE_OPTIONAL_RECHECK_SECONDS;
        set->recheck_ms = (long)(recheck * 1000);
        if (set->recheck_ms < 1)
                set->recheck_ms = 1;
        set->sync_timeout_ms = opts->sync_timeout_ms ? opts->sync_timeout_ms : DEFAULT_SYNC_TIMEOUT_MS;
        set->max_errors = opts->max_errors ? opts->max_errors : DEFAULT_MAX_ERRORS;
        set->stop = opts->stop;
        *ret_set = set;
        return 0;
}

int gantry_kube_optional_add(struct gantry_kube_optional *set, enum gantry_kube_kind kind,
                             const struct gantry_kube_informer_options *informer_opts,
                             struct gantry_error *err)
{
        struct gantry_kube_informer *informer = NULL;
        struct gantry_kube_informer_state s;
        struct optional_kind *k;
        int r;

        if (!set || (unsigned)kind >= GANTRY_KUBE_KIND_COUNT)
                return gantry_error_set(err, EINVAL, "optional kinds: add: no set, or kind out of range");
        if (set->running)
                return gantry_error_set(err, EINVAL, "optional kinds: add: %s after run", label(kind));
        for (size_t i = 0; i < set->n; i++)
                if (set->kinds[i].kind == kind)
                        return gantry_error_set(err, EEXIST, "optional kinds: %s added twice", label(kind));
        if (set->n == GANTRY_KUBE_KIND_COUNT)
                return gantry_error_set(err, E2BIG, "optional kinds: too many");
        k = &set->kinds[set->n++];
        k->kind = kind;
        if (informer_opts)
                k->informer_opts = *informer_opts;
        k->informer_opts.max_errors = set->max_errors;
        k->informer_opts.end_when_not_found = true; /* the re-check tells gone from refused */

        r = ask(set, k);
        if (r <= 0)
                return r == -ECANCELED ? gantry_error_set(err, ECANCELED, "stopped") : 0;
        r = start_informer(set, k, &informer, err);
        if (r < 0)
                return r;
        r = gantry_kube_informer_wait_synced_or_stop(informer, set->sync_timeout_ms, set->stop);
        if (r == 0) {
                publish(set, k, informer);
                return 1;
        }
        gantry_kube_informer_state(informer, &s);
        gantry_kube_informer_stop(informer);
        if (r == -ECANCELED)
                return gantry_error_set(err, ECANCELED, "stopped while the %s informer listed", label(kind));
        warn("kube.optional.unavailable", kind, s.last_error.err ? s.last_error.msg : "timed out");
        return 0;
}

/* One re-check of @k: follow it when served, forget it when it went. */
static void recheck(struct gantry_kube_optional *set, struct optional_kind *k)
{
        struct gantry_kube_informer *informer;
        struct gantry_kube_informer_state s;
        struct gantry_error err = { 0 };
        int served = ask(set, k);

        if (served < 0)
                return; /* unknown: leave it as it is */
        pthread_mutex_lock(&set->lock);
        informer = k->informer;
        pthread_mutex_unlock(&set->lock);
        if (informer) {
                gantry_kube_informer_state(informer, &s);
                if (!served) {
                        /* its informer has ended on a 404 by now, quietly */
                        log_info("kube.optional.gone", "kind=%s", label(k->kind));
                        publish(set, k, NULL);
                        gantry_kube_informer_stop_forgetting(informer);
                } else if (s.failed) {
                        /* served but its list refused: said, retried next time */
                        warn("kube.optional.unavailable", k->kind, s.last_error.msg);
                        publish(set, k, NULL);
                        gantry_kube_informer_stop(informer);
                }
                return;
        }
        if (!served)
                return;
        if (start_informer(set, k, &informer, &err) < 0) {
                warn("kube.optional.unavailable", k->kind, err.msg);
                return;
        }
        log_info("kube.optional.served", "kind=%s", label(k->kind));
        publish(set, k, informer);
}

static void *recheck_main(void *arg)
{
        struct gantry_kube_optional *set = arg;

        while (kube_waker_sleep(&set->waker, set->recheck_ms) == 0)
                for (size_t i = 0; i < set->n && !kube_waker_stopped(&set->waker); i++)
                        recheck(set, &set->kinds[i]);
        return NULL;
}

int gantry_kube_optional_run(struct gantry_kube_optional *set, struct gantry_error *err)
{
        char absent[ABSENT_LINE_MAX] = "";
        size_t len = 0;
        int r;

        if (!set || set->running)
                return gantry_error_set(err, EINVAL, "optional kinds: run: no set, or run twice");
        for (size_t i = 0; i < set->n; i++)
                if (!set->kinds[i].informer && len < sizeof(absent))
                        len += (size_t)snprintf(absent + len, sizeof(absent) - len, "%s%s", len ? "," : "",
                                                label(set->kinds[i].kind));
        if (len)
                log_info("kube.optional.absent", "kinds=%s recheck_seconds=%g", absent,
                         set->recheck_ms / 1000.0);
        set->running = true; /* before the thread: it reads it */
        r = pthread_create(&set->thread, NULL, recheck_main, set);
        if (r != 0) {
                set->running = false;
                return gantry_error_set(err, r, "optional kinds: cannot start the re-check thread");
        }
        pthread_setname_np(set->thread, "kube-optional");
        return 0;
}

bool gantry_kube_optional_following(struct gantry_kube_optional *set, enum gantry_kube_kind kind)
{
        bool following = false;

        pthread_mutex_lock(&set->lock);
        for (size_t i = 0; i < set->n; i++)
                if (set->kinds[i].kind == kind)
                        following = set->kinds[i].informer != NULL;
        pthread_mutex_unlock(&set->lock);
        return following;
}

void gantry_kube_optional_free(struct gantry_kube_optional *set)
{
        if (!set)
                return;
        kube_waker_wake(&set->waker);
        if (set->running)
                pthread_join(set->thread, NULL);
        for (size_t i = set->n; i-- > 0;)
                gantry_kube_informer_stop(set->kinds[i].informer);
        kube_waker_destroy(&set->waker);
        pthread_mutex_destroy(&set->lock);
        free(set);
}
