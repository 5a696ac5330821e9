/*
 * Informers: list + watch of one kind of object, on a thread of its own.
 *
 * The loop is client-go's reflector in small: list in pages (limit /
 * continue), deliver what changed against the objects seen so far, SYNCED,
 * then watch from the list's resourceVersion with allowWatchBookmarks. The
 * resourceVersion advances with every event and bookmark, so a watch that
 * ends (server timeout) or drops (connection reset) resumes where it was
 * and loses nothing. 410 Gone (HTTP or an ERROR event), any other ERROR
 * event, and an undecodable line lead to a re-list; the re-list's diff
 * against the kept objects yields the ADDED / MODIFIED / DELETED the watch
 * missed. Errors back off exponentially (capped, jittered) and, when asked,
 * the informer gives up after max_errors in a row -- only before its first
 * sync: a kind that was listed once (an API server restart, a lost
 * connection) is retried for ever, like every other informer.
 *
 * What is kept of each object is small: a jansson object maps
 * "namespace/name" to one string "resourceVersion uid nodeName" (the pod's
 * node, empty for other kinds), enough to tell ADDED from MODIFIED, to diff
 * a re-list and to make the tombstone a DELETED carries after a re-list
 * (an object that went while nobody watched: its name, namespace, uid,
 * resourceVersion and spec.nodeName). The objects themselves are the
 * consumer's to keep, in the form it needs: at 100,000 pods whole objects
 * would cost gigabytes. A list is taken page by page (limit / continue),
 * each page delivered as it arrives, so that memory holds a page or two
 * (the next one arrives while this one is decoded: kube_list_ahead.c),
 * never the whole list.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"
#include "metrics.h"

#define DEFAULT_PAGE_SIZE 500
#define DEFAULT_MAX_LINE (16u * 1024 * 1024)
#define DEFAULT_INITIAL_BACKOFF_MS 500
#define DEFAULT_MAX_BACKOFF_MS 30000
#define SELECTOR_MAX 1024
#define STOP_CHECK_MS 100 /* how often a wait for the first sync looks at its stop flag */

struct gantry_kube_informer {
        struct gantry_kube_client *client;
        enum gantry_kube_kind kind;
        const struct kube_kind_info *info;
        gantry_kube_event_fn fn;
        void *ctx;

        /* options, copied */
        char *label_selector, *field_selector, *namespace;
        int page_size, watch_timeout, initial_backoff_ms, max_backoff_ms, max_errors;
        bool end_when_not_found;
        size_t max_line;

        pthread_t thread;
        struct kube_waker waker;
        struct kube_list_ahead ahead; /* the next list page, fetched meanwhile */
        unsigned int seed; /* jitter */

        /* informer thread only */
        json_t *store; /* key -> kept record (kept_new()) */
        char rv[64];
        bool need_list;
        struct kube_lines lines;
        uint64_t stream_events; /* events + bookmarks of the current watch */
        int gone_in_a_row;      /* 410s with no event between */
        bool opened;            /* the current watch got its 200 */
        long error_code;        /* ERROR event's code in the current watch */
        struct gantry_error werr;

        /* shared with readers, under lock */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct gantry_kube_informer_state state;
};

/* --------------------------------------------------------------- helpers */

/* The resourceVersion as a log value: opaque text of the API server's
 * choosing (quoted into a buffer that lives as long as the log call's block). */
#define RV_LOG_MAX (2 * sizeof(((struct gantry_kube_informer *)0)->rv) + 8)
#define RV_LOG(inf) gantry_log_quote((inf)->rv, (char[RV_LOG_MAX]){ 0 }, RV_LOG_MAX)

static void set_state_rv(struct gantry_kube_informer *inf, const char *rv)
{
        struct gantry_metrics *m = inf->client->http.metrics;
        char labels[64], *end;
        double v;

        snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
        pthread_mutex_lock(&inf->lock);
        snprintf(inf->state.resource_version, sizeof(inf->state.resource_version), "%s", rv);
        pthread_mutex_unlock(&inf->lock);
        /* resourceVersions are opaque, but etcd's are revisions: as a number
         * they show how far behind the API server an informer is */
        v = strtod(rv, &end);
        if (m && *rv && !*end) {
                snprintf(labels, sizeof(labels), "kind=\"%s\"", kube_kind_label(inf->info));
                gantry_metrics_gauge_set(m, "gantry_kube_resource_version",
                                         "The last resourceVersion an informer applied, when numeric",
                                         labels, v);
        }
}

