/*
 * A list's next page, asked for while the informer decodes the one before.
 *
 * A list of 100,000 pods is 200 pages of 500, and each page is two pieces of
 * work one after the other: the API server's (read from etcd, encode ~3 MB
 * of JSON) and ours (decode it, diff it, deliver it). The next page's
 * request needs only the continue token, and the API server writes a list's
 * metadata (ListMeta: resourceVersion, continue) before its items, so the
 * token can be read off the head of a page before the page is decoded: the
 * next request then runs on a thread of its own while this page is decoded,
 * and on two or more cores the two pieces of work overlap instead of adding
 * up. A page whose head does not tell (another server's field order) is
 * taken the plain way, one request after the other.
 *
 * The thread has a waker of its own (a curl multi handle serves one thread
 * at a time); the informer's stop wakes both.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

/* ListMeta is a few hundred bytes; past this the head is not where we look */
#define HEAD_MAX 4096

int kube_list_peek_continue(const char *body, size_t len, char **ret_continue)
{
        static const char mark[] = "\"items\":";
        const char *at;
        size_t n;
        char *head;
        json_t *doc, *meta;
        const char *s;
        int r = 0;

        *ret_continue = NULL;
        at = memmem(body, len < HEAD_MAX ? len : HEAD_MAX, mark, sizeof(mark) - 1);
        if (!at)
                return 0;
        /* the head ends with the separator before "items": the object up to it, closed */
        n = (size_t)(at - body);
        while (n > 0 && (body[n - 1] == ' ' || body[n - 1] == '\n' || body[n - 1] == '\r' ||
                         body[n - 1] == '\t'))
                n--;
        if (n < 2 || body[n - 1] != ',')
                return 0;
        head = malloc(n);
        if (!head)
                return 0;
        memcpy(head, body, n - 1);
        head[n - 1] = '}';
        doc = json_loadb(head, n, 0, NULL);
        free(head);
        meta = json_object_get(doc, "metadata");
        if (json_is_object(meta)) {
                s = json_string_value(json_object_get(meta, "continue"));
                if (!s || !*s)
                        r = 1; /* the last page */
                else if ((*ret_continue = strdup(s)))
                        r = 1;
        }
        json_decref(doc);
        return r;
}

int kube_list_ahead_init(struct kube_list_ahead *a, struct kube_http *http)
{
        memset(a, 0, sizeof(*a));
        a->http = http;
        return kube_waker_init(&a->waker);
}

void kube_list_ahead_destroy(struct kube_list_ahead *a)
{
        kube_waker_destroy(&a->waker);
        free(a->path);
        a->path = NULL;
}

void kube_list_ahead_wake(struct kube_list_ahead *a)
{
        kube_waker_wake(&a->waker);
}

static void *ahead_main(void *arg)
{
        struct kube_list_ahead *a = arg;

        a->r = kube_http_do(a->http, &a->req, &a->resp, &a->err);
        return NULL;
}

int kube_list_ahead_start(struct kube_list_ahead *a, const struct kube_request *req)
{
        if (a->running)
                return -EBUSY;
        free(a->path);
        if (!(a->path = strdup(req->path)))
                return -ENOMEM;
        a->req = *req;
        a->req.path = a->path;
        a->req.waker = &a->waker;
        memset(&a->resp, 0, sizeof(a->resp));
        memset(&a->err, 0, sizeof(a->err));
        a->r = 0;
        if (pthread_create(&a->thread, NULL, ahead_main, a) != 0)
                return -EAGAIN;
        a->running = true;
        return 0;
}

int kube_list_ahead_finish(struct kube_list_ahead *a, struct kube_response *ret_resp,
                           struct gantry_error *err)
{
        if (!a->running)
                return -EINVAL;
        pthread_join(a->thread, NULL);
        a->running = false;
        *ret_resp = a->resp;
        memset(&a->resp, 0, sizeof(a->resp));
        if (a->r < 0)
                *err = a->err;
        return a->r;
}
