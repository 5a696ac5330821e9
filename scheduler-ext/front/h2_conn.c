/*
 * An HTTP/2 connection of gantry-scheduler on nghttp2; see h2_conn.h. The
 * thread polls the socket and its eventfd: bytes read go to
 * nghttp2_session_mem_recv(), whose callbacks collect each stream's
 * :method, :path, content-length and body and hand them to the router;
 * what nghttp2 has to send is gathered into TLS records of up to 16 KiB.
 * A bind's stream waits for its worker, which queues the answer on the
 * connection's done list and writes the eventfd. A stream the client
 * resets while its bind runs is freed when the answer comes back; until
 * then it still counts: a connection has at most GANTRY_SCHED_H2_MAX_STREAMS
 * binds out, open or reset, so a client that binds and resets again and
 * again cannot pile up bodies and queued jobs past the stream limit.
 */
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h2_conn.h"
#include "http_body.h"
#include "log.h"
#include "sched_router.h"
#include "tls_io.h"

#define OUT_BUF (16u << 10)   /* one TLS record's plaintext */
#define WINDOW (1u << 20)     /* per stream: a 500-node filter body in few round trips */
#define CONN_WINDOW (16u << 20)

struct h2_stream {
        struct h2_stream *next, **pprev; /* the connection's streams */
        struct h2_stream *done_next;   /* on the done list */
        struct h2_conn *c;
        int32_t id;
        char method[8];
        char *path;
        unsigned long long content_length; /* 0: not announced */
        enum gantry_extender_verb verb;
        bool has_body;   /* a verb whose body is being read */
        bool answered;   /* a reply was submitted, or the bind queued */
        bool in_bind;    /* a bind worker holds it */
        bool closed;     /* nghttp2 closed it while in_bind */
        struct gantry_http_body body;
        int bind_status;
        char *bind_reply;
        struct gantry_sched_reply reply;
        size_t len, sent; /* bytes of reply.text, and sent */
};

struct h2_conn {
        nghttp2_session *ng;
        gnutls_session_t tls;
        int fd, wake;
        struct gantry_sched_router *router;
        const char *refused;
        struct h2_stream *streams;
        unsigned int n_streams;
        pthread_mutex_t lock; /* the done list and binds_out, shared with the workers */
        pthread_cond_t bind_done;
        struct h2_stream *done;
        unsigned int binds_out;
        char out[OUT_BUF];
        size_t out_len;
};

static void stream_free(struct h2_stream *st)
{
        struct h2_conn *c = st->c;

        *st->pprev = st->next;
        if (st->next)
                st->next->pprev = st->pprev;
        c->n_streams--;
        free(st->path);
        free(st->body.data);
        free(st->bind_reply);
        if (st->reply.owned)
                free(st->reply.text);
        free(st);
}