/* Appends "&name=<escaped value>" to @buf. */
static void append_param(char *buf, size_t size, const char *name, const char *value)
{
        size_t n = strlen(buf);

        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "&%s=", name);
        for (const unsigned char *p = (const unsigned char *)value; *p && n + 4 < size; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~", *p))
                        buf[n++] = (char)*p;
                else
                        n += (size_t)snprintf(buf + n, size - n, "%%%02X", *p);
        }
        buf[n < size ? n : size - 1] = '\0';
}

static void build_path(struct gantry_kube_informer *inf, char *buf, size_t size, const char *query)
{
        if (inf->namespace && inf->info->namespaced)
                snprintf(buf, size, "%s/namespaces/%s/%s?%s", inf->info->prefix, inf->namespace,
                         inf->info->resource, query);
        else
                snprintf(buf, size, "%s/%s?%s", inf->info->prefix, inf->info->resource, query);
        if (inf->label_selector)
                append_param(buf, size, "labelSelector", inf->label_selector);
        if (inf->field_selector)
                append_param(buf, size, "fieldSelector", inf->field_selector);
}

static void count(struct gantry_kube_informer *inf, const char *name, const char *help,
                  const char *type)
{
        struct gantry_metrics *m = inf->client->http.metrics;
        char labels[96];

        if (!m)
                return;
        if (type)
                snprintf(labels, sizeof(labels), "kind=\"%s\",type=\"%s\"", kube_kind_label(inf->info), type);
        else
                snprintf(labels, sizeof(labels), "kind=\"%s\"", kube_kind_label(inf->info));
        gantry_metrics_counter_add(m, name, help, labels, 1);
}

static void deliver(struct gantry_kube_informer *inf, enum gantry_kube_event ev, json_t *obj)
{
        if (obj) {
                /* list items come without kind and apiVersion */
                if (!json_object_get(obj, "kind"))
                        json_object_set_new(obj, "kind", json_string(inf->info->kind));
                if (!json_object_get(obj, "apiVersion"))
                        json_object_set_new(obj, "apiVersion", json_string(inf->info->api_version));
                count(inf, "gantry_kube_watch_events_total",
                      "Object events delivered by the informers, by kind and type",
                      gantry_kube_event_name(ev));
        }
        inf->fn(inf->ctx, inf->kind, ev, obj);
        if (ev != GANTRY_KUBE_SYNCED) {
                pthread_mutex_lock(&inf->lock);
                inf->state.events++;
                pthread_mutex_unlock(&inf->lock);
        }
}

/* A non-200 answer to @verb as -errno and inf->werr; frees the answer. */
static int status_error(struct gantry_kube_informer *inf, const char *verb, struct kube_response *resp)
{
        char what[96];
        int r;

        snprintf(what, sizeof(what), "%s %s", verb, inf->info->resource);
        r = kube_http_status_error(resp, what, &inf->werr);
        kube_response_clear(resp);
        return r;
}

/* ------------------------------------------------------------------- list */

/*
 * The kept record of @obj: "resourceVersion uid nodeName" (resourceVersions
 * and uids hold no space; a missing field is empty). NULL when out of memory.
 */
static json_t *kept_new(const json_t *obj)
{
        const json_t *md = json_object_get(obj, "metadata");
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
        char buf[512];

        snprintf(buf, sizeof(buf), "%.63s %.128s %.253s", rv ? rv : "", uid ? uid : "", node ? node : "");
        return json_string(buf);
}

/* Field @i (0 resourceVersion, 1 uid, 2 nodeName) of a kept record, in @buf. */
static const char *kept_field(const json_t *kept, int i, char *buf, size_t size)
{
        const char *s = json_string_value(kept), *sp;

        for (; s && i > 0; i--)
                s = (sp = strchr(s, ' ')) ? sp + 1 : NULL;
        if (!s)
                return "";
        sp = strchr(s, ' ');
        snprintf(buf, size, "%.*s", (int)(sp ? (size_t)(sp - s) : strlen(s)), s);
        return buf;
}

/* Keeps the record of @obj under @key. */
static int keep(struct gantry_kube_informer *inf, const char *key, const json_t *obj)
{
        if (json_object_set_new(inf->store, key, kept_new(obj)) < 0)
                return gantry_error_set(&inf->werr, ENOMEM, "out of memory");
        return 0;
}