static ssize_t read_reply(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                          uint32_t *flags, nghttp2_data_source *src, void *user)
{
        struct h2_stream *st = src->ptr;
        size_t n = st->len - st->sent;

        (void)ng;
        (void)id;
        (void)user;
        if (n > len)
                n = len;
        memcpy(buf, st->reply.text + st->sent, n);
        st->sent += n;
        if (st->sent == st->len)
                *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static void respond(struct h2_stream *st, const struct gantry_sched_reply *reply)
{
        char status[8], length[24];
        nghttp2_data_provider prd = { .source.ptr = st, .read_callback = read_reply };
        bool head = !strcmp(st->method, "HEAD");
        nghttp2_nv nv[3];

        st->answered = true;
        st->reply = *reply;
        if (!st->reply.text)
                st->reply = (struct gantry_sched_reply){ 500, "text/plain", "out of memory\n", false };
        st->len = strlen(st->reply.text);
        snprintf(status, sizeof(status), "%u", st->reply.status);
        snprintf(length, sizeof(length), "%zu", st->len);
#define NV(n, v) ((nghttp2_nv){ (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE })
        nv[0] = NV(":status", status);
        nv[1] = NV("content-type", st->reply.type);
        nv[2] = NV("content-length", length);
#undef NV
        if (nghttp2_submit_response(st->c->ng, st->id, nv, 3, head ? NULL : &prd) < 0)
                nghttp2_submit_rst_stream(st->c->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
}

/* A bind worker's answer: queued for the connection's thread. */
static void bind_done(void *arg, int status, char *reply)
{
        struct h2_stream *st = arg;
        struct h2_conn *c = st->c;
        uint64_t one = 1;

        pthread_mutex_lock(&c->lock);
        st->bind_status = status;
        st->bind_reply = reply;
        st->done_next = c->done;
        c->done = st;
        pthread_cond_broadcast(&c->bind_done); /* for the wait at the connection's end */
        /* under the lock: once it is released, the connection's last wait
         * may take this answer and free @c and close its eventfd */
        if (write(c->wake, &one, sizeof(one)) < 0) {
                /* the eventfd is full of wake-ups: the thread is awake */
        }
        pthread_mutex_unlock(&c->lock);
}

/* On the connection's thread: submits the answers of the binds that ended. */
static void take_binds(struct h2_conn *c)
{
        struct h2_stream *st, *next;
        struct gantry_sched_reply reply;

        pthread_mutex_lock(&c->lock);
        st = c->done;
        c->done = NULL;
        pthread_mutex_unlock(&c->lock);
        for (; st; st = next) {
                next = st->done_next;
                st->in_bind = false;
                pthread_mutex_lock(&c->lock);
                c->binds_out--;
                pthread_mutex_unlock(&c->lock);
                if (st->closed) {
                        stream_free(st);
                        continue;
                }
                gantry_sched_route_json(c->router, GANTRY_VERB_BIND, st->bind_status, st->bind_reply,
                                        st->body.start, &reply);
                st->bind_reply = NULL;
                respond(st, &reply);
        }
}

static void too_large(struct h2_stream *st, unsigned long long announced)
{
        struct gantry_sched_reply reply;

        gantry_sched_route_too_large(st->c->router, st->verb, announced, st->body.start, &reply);
        free(st->body.data);
        st->body.data = NULL;
        respond(st, &reply);
}

static void on_head(struct h2_stream *st)
{
        struct h2_conn *c = st->c;
        struct gantry_sched_reply reply;

        st->body.start = gantry_extender_now();
        if (gantry_sched_route_head(c->router, st->method, st->path ? st->path : "", c->refused,
                                    &st->verb, &reply) == GANTRY_SCHED_ROUTE_REPLY) {
                respond(st, &reply);
                return;
        }
        st->has_body = true;
        st->body.limit = c->router->max_body;
        if (st->content_length > c->router->max_body)
                too_large(st, st->content_length);
}

static void on_end(struct h2_stream *st)
{
        struct h2_conn *c = st->c;
        struct gantry_sched_reply reply;
        int r;

        if (st->answered || !st->has_body)
                return;
        if ((r = gantry_http_body_finish(&st->body)) == -EFBIG) {
                too_large(st, 0);
                return;
        }
        if (r < 0) {
                nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
                st->answered = true;
                return;
        }
        st->answered = true;
        if (st->verb == GANTRY_VERB_BIND) {
                bool full;

                /* counted before a worker can answer */
                pthread_mutex_lock(&c->lock);
                full = c->binds_out >= GANTRY_SCHED_H2_MAX_STREAMS;
                if (!full)
                        c->binds_out++;
                pthread_mutex_unlock(&c->lock);
                if (full) {
                        /* only streams reset while their bind waits get here:
                         * open ones are capped by the stream limit already */
                        gantry_sched_route_json(c->router, st->verb, 503,
                                                strdup("{\"Error\":\"too many binds in flight on "
                                                       "this connection; retry\"}"),
                                                st->body.start, &reply);
                        respond(st, &reply);
                        return;
                }
                st->in_bind = true;
        }
        r = gantry_sched_route_verb(c->router, st->verb, st->body.data, st->body.len,
                                    st->body.start, bind_done, st, &reply);
        if (r == GANTRY_SCHED_ROUTE_QUEUED)
                return;
        if (st->in_bind) {
                /* bound inline (no queue, or stopping) */
                st->in_bind = false;
                pthread_mutex_lock(&c->lock);
                c->binds_out--;
                pthread_mutex_unlock(&c->lock);
        }
        respond(st, &reply);
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
        struct h2_conn *c = user;
        struct h2_stream *st;

        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        st = calloc(1, sizeof(*st));
        if (!st)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
        st->c = c;
        st->id = frame->hd.stream_id;
        st->next = c->streams;
        st->pprev = &c->streams;
        if (c->streams)
                c->streams->pprev = &st->next;
        c->streams = st;
        c->n_streams++;
        nghttp2_session_set_stream_user_data(ng, st->id, st);
        return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
        struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, frame->hd.stream_id);

        (void)flags;
        (void)user;
        if (!st || frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        if (namelen == 7 && !memcmp(name, ":method", 7)) {
                if (valuelen < sizeof(st->method)) {
                        memcpy(st->method, value, valuelen);
                        st->method[valuelen] = '\0';
                } else {
                        snprintf(st->method, sizeof(st->method), "?");
                }
        } else if (namelen == 5 && !memcmp(name, ":path", 5) && !st->path) {
                /* the query is no part of the route, as for libmicrohttpd */
                const uint8_t *q = memchr(value, '?', valuelen);

                st->path = strndup((const char *)value, q ? (size_t)(q - value) : valuelen);
                if (!st->path)
                        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        } else if (namelen == 14 && !memcmp(name, "content-length", 14)) {
                /* nghttp2 has checked it is a number, and will check the body against it */
                st->content_length = strtoull((const char *)value, NULL, 10);
        }
        return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
        struct h2_stream *st;

        (void)user;
        if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
                return 0;
        st = nghttp2_session_get_stream_user_data(ng, frame->hd.stream_id);
        if (!st)
                return 0;
        if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
                on_head(st);
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                on_end(st);
        return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
        struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);

        (void)flags;
        (void)user;
        /* after an early answer (refused, 413): read and dropped */
        if (!st || st->answered || !st->has_body)
                return 0;
        if (gantry_http_body_append(&st->body, (const char *)data, len) < 0)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        if (st->body.too_large)
                too_large(st, 0);
        return 0;
}

static int on_close(nghttp2_session *ng, int32_t id, uint32_t error, void *user)
{
        struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);

        (void)error;
        (void)user;
        if (!st)
                return 0;
        if (st->in_bind)
                st->closed = true; /* freed when its worker answers */
        else
                stream_free(st);
        return 0;
}