/* What a DELETED carries for an object known only by its kept record. */
static json_t *tombstone(const char *key, const json_t *kept)
{
        const char *slash = strchr(key, '/');
        char rv[64], uid[160], node[256], ns[256];
        json_t *obj;

        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - key) : 0, key);
        kept_field(kept, 0, rv, sizeof(rv));
        kept_field(kept, 1, uid, sizeof(uid));
        kept_field(kept, 2, node, sizeof(node));
        obj = json_pack("{s:{s:s,s:s}}", "metadata", "name", slash ? slash + 1 : key,
                        "resourceVersion", rv);
        if (!obj)
                return NULL;
        if (*ns)
                json_object_set_new(json_object_get(obj, "metadata"), "namespace", json_string(ns));
        if (*uid)
                json_object_set_new(json_object_get(obj, "metadata"), "uid", json_string(uid));
        if (*node)
                json_object_set_new(obj, "spec", json_pack("{s:s}", "nodeName", node));
        return obj;
}

static void deliver_tombstone(struct gantry_kube_informer *inf, const char *key, const json_t *kept)
{
        json_t *obj = tombstone(key, kept);

        if (obj)
                deliver(inf, GANTRY_KUBE_DELETED, obj);
        json_decref(obj);
}

/* Tallies of one list, for its log line. */
struct list_counts {
        unsigned added, modified, deleted;
        size_t items;
};

/*
 * Delivers one listed object against its kept record: ADDED (new, or
 * deleted and re-created under the same name -- a StatefulSet pod -- after
 * the old one's DELETED), MODIFIED (another resourceVersion) or nothing.
 * Objects without a uid, as in some fakes, count as the same object.
 */
static int take_item(struct gantry_kube_informer *inf, const char *key, json_t *obj,
                     struct list_counts *n)
{
        json_t *old = json_object_get(inf->store, key);
        const char *rv = kube_object_resource_version(obj);
        const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
        char old_rv[64], old_uid[160];

        if (old) {
                kept_field(old, 0, old_rv, sizeof(old_rv));
                kept_field(old, 1, old_uid, sizeof(old_uid));
                if (uid && *old_uid && strcmp(uid, old_uid) != 0) {
                        deliver_tombstone(inf, key, old);
                        n->deleted++;
                        old = NULL;
                } else if (rv && *old_rv && strcmp(rv, old_rv) == 0) {
                        return 0; /* unchanged */
                }
        }
        deliver(inf, old ? GANTRY_KUBE_MODIFIED : GANTRY_KUBE_ADDED, obj);
        if (old)
                n->modified++;
        else
                n->added++;
        return keep(inf, key, obj);
}

/* Delivers the items of one list page, marking them in @seen; returns the
 * page's resourceVersion and continue token. */
static int take_page(struct gantry_kube_informer *inf, const struct kube_response *resp,
                     json_t *seen, struct list_counts *n, char *rv, size_t rv_size,
                     char **ret_continue)
{
        json_error_t jerr;
        json_t *page, *items, *item, *meta;
        const char *s;
        char key[320];
        size_t i;
        int r = 0;

        page = json_loadb(resp->body, resp->len, 0, &jerr);
        if (!json_is_object(page)) {
                json_decref(page);
                return gantry_error_set(&inf->werr, EBADMSG, "list %s: invalid JSON: %s",
                                        inf->info->resource, jerr.text);
        }
        meta = json_object_get(page, "metadata");
        items = json_object_get(page, "items");
        s = json_string_value(json_object_get(meta, "resourceVersion"));
        if (!s || !*s || strlen(s) >= rv_size) {
                r = gantry_error_set(&inf->werr, EBADMSG, "list %s: metadata.resourceVersion: missing",
                                     inf->info->resource);
                goto out;
        }
        snprintf(rv, rv_size, "%s", s);
        if (!json_is_array(items) && !json_is_null(items) && items) {
                r = gantry_error_set(&inf->werr, EBADMSG, "list %s: items: not a list", inf->info->resource);
                goto out;
        }
        /* the whole page is checked before any of it is delivered */
        json_array_foreach(items, i, item) {
                if (kube_object_key(item, key, sizeof(key)) < 0) {
                        r = gantry_error_set(&inf->werr, EBADMSG, "list %s: items[%zu].metadata.name: missing",
                                             inf->info->resource, i);
                        goto out;
                }
        }
        json_array_foreach(items, i, item) {
                kube_object_key(item, key, sizeof(key));
                if (json_object_get(seen, key))
                        continue; /* listed twice (a restarted list): once is enough */
                if (json_object_set_new(seen, key, json_true()) < 0 ||
                    (r = take_item(inf, key, item, n)) < 0) {
                        r = gantry_error_set(&inf->werr, ENOMEM, "out of memory");
                        goto out;
                }
                n->items++;
        }
        s = json_string_value(json_object_get(meta, "continue"));
        *ret_continue = s && *s ? strdup(s) : NULL;
        if (s && *s && !*ret_continue)
                r = gantry_error_set(&inf->werr, ENOMEM, "out of memory");
out:
        json_decref(page);
        return r;
}

/* After the last page: DELETED for every kept object the list did not show. */
static void drop_unseen(struct gantry_kube_informer *inf, json_t *seen, struct list_counts *n)
{
        const char *key;
        json_t *old;
        void *tmp;

        json_object_foreach_safe(inf->store, tmp, key, old) {
                if (json_object_get(seen, key))
                        continue;
                deliver_tombstone(inf, key, old);
                n->deleted++;
                json_object_del(inf->store, key);
        }
}

/* The path of the list page after @cont (NULL: the first) in @buf. */
static void list_path(struct gantry_kube_informer *inf, const char *cont, char *buf, size_t size)
{
        char query[1600];

        snprintf(query, sizeof(query), "limit=%d", inf->page_size);
        if (cont)
                append_param(query, sizeof(query), "continue", cont);
        build_path(inf, buf, size, query);
}

/*
 * Starts the fetch of the page after @resp's (kube_list_ahead.c) when its
 * head names one; returns its continue token (the caller frees it), or NULL
 * when nothing was started.
 */
static char *start_next_page(struct gantry_kube_informer *inf, const struct kube_response *resp,
                             const struct kube_request *req, char *path, size_t size)
{
        struct kube_request next = *req;
        char *cont = NULL;

        if (kube_list_peek_continue(resp->body, resp->len, &cont) != 1 || !cont)
                return NULL;
        list_path(inf, cont, path, size);
        next.path = path;
        if (kube_list_ahead_start(&inf->ahead, &next) < 0) {
                free(cont);
                return NULL; /* taken the plain way */
        }
        return cont;
}

static int list_all(struct gantry_kube_informer *inf)
{
        char path[2048 + 3 * SELECTOR_MAX];
        char rv[64] = "";
        char *cont = NULL;
        json_t *seen = json_object(); /* keys listed so far */
        struct list_counts n = { 0 };
        struct kube_request req = {
                .method = "GET", .path = path, .verb = "list", .resource = inf->info->resource,
                .max_body = inf->max_line, .waker = &inf->waker,
        };
        struct kube_response resp = { 0 };
        bool fetched = false; /* resp holds the page after cont already */
        int r, pages = 0, gone_restarts = 0;

        if (!seen)
                return gantry_error_set(&inf->werr, ENOMEM, "out of memory");
        for (;;) {
                char *next = NULL, *ahead;

                if (!fetched) {
                        list_path(inf, cont, path, sizeof(path));
                        r = kube_http_do(&inf->client->http, &req, &resp, &inf->werr);
                        if (r < 0)
                                goto out;
                }
                fetched = false;
                if (resp.status == 410 && cont && gone_restarts++ == 0) {
                        /* the continue token expired: start the list over;
                         * what the first pages delivered stays delivered,
                         * the new pages deliver only what changed since */
                        kube_response_clear(&resp);
                        free(cont);
                        cont = NULL;
                        json_object_clear(seen);
                        continue;
                }
                if (resp.status != 200) {
                        r = status_error(inf, "list", &resp);
                        goto out;
                }
                /* the next page on its way while this one is decoded */
                ahead = start_next_page(inf, &resp, &req, path, sizeof(path));
                r = take_page(inf, &resp, seen, &n, rv, sizeof(rv), &next);
                kube_response_clear(&resp);
                if (ahead) {
                        struct gantry_error aerr = { 0 };
                        int ar = kube_list_ahead_finish(&inf->ahead, &resp, &aerr);

                        if (r == 0 && next && strcmp(next, ahead) == 0) {
                                if (ar < 0) {
                                        inf->werr = aerr;
                                        r = ar;
                                } else {
                                        fetched = true;
                                }
                        } else {
                                kube_response_clear(&resp); /* not the page the list goes on with */
                        }
                        free(ahead);
                }
                if (r < 0) {
                        free(next);
                        goto out;
                }
                pages++;
                free(cont);
                cont = next;
                if (!cont)
                        break;
        }
        set_state_rv(inf, rv);
        drop_unseen(inf, seen, &n);
#ifdef __GLIBC__
        /* the pages' decoded JSON was freed, but glibc keeps it in this
         * thread's arena: give it back, or a list of 100,000 pods leaves
         * tens of MiB resident for good */
        malloc_trim(0);
#endif
        log_info("kube.list", "kind=%s items=%zu pages=%d added=%u modified=%u deleted=%u resource_version=%s",
                 kube_kind_label(inf->info), n.items, pages, n.added, n.modified, n.deleted, RV_LOG(inf));
        count(inf, "gantry_kube_relists_total", "Completed lists (initial and re-lists), by kind", NULL);
        pthread_mutex_lock(&inf->lock);
        inf->state.lists++;
        inf->state.consecutive_errors = 0; /* a list that worked ends a run of errors */
        pthread_mutex_unlock(&inf->lock);
        deliver(inf, GANTRY_KUBE_SYNCED, NULL);
        /* after the callback: a waiter then sees everything SYNCED covers */
        pthread_mutex_lock(&inf->lock);
        inf->state.synced = true;
        pthread_cond_broadcast(&inf->cond);
        pthread_mutex_unlock(&inf->lock);
        r = 0;
out:
        kube_response_clear(&resp);
        free(cont);
        json_decref(seen);
        return r;
}