static int flush_out(struct h2_conn *c)
{
        int r = c->out_len ? gantry_sched_tls_send(c->tls, c->out, c->out_len) : 0;

        c->out_len = 0;
        return r;
}

/* Sends all nghttp2 has to send, gathered into records. */
static int send_pending(struct h2_conn *c)
{
        for (;;) {
                const uint8_t *data;
                ssize_t n = nghttp2_session_mem_send(c->ng, &data);

                if (n < 0)
                        return -EIO;
                if (n == 0)
                        return flush_out(c);
                if (c->out_len + (size_t)n > OUT_BUF && flush_out(c) < 0)
                        return -EIO;
                if ((size_t)n > OUT_BUF) {
                        if (gantry_sched_tls_send(c->tls, data, (size_t)n) < 0)
                                return -EIO;
                        continue;
                }
                memcpy(c->out + c->out_len, data, (size_t)n);
                c->out_len += (size_t)n;
        }
}

static int session_new(struct h2_conn *c)
{
        nghttp2_session_callbacks *cb;
        nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GANTRY_SCHED_H2_MAX_STREAMS },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW },
        };
        int r;

        if (nghttp2_session_callbacks_new(&cb) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        r = nghttp2_session_server_new(&c->ng, cb, c);
        nghttp2_session_callbacks_del(cb);
        if (r != 0)
                return -ENOMEM;
        if (nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, settings, 2) != 0 ||
            nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0)
                return -ENOMEM;
        return 0;
}

static void serve(struct h2_conn *c, const atomic_bool *stopping, unsigned int idle_s)
{
        bool goaway = false;

        for (;;) {
                char in[OUT_BUF];
                struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
                                       { .fd = c->wake, .events = POLLIN } };
                bool pending;
                ssize_t n;
                int r;

                if (send_pending(c) < 0)
                        return;
                if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng))
                        return;
                if (!goaway && atomic_load(stopping)) {
                        nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE,
                                              nghttp2_session_get_last_proc_stream_id(c->ng),
                                              NGHTTP2_NO_ERROR, NULL, 0);
                        goaway = true;
                        continue;
                }
                pending = gnutls_record_check_pending(c->tls) > 0;
                r = poll(p, 2, pending ? 0 : (int)idle_s * 1000);
                if (r < 0 && errno != EINTR)
                        return;
                if (r == 0 && !pending) {
                        if (c->n_streams > 0)
                                continue;
                        /* idle: an orderly end, as libmicrohttpd's timeout does for HTTP/1.1 */
                        if (goaway)
                                return;
                        nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE,
                                              nghttp2_session_get_last_proc_stream_id(c->ng),
                                              NGHTTP2_NO_ERROR, NULL, 0);
                        goaway = true;
                        continue;
                }
                if (p[1].revents & POLLIN) {
                        uint64_t v;

                        if (read(c->wake, &v, sizeof(v)) < 0) {
                                /* nothing to read: a wake-up taken already */
                        }
                        take_binds(c);
                }
                if (pending || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
                        n = gantry_sched_tls_recv(c->tls, in, sizeof(in));
                        if (n <= 0)
                                return;
                        if (nghttp2_session_mem_recv(c->ng, (const uint8_t *)in, (size_t)n) < 0)
                                return;
                }
        }
}

void gantry_sched_h2_serve(gnutls_session_t tls, int fd, int wake, const atomic_bool *stopping,
                           struct gantry_sched_router *router, const char *refused,
                           unsigned int idle_s)
{
        struct h2_conn *c = calloc(1, sizeof(*c));

        if (!c)
                return;
        c->tls = tls;
        c->fd = fd;
        c->wake = wake;
        c->router = router;
        c->refused = refused;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->bind_done, NULL);
        if (session_new(c) == 0)
                serve(c, stopping, idle_s ? idle_s : 30);
        /* the workers still hold streams: their answers come back here */
        pthread_mutex_lock(&c->lock);
        while (c->binds_out > 0) {
                while (c->binds_out > 0 && !c->done)
                        pthread_cond_wait(&c->bind_done, &c->lock);
                pthread_mutex_unlock(&c->lock);
                take_binds(c);
                pthread_mutex_lock(&c->lock);
        }
        pthread_mutex_unlock(&c->lock);
        nghttp2_session_del(c->ng);
        while (c->streams)
                stream_free(c->streams);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->bind_done);
        free(c);
}