/* ------------------------------------------------------------------ watch */

static int on_line(void *ctx, char *line, size_t n)
{
        struct gantry_kube_informer *inf = ctx;
        struct kube_watch_event ev;
        char key[320];
        int r;

        r = kube_watch_decode(line, n, &ev, &inf->werr);
        if (r < 0)
                return r;
        if (ev.type != KUBE_WATCH_ERROR)
                inf->stream_events++;
        switch (ev.type) {
        case KUBE_WATCH_ERROR: {
                const char *msg = json_string_value(json_object_get(ev.object, "message"));

                inf->error_code = ev.code;
                r = gantry_error_set(&inf->werr, ev.code == 410 ? ESTALE : EPROTO,
                                     "watch %s: ERROR event %ld: %.200s", inf->info->resource, ev.code,
                                     msg ? msg : "");
                json_decref(ev.object);
                return r;
        }
        case KUBE_WATCH_BOOKMARK:
                set_state_rv(inf, ev.resource_version);
                break;
        case KUBE_WATCH_ADDED:
        case KUBE_WATCH_MODIFIED:
                kube_object_key(ev.object, key, sizeof(key));
                deliver(inf, json_object_get(inf->store, key) ? GANTRY_KUBE_MODIFIED : GANTRY_KUBE_ADDED,
                        ev.object);
                if ((r = keep(inf, key, ev.object)) < 0) {
                        json_decref(ev.object);
                        return r;
                }
                set_state_rv(inf, ev.resource_version);
                break;
        case KUBE_WATCH_DELETED:
                kube_object_key(ev.object, key, sizeof(key));
                deliver(inf, GANTRY_KUBE_DELETED, ev.object);
                json_object_del(inf->store, key);
                set_state_rv(inf, ev.resource_version);
                break;
        }
        json_decref(ev.object);
        return 0;
}

static int on_watch_body(void *ctx, const char *data, size_t len)
{
        struct gantry_kube_informer *inf = ctx;
        int r = kube_lines_feed(&inf->lines, data, len, on_line, inf);

        if (r == -EMSGSIZE)
                gantry_error_set(&inf->werr, EMSGSIZE, "watch %s: an event longer than %zu bytes",
                                 inf->info->resource, inf->max_line);
        else if (r == -ENOMEM)
                gantry_error_set(&inf->werr, ENOMEM, "out of memory");
        return r;
}

static void on_watch_open(void *ctx, long status)
{
        struct gantry_kube_informer *inf = ctx;

        if (status != 200)
                return;
        inf->opened = true;
        pthread_mutex_lock(&inf->lock);
        inf->state.watches++;
        inf->state.watching = true;
        pthread_mutex_unlock(&inf->lock);
        log_debug("kube.watch.open", "kind=%s resource_version=%s", kube_kind_label(inf->info), RV_LOG(inf));
}

/*
 * One watch request, until the server ends it or it fails. Returns 0 when it
 * ended normally, -ESTALE when a re-list is due, other -errno on error (with
 * need_list set when events may have been lost).
 */
static int watch_once(struct gantry_kube_informer *inf)
{
        char path[2048 + 3 * SELECTOR_MAX], query[256];
        int timeout = inf->watch_timeout ? inf->watch_timeout : 300 + (int)(rand_r(&inf->seed) % 301);
        struct kube_request req = {
                .method = "GET", .path = path, .verb = "watch", .resource = inf->info->resource,
                .stream = true, .timeout = timeout + 30, .on_body = on_watch_body,
                .on_open = on_watch_open, .ctx = inf, .waker = &inf->waker,
                .max_body = 64 * 1024,
        };
        struct kube_response resp = { 0 };
        int r;

        snprintf(query, sizeof(query), "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d", timeout);
        append_param(query, sizeof(query), "resourceVersion", inf->rv);
        build_path(inf, path, sizeof(path), query);
        kube_lines_init(&inf->lines, inf->max_line);
        inf->stream_events = 0;
        inf->opened = false;
        inf->error_code = 0;
        r = kube_http_do(&inf->client->http, &req, &resp, &inf->werr);
        kube_lines_clear(&inf->lines);
        pthread_mutex_lock(&inf->lock);
        inf->state.watching = false;
        pthread_mutex_unlock(&inf->lock);
        if (inf->error_code) { /* an ERROR event ended the stream */
                inf->need_list = true;
                return inf->error_code == 410 ? -ESTALE : -EPROTO;
        }
        if (r == -EBADMSG || r == -EMSGSIZE) {
                inf->need_list = true; /* an event was lost */
                return r;
        }
        if (r < 0 && inf->opened && r != -ECANCELED) {
                /* the stream broke after a 200 (an API server restarting,
                 * a load balancer's idle cut): a watch that ended, not an
                 * error; resume from inf->rv */
                log_info("kube.watch.dropped", "kind=%s events=%llu resource_version=%s reason=%s",
                         kube_kind_label(inf->info), (unsigned long long)inf->stream_events,
                         RV_LOG(inf), strerror(-r));
                return 0;
        }
        if (r < 0)
                return r; /* transport: resume from inf->rv */
        if (resp.status == 410) {
                kube_response_clear(&resp);
                inf->need_list = true;
                gantry_error_set(&inf->werr, ESTALE, "watch %s: HTTP 410: resourceVersion %s is too old",
                                 inf->info->resource, inf->rv);
                return -ESTALE;
        }
        if (resp.status != 200)
                return status_error(inf, "watch", &resp);
        kube_response_clear(&resp);
        log_debug("kube.watch.closed", "kind=%s events=%llu resource_version=%s", kube_kind_label(inf->info),
                  (unsigned long long)inf->stream_events, RV_LOG(inf));
        return 0;
}

/* ----------------------------------------------------------------- thread */

long kube_backoff_ms(int initial_ms, int max_ms, int consecutive, unsigned int *seed)
{
        long ms = initial_ms;

        for (int i = 1; i < consecutive && ms < max_ms; i++)
                ms *= 2;
        if (ms > max_ms)
                ms = max_ms;
        /* +-25% so that informers (and schedulers) do not retry in step,
         * yet never past the maximum */
        ms += (long)(rand_r(seed) % (unsigned)(ms / 2 + 1)) - ms / 4;
        if (ms > max_ms)
                ms = max_ms;
        return ms > 0 ? ms : 1;
}

/* Records a failed attempt; returns false when the informer must give up. */
static bool note_error(struct gantry_kube_informer *inf, int r, long *ret_delay)
{
        int consecutive;
        bool synced;
        char quoted[GANTRY_ERROR_MSG_MAX + 8];

        if (r >= 0 || inf->werr.err == 0)
                gantry_error_set(&inf->werr, r < 0 ? -r : EIO, "%s %s: failed", inf->need_list ? "list" : "watch",
                                 inf->info->resource);
        pthread_mutex_lock(&inf->lock);
        inf->state.errors++;
        consecutive = ++inf->state.consecutive_errors;
        inf->state.last_error = inf->werr;
        synced = inf->state.synced;
        pthread_mutex_unlock(&inf->lock);
        gantry_log_quote(inf->werr.msg, quoted, sizeof(quoted));
        if (inf->end_when_not_found && r == -ENOENT) {
                log_info("kube.informer.not_served", "kind=%s error=%s", kube_kind_label(inf->info), quoted);
                return false;
        }
        if (inf->max_errors > 0 && !synced && consecutive >= inf->max_errors) {
                log_error("kube.informer.failed", "kind=%s errors=%d error=%s", kube_kind_label(inf->info),
                          consecutive, quoted);
                return false;
        }
        *ret_delay = kube_backoff_ms(inf->initial_backoff_ms, inf->max_backoff_ms, consecutive, &inf->seed);
        log_warn("kube.informer.error", "kind=%s errors=%d retry_ms=%ld relist=%s error=%s",
                 kube_kind_label(inf->info), consecutive, *ret_delay, inf->need_list ? "yes" : "no", quoted);
        return true;
}

static void note_success(struct gantry_kube_informer *inf)
{
        pthread_mutex_lock(&inf->lock);
        inf->state.consecutive_errors = 0;
        pthread_mutex_unlock(&inf->lock);
}

static void *informer_main(void *arg)
{
        struct gantry_kube_informer *inf = arg;
        long delay;
        int r;

        while (!kube_waker_stopped(&inf->waker)) {
                gantry_error_clear(&inf->werr);
                if (inf->need_list) {
                        r = list_all(inf);
                        if (r == -ECANCELED)
                                break;
                        if (r == 0) {
                                inf->need_list = false;
                                continue;
                        }
                } else {
                        r = watch_once(inf);
                        if (r == -ECANCELED)
                                break;
                        if (inf->stream_events > 0)
                                note_success(inf); /* the watch worked for a while */
                        if (r == 0 && inf->stream_events > 0)
                                continue;
                        if (inf->stream_events > 0 || r == 0)
                                inf->gone_in_a_row = 0; /* the watch worked */
                        if (r == -ESTALE && inf->gone_in_a_row++ == 0) {
                                /* expired: re-list at once; only a second
                                 * 410 with no progress between backs off */
                                log_info("kube.watch.expired", "kind=%s resource_version=%s",
                                         kube_kind_label(inf->info), RV_LOG(inf));
                                continue;
                        }
                        if (r == 0) {
                                /* closed without a single event or bookmark:
                                 * a server timeout or a server that drops us
                                 * at once; back off a little, not an error */
                                if (kube_waker_sleep(&inf->waker, inf->initial_backoff_ms) < 0)
                                        break;
                                continue;
                        }
                }
                if (!note_error(inf, r, &delay)) {
                        pthread_mutex_lock(&inf->lock);
                        inf->state.failed = true;
                        pthread_cond_broadcast(&inf->cond);
                        pthread_mutex_unlock(&inf->lock);
                        break;
                }
                if (kube_waker_sleep(&inf->waker, delay) < 0)
                        break;
        }
        return NULL;
}

/* ------------------------------------------------------------------ public */

static void informer_free(struct gantry_kube_informer *inf)
{
        if (!inf)
                return;
        kube_waker_destroy(&inf->waker);
        kube_list_ahead_destroy(&inf->ahead);
        json_decref(inf->store);
        free(inf->label_selector);
        free(inf->field_selector);
        free(inf->namespace);
        pthread_cond_destroy(&inf->cond);
        pthread_mutex_destroy(&inf->lock);
        free(inf);
}

static int copy_selector(const char *in, const char *field, char **ret, struct gantry_error *err)
{
        *ret = NULL;
        if (!in || !*in)
                return 0;
        if (strlen(in) > SELECTOR_MAX)
                return gantry_error_set(err, EINVAL, "informer options: %s: longer than %d bytes", field,
                                        SELECTOR_MAX);
        *ret = strdup(in);
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

int gantry_kube_informer_start(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                               const struct gantry_kube_informer_options *opts,
                               gantry_kube_event_fn fn, void *ctx,
                               struct gantry_kube_informer **ret_informer,
                               struct gantry_error *err)
{
        static const struct gantry_kube_informer_options defaults;
        struct gantry_kube_informer *inf;
        pthread_condattr_t attr;
        int r;

        if (!opts)
                opts = &defaults;
        if (!client || !fn || !ret_informer)
                return gantry_error_set(err, EINVAL, "informer: client and callback are required");
        if ((unsigned)kind >= GANTRY_KUBE_KIND_COUNT)
                return gantry_error_set(err, EINVAL, "informer: kind: unknown (%d)", (int)kind);
        if (opts->page_size < 0 || opts->watch_timeout_seconds < 0 || opts->initial_backoff_ms < 0 ||
            opts->max_backoff_ms < 0 || opts->max_errors < 0)
                return gantry_error_set(err, EINVAL, "informer options: must not be negative");
        if (opts->namespace && *opts->namespace) {
                for (const char *p = opts->namespace; *p; p++)
                        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
                                return gantry_error_set(err, EINVAL, "informer options: namespace: not a DNS label");
                if (strlen(opts->namespace) > 63)
                        return gantry_error_set(err, EINVAL, "informer options: namespace: longer than 63");
        }

        inf = calloc(1, sizeof(*inf));
        if (!inf)
                return gantry_error_set(err, ENOMEM, "out of memory");
        pthread_mutex_init(&inf->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&inf->cond, &attr);
        pthread_condattr_destroy(&attr);
        inf->client = client;
        inf->kind = kind;
        inf->info = kube_kind_info(kind);
        inf->fn = fn;
        inf->ctx = ctx;
        inf->page_size = opts->page_size ? opts->page_size : DEFAULT_PAGE_SIZE;
        inf->watch_timeout = opts->watch_timeout_seconds;
        inf->initial_backoff_ms = opts->initial_backoff_ms ? opts->initial_backoff_ms : DEFAULT_INITIAL_BACKOFF_MS;
        inf->max_backoff_ms = opts->max_backoff_ms ? opts->max_backoff_ms : DEFAULT_MAX_BACKOFF_MS;
        if (inf->max_backoff_ms < inf->initial_backoff_ms)
                inf->max_backoff_ms = inf->initial_backoff_ms;
        inf->max_errors = opts->max_errors;
        inf->end_when_not_found = opts->end_when_not_found;
        inf->max_line = opts->max_line_bytes ? opts->max_line_bytes : DEFAULT_MAX_LINE;
        inf->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)inf;
        inf->need_list = true;
        inf->store = json_object();
        if (!inf->store) {
                informer_free(inf);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = copy_selector(opts->label_selector, "label_selector", &inf->label_selector, err)) < 0 ||
            (r = copy_selector(opts->field_selector, "field_selector", &inf->field_selector, err)) < 0 ||
            (r = copy_selector(opts->namespace, "namespace", &inf->namespace, err)) < 0) {
                informer_free(inf);
                return r;
        }
        r = kube_waker_init(&inf->waker);
        if (r == 0)
                r = kube_list_ahead_init(&inf->ahead, &inf->client->http);
        if (r < 0) {
                informer_free(inf);
                return gantry_error_set(err, r, "informer: cannot make a curl multi handle");
        }
        r = pthread_create(&inf->thread, NULL, informer_main, inf);
        if (r != 0) {
                informer_free(inf);
                return gantry_error_set(err, r, "informer: cannot start its thread");
        }
        {
                char name[16]; /* the kernel's limit, with the NUL */

                /* for top -H and per-thread CPU: "inf:pods", "inf:nodes", ... */
                snprintf(name, sizeof(name), "inf:%s", inf->info->resource);
                pthread_setname_np(inf->thread, name);
        }
        log_info("kube.informer.start", "kind=%s server=%s", kube_kind_label(inf->info),
                 gantry_kube_client_server(client));
        *ret_informer = inf;
        return 0;
}

void gantry_kube_informer_stop(struct gantry_kube_informer *informer)
{
        if (!informer)
                return;
        kube_waker_wake(&informer->waker);
        kube_list_ahead_wake(&informer->ahead);
        pthread_join(informer->thread, NULL);
        log_info("kube.informer.stop", "kind=%s", kube_kind_label(informer->info));
        informer_free(informer);
}

void gantry_kube_informer_stop_forgetting(struct gantry_kube_informer *informer)
{
        const char *key;
        json_t *kept;
        size_t n;

        if (!informer)
                return;
        kube_waker_wake(&informer->waker);
        kube_list_ahead_wake(&informer->ahead);
        pthread_join(informer->thread, NULL);
        n = json_object_size(informer->store);
        /* the thread has ended: its store and callback are this thread's now */
        json_object_foreach(informer->store, key, kept)
                deliver_tombstone(informer, key, kept);
        log_info("kube.informer.stop", "kind=%s forgotten=%zu", kube_kind_label(informer->info), n);
        informer_free(informer);
}

int gantry_kube_informer_wait_synced(struct gantry_kube_informer *informer, int timeout_ms)
{
        struct timespec until;
        int r = 0;

        gantry_clock_deadline(&until, timeout_ms);
        pthread_mutex_lock(&informer->lock);
        while (!informer->state.synced && !informer->state.failed && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&informer->cond, &informer->lock, &until);
        if (informer->state.synced)
                r = 0;
        else if (informer->state.failed)
                r = informer->state.last_error.err ? -informer->state.last_error.err : -EIO;
        else
                r = -ETIMEDOUT;
        pthread_mutex_unlock(&informer->lock);
        return r;
}

void gantry_kube_informer_state(struct gantry_kube_informer *informer,
                                struct gantry_kube_informer_state *ret_state)
{
        pthread_mutex_lock(&informer->lock);
        *ret_state = informer->state;
        pthread_mutex_unlock(&informer->lock);
}

int gantry_kube_informer_wait_synced_or_stop(struct gantry_kube_informer *informer, int timeout_ms,
                                             const atomic_bool *stop)
{
        int r = -ETIMEDOUT;

        for (int waited = 0; waited < timeout_ms; waited += STOP_CHECK_MS) {
                if (stop && atomic_load(stop))
                        return -ECANCELED;
                r = gantry_kube_informer_wait_synced(informer, timeout_ms - waited < STOP_CHECK_MS
                                                                       ? timeout_ms - waited
                                                                       : STOP_CHECK_MS);
                if (r != -ETIMEDOUT)
                        return r;
        }
        return r;
}
