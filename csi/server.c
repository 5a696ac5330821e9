/*
 * The CSI gRPC server on grpc core's C API; see server.h.
 *
 * Life of a call:
 *   CALL_REQUESTED  a registered-call request is armed for one method; its
 *                   completion means a client called that method.
 *   CALL_SENDING    the worker handled the call and started the batch that
 *                   sends status (and the response); its completion frees it.
 * The same struct is the tag for both, so the state says what completed.
 * Shutdown: grpc_server_shutdown_and_notify() fails the armed requests (they
 * come back with success == 0 and are freed), lets calls in flight finish,
 * and posts the shutdown tag; after the drain timeout the rest is cancelled.
 */
#include "server.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "csi_internal.h"
#include "log.h"
#include "status.h"

#define MAX_WORKERS 64

enum call_state {
        CALL_REQUESTED,
        CALL_UNKNOWN_REQUESTED, /* a call to a path no CSI method has */
        CALL_SENDING,
        CALL_SHUTDOWN, /* the server's shutdown tag */
};

struct call_ctx {
        enum call_state state;
        struct gantry_csi_server *server;
        struct gantry_csi_method *method;
        void *registered;
        grpc_call *call;
        gpr_timespec deadline;
        grpc_metadata_array request_metadata;
        grpc_byte_buffer *request_payload;
        grpc_byte_buffer *response_payload;
        grpc_slice status_details;
        int cancelled;
        int generic;              /* requested with grpc_server_request_call */
        grpc_call_details details; /* the path, for generic calls */
};

struct gantry_csi_server {
        grpc_server *server;
        grpc_completion_queue *cq;
        void *registered[64];
        struct gantry_csi_method *methods;
        size_t n_methods;
        pthread_t workers[MAX_WORKERS];
        int n_workers;
        int started;
        int shut_down;
        struct call_ctx shutdown_tag;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int shutdown_done;
        int accepting;
        char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        struct gantry_csi_server_options opts;
};

int gantry_csi_endpoint_parse(const char *endpoint, char *buf, size_t size)
{
        const char *path;

        if (!endpoint)
                return -EINVAL;
        if (strncmp(endpoint, "unix://", 7) == 0)
                path = endpoint + 7;
        else if (strncmp(endpoint, "unix:", 5) == 0)
                path = endpoint + 5;
        else
                return -EINVAL;
        if (path[0] != '/' || strlen(path) >= size ||
            strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
                return -EINVAL;
        snprintf(buf, size, "%s", path);
        return 0;
}

/* Removes a stale socket file; refuses a live socket or a non-socket file. */
static int remove_stale_socket(const char *path, struct gantry_error *err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        int fd, r;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : gantry_error_set(err, errno, "endpoint: %s: %s", path,
                                                              strerror(errno));
        if (!S_ISSOCK(st.st_mode))
                return gantry_error_set(err, EEXIST, "endpoint: %s exists and is not a socket", path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return gantry_error_set(err, errno, "endpoint: socket: %s", strerror(errno));
        r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        close(fd);
        if (r == 0)
                return gantry_error_set(err, EADDRINUSE,
                                        "endpoint: %s is in use by another running server", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return gantry_error_set(err, errno, "endpoint: cannot remove stale %s: %s", path,
                                        strerror(errno));
        log_info("csi.stale_socket_removed", "path=%s", path);
        return 0;
}

/* Arms a registered-call request for @method. */
static int request_call(struct gantry_csi_server *s, size_t index)
{
        struct call_ctx *c = calloc(1, sizeof(*c));
        grpc_call_error e;

        if (!c)
                return -ENOMEM;
        c->state = CALL_REQUESTED;
        c->server = s;
        c->method = &s->methods[index];
        c->registered = s->registered[index];
        grpc_metadata_array_init(&c->request_metadata);
        e = grpc_server_request_registered_call(s->server, c->registered, &c->call, &c->deadline,
                                                &c->request_metadata, &c->request_payload, s->cq,
                                                s->cq, c);
        if (e != GRPC_CALL_OK) {
                grpc_metadata_array_destroy(&c->request_metadata);
                free(c);
                return -EIO;
        }
        return 0;
}

/*
 * Arms a request for calls to paths that are not registered. Without it,
 * grpc core would leave such a call pending until the client's deadline.
 */
static int request_unknown_call(struct gantry_csi_server *s)
{
        struct call_ctx *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->state = CALL_UNKNOWN_REQUESTED;
        c->server = s;
        c->generic = 1;
        grpc_call_details_init(&c->details);
        grpc_metadata_array_init(&c->request_metadata);
        if (grpc_server_request_call(s->server, &c->call, &c->details, &c->request_metadata, s->cq,
                                     s->cq, c) != GRPC_CALL_OK) {
                grpc_call_details_destroy(&c->details);
                grpc_metadata_array_destroy(&c->request_metadata);
                free(c);
                return -EIO;
        }
        return 0;
}

static void call_free(struct call_ctx *c)
{
        if (!c)
                return;
        if (c->generic)
                grpc_call_details_destroy(&c->details);
        if (c->request_payload)
                grpc_byte_buffer_destroy(c->request_payload);
        if (c->response_payload)
                grpc_byte_buffer_destroy(c->response_payload);
        if (c->state == CALL_SENDING)
                grpc_slice_unref(c->status_details);
        grpc_metadata_array_destroy(&c->request_metadata);
        if (c->call)
                grpc_call_unref(c->call);
        free(c);
}

/* grpc's own monotonic clock has another epoch: go through the time left. */
static int64_t deadline_to_monotonic_ms(gpr_timespec deadline)
{
        gpr_timespec left;

        if (gpr_time_cmp(deadline, gpr_inf_future(deadline.clock_type)) == 0)
                return INT64_MAX;
        left = gpr_time_sub(gpr_convert_clock_type(deadline, GPR_CLOCK_MONOTONIC),
                            gpr_now(GPR_CLOCK_MONOTONIC));
        return gantry_now_ms() + (int64_t)left.tv_sec * 1000 + left.tv_nsec / 1000000;
}

int64_t gantry_csi_bound_deadline_ms(int64_t deadline_ms, int64_t now_ms, int max_call_seconds)
{
        if (deadline_ms != INT64_MAX)
                return deadline_ms;
        return now_ms + (int64_t)max_call_seconds * 1000;
}

int64_t gantry_csi_call_remaining_ms(const struct gantry_csi_call *call)
{
        int64_t now;

        if (call->deadline_ms == INT64_MAX)
                return INT64_MAX;
        now = gantry_now_ms();
        return call->deadline_ms > now ? call->deadline_ms - now : 0;
}

static const char *service_name(enum gantry_csi_service s)
{
        switch (s) {
        case GANTRY_CSI_IDENTITY:
                return "Identity";
        case GANTRY_CSI_CONTROLLER:
                return "Controller";
        case GANTRY_CSI_NODE:
                return "Node";
        case GANTRY_CSI_GROUP_CONTROLLER:
                return "GroupController";
        case GANTRY_CSI_SNAPSHOT_METADATA:
                return "SnapshotMetadata";
        }
        return "?";
}

/*
 * Unpacks, validates and handles one call. Returns the gRPC code; on OK,
 * *ret_payload holds the packed response (caller owns it).
 */
static enum gantry_grpc_code handle(struct call_ctx *c, struct gantry_csi_arena *arena,
                                    grpc_byte_buffer **ret_payload, struct gantry_error *err)
{
        const struct gantry_csi_method *m = c->method;
        ProtobufCMessage *request = NULL, *response;
        struct gantry_csi_call call = {
                .method = m->name,
                .config = c->server->opts.config,
                .deadline_ms = gantry_csi_bound_deadline_ms(deadline_to_monotonic_ms(c->deadline),
                                                            gantry_now_ms(),
                                                            c->server->opts.max_call_seconds),
                .arena = arena,
        };
        enum gantry_grpc_code code = GANTRY_GRPC_OK;
        grpc_byte_buffer_reader reader;
        grpc_slice in, out;
        char *log_text;
        int r;

        if (!c->request_payload) {
                gantry_error_set(err, ECANCELED, "request: no message received");
                return GANTRY_GRPC_CANCELLED;
        }
        if (!grpc_byte_buffer_reader_init(&reader, c->request_payload)) {
                gantry_error_set(err, EINVAL, "request: cannot read message");
                return GANTRY_GRPC_INVALID_ARGUMENT;
        }
        in = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        request = protobuf_c_message_unpack(m->request, NULL, GRPC_SLICE_LENGTH(in),
                                            GRPC_SLICE_START_PTR(in));
        grpc_slice_unref(in);
        if (!request) {
                gantry_error_set(err, EINVAL, "request: not a valid %s message", m->request->name);
                return GANTRY_GRPC_INVALID_ARGUMENT;
        }

        /* rendered only when written: a JSON walk of every request costs CPU */
        log_text = gantry_log_get_level() <= GANTRY_LOG_DEBUG ? gantry_csi_request_to_log(request)
                                                              : NULL;
        if (log_text) {
                char quoted[2048];
                log_debug("csi.request", "method=%s request=%s", m->name,
                          gantry_log_quote(log_text, quoted, sizeof(quoted)));
                free(log_text);
        }

        if (!m->handler) {
                gantry_error_set(err, ENOSYS, "%s.%s is not implemented by this plugin (mode)",
                                 service_name(m->service), m->name);
                code = GANTRY_GRPC_UNIMPLEMENTED;
                goto out;
        }
        if (call.deadline_ms != INT64_MAX && call.deadline_ms <= gantry_now_ms()) {
                gantry_error_set(err, ETIMEDOUT, "deadline exceeded before the call started");
                code = GANTRY_GRPC_DEADLINE_EXCEEDED;
                goto out;
        }
        r = gantry_csi_validate(m, request, err);
        if (r < 0) {
                code = gantry_status_grpc_from_errno(r);
                goto out;
        }
        response = gantry_csi_call_alloc(&call, m->response->sizeof_message);
        if (!response) {
                gantry_error_set(err, ENOMEM, "out of memory");
                code = GANTRY_GRPC_RESOURCE_EXHAUSTED;
                goto out;
        }
        protobuf_c_message_init(m->response, response);
        gantry_error_clear(err);
        r = m->handler(&call, request, response, err);
        if (r < 0) {
                if (!err->msg[0])
                        gantry_error_set(err, r, "%s", strerror(-r));
                code = gantry_status_grpc_from_errno(r);
                goto out;
        }
        size_t len = protobuf_c_message_get_packed_size(response);
        out = grpc_slice_malloc(len);
        protobuf_c_message_pack(response, GRPC_SLICE_START_PTR(out));
        *ret_payload = grpc_raw_byte_buffer_create(&out, 1);
        grpc_slice_unref(out);
out:
        protobuf_c_message_free_unpacked(request, NULL);
        return code;
}

static void record(struct gantry_csi_server *s, const struct gantry_csi_method *m,
                   enum gantry_grpc_code code, double seconds)
{
        char labels[160];

        if (!s->opts.metrics)
                return;
        snprintf(labels, sizeof(labels), "method=\"%s\"", m->name);
        gantry_metrics_counter_add(s->opts.metrics, "gantry_csi_requests_total",
                                   "CSI calls received, per method.", labels, 1);
        gantry_metrics_histogram_observe(s->opts.metrics, "gantry_csi_request_duration_seconds",
                                         "CSI call latency, per method.", labels, seconds);
        if (code != GANTRY_GRPC_OK) {
                snprintf(labels, sizeof(labels), "method=\"%s\",code=\"%s\"", m->name,
                         gantry_status_grpc_name(code));
                gantry_metrics_counter_add(s->opts.metrics, "gantry_csi_errors_total",
                                           "CSI calls that failed, per method and gRPC code.",
                                           labels, 1);
        }
}

/* Starts the batch that answers @c with @code (and its response, if any). */
static void send_status(struct call_ctx *c, enum gantry_grpc_code code, const char *message)
{
        grpc_op ops[4], *op = ops;

        c->state = CALL_SENDING;
        c->status_details = grpc_slice_from_copied_string(code == GANTRY_GRPC_OK ? "" : message);
        memset(ops, 0, sizeof(ops));
        op->op = GRPC_OP_SEND_INITIAL_METADATA;
        op++;
        if (code == GANTRY_GRPC_OK && c->response_payload) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = c->response_payload;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = (grpc_status_code)code;
        op->data.send_status_from_server.status_details = &c->status_details;
        op++;
        op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op->data.recv_close_on_server.cancelled = &c->cancelled;
        op++;
        if (grpc_call_start_batch(c->call, ops, (size_t)(op - ops), c, NULL) != GRPC_CALL_OK) {
                log_error("csi.send_failed", "method=%s", c->method ? c->method->name : "?");
                call_free(c);
        }
}

/* A client called a path that is not a CSI method: re-arm, answer UNIMPLEMENTED. */
static void on_unknown_call(struct call_ctx *c)
{
        struct gantry_csi_server *s = c->server;
        char path[256], msg[320];
        size_t n = GRPC_SLICE_LENGTH(c->details.method);

        pthread_mutex_lock(&s->lock);
        if (s->accepting && request_unknown_call(s) < 0)
                log_error("csi.rearm_failed", "method=unknown");
        pthread_mutex_unlock(&s->lock);
        if (n >= sizeof(path))
                n = sizeof(path) - 1;
        memcpy(path, GRPC_SLICE_START_PTR(c->details.method), n);
        path[n] = '\0';
        snprintf(msg, sizeof(msg), "unknown method %s", path);
        log_info("csi.call", "method=unknown code=UNIMPLEMENTED path=%s", path);
        send_status(c, GANTRY_GRPC_UNIMPLEMENTED, msg);
}

/* A client called a method: re-arm, handle, start sending the answer. */
static void on_new_call(struct call_ctx *c)
{
        struct gantry_csi_server *s = c->server;
        struct gantry_csi_arena *arena = gantry_csi_arena_new();
        struct gantry_error err = { 0 };
        enum gantry_grpc_code code;
        uint64_t t0;
        char quoted[GANTRY_ERROR_MSG_MAX + 8];
        size_t index = (size_t)(c->method - s->methods);
        double seconds;

        pthread_mutex_lock(&s->lock);
        if (s->accepting && request_call(s, index) < 0)
                log_error("csi.rearm_failed", "method=%s", c->method->name);
        pthread_mutex_unlock(&s->lock);

        t0 = gantry_now_ns();
        if (!arena) {
                gantry_error_set(&err, ENOMEM, "out of memory");
                code = GANTRY_GRPC_RESOURCE_EXHAUSTED;
        } else {
                code = handle(c, arena, &c->response_payload, &err);
        }
        gantry_csi_arena_free(arena);
        seconds = (double)(gantry_now_ns() - t0) / 1e9;
        record(s, c->method, code, seconds);
        if (code == GANTRY_GRPC_OK)
                log_info("csi.call", "method=%s code=OK ms=%.1f", c->method->name, seconds * 1e3);
        else
                log_info("csi.call", "method=%s code=%s ms=%.1f error=%s", c->method->name,
                         gantry_status_grpc_name(code), seconds * 1e3,
                         gantry_log_quote(err.msg, quoted, sizeof(quoted)));

        send_status(c, code, err.msg);
}

static void *worker_main(void *arg)
{
        struct gantry_csi_server *s = arg;

        for (;;) {
                grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
                                                           NULL);
                struct call_ctx *c;

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                c = ev.tag;
                switch (c->state) {
                case CALL_SHUTDOWN:
                        pthread_mutex_lock(&s->lock);
                        s->shutdown_done = 1;
                        pthread_cond_broadcast(&s->cond);
                        pthread_mutex_unlock(&s->lock);
                        break;
                case CALL_REQUESTED:
                        if (!ev.success) /* the server is shutting down */
                                call_free(c);
                        else
                                on_new_call(c);
                        break;
                case CALL_UNKNOWN_REQUESTED:
                        if (!ev.success)
                                call_free(c);
                        else
                                on_unknown_call(c);
                        break;
                case CALL_SENDING:
                        call_free(c);
                        break;
                }
        }
        return NULL;
}

/*
 * Shuts the server down and drains its queue on this thread, for when no
 * worker runs: never started, or a start that failed before its first worker.
 * No call was accepted, so only requested (never matched) calls and the
 * shutdown tag come back; the requested ones are freed.
 */
static void stop_without_workers(struct gantry_csi_server *s)
{
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
        grpc_completion_queue_shutdown(s->cq);
        for (;;) {
                grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
                                                           NULL);
                struct call_ctx *c = ev.tag;

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
                if (ev.type == GRPC_OP_COMPLETE && c != &s->shutdown_tag)
                        call_free(c);
        }
        s->shutdown_done = 1;
}

int gantry_csi_server_new(const struct gantry_csi_server_options *opts,
                          struct gantry_csi_server **ret_server, struct gantry_error *err)
{
        struct gantry_csi_server *s;
        grpc_server_credentials *creds;
        grpc_arg args[2];
        grpc_channel_args channel_args = { .num_args = 2, .args = args };
        char target[sizeof(s->socket_path) + 8];
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return gantry_error_set(err, ENOMEM, "out of memory");
        s->opts = *opts;
        if (s->opts.workers <= 0)
                s->opts.workers = 4;
        if (s->opts.workers > MAX_WORKERS)
                s->opts.workers = MAX_WORKERS;
        if (s->opts.max_message_bytes <= 0)
                s->opts.max_message_bytes = 4 << 20;
        if (s->opts.drain_timeout_seconds <= 0)
                s->opts.drain_timeout_seconds = 30;
        if (s->opts.max_call_seconds <= 0)
                s->opts.max_call_seconds = 600;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        s->shutdown_tag.state = CALL_SHUTDOWN;
        s->shutdown_tag.server = s;

        r = gantry_csi_endpoint_parse(opts->endpoint, s->socket_path, sizeof(s->socket_path));
        if (r < 0) {
                gantry_error_set(err, EINVAL,
                                 "endpoint: %s: must be unix:///absolute/path (at most %zu bytes)",
                                 opts->endpoint ? opts->endpoint : "(none)",
                                 sizeof(s->socket_path) - 1);
                goto fail;
        }
        r = remove_stale_socket(s->socket_path, err);
        if (r < 0)
                goto fail;

        args[0].type = GRPC_ARG_INTEGER;
        args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
        args[0].value.integer = s->opts.max_message_bytes;
        args[1].type = GRPC_ARG_INTEGER;
        args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
        args[1].value.integer = s->opts.max_message_bytes;
        s->server = grpc_server_create(&channel_args, NULL);
        s->cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(s->server, s->cq, NULL);

        s->methods = gantry_csi_methods(&s->n_methods);
        if (s->n_methods > sizeof(s->registered) / sizeof(s->registered[0])) {
                r = gantry_error_set(err, E2BIG, "internal: too many CSI methods");
                goto fail;
        }
        for (size_t i = 0; i < s->n_methods; i++) {
                s->registered[i] = grpc_server_register_method(
                        s->server, s->methods[i].full_name, NULL,
                        GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
                if (!s->registered[i]) {
                        r = gantry_error_set(err, EINVAL, "cannot register %s",
                                             s->methods[i].full_name);
                        goto fail;
                }
        }
        snprintf(target, sizeof(target), "unix:%s", s->socket_path);
        creds = grpc_insecure_server_credentials_create();
        r = grpc_server_add_http2_port(s->server, target, creds);
        grpc_server_credentials_release(creds);
        if (r == 0) {
                r = gantry_error_set(err, EADDRNOTAVAIL, "endpoint: cannot listen on %s", target);
                goto fail;
        }
        *ret_server = s;
        return 0;
fail:
        gantry_csi_server_free(s);
        return r;
}

int gantry_csi_server_start(struct gantry_csi_server *s)
{
        int r;

        grpc_server_start(s->server);
        s->started = 1;
        pthread_mutex_lock(&s->lock);
        s->accepting = 1;
        for (size_t i = 0; i < s->n_methods; i++) {
                /* streaming methods stay registered (so they answer UNIMPLEMENTED) */
                if (request_call(s, i) < 0) {
                        pthread_mutex_unlock(&s->lock);
                        return -EIO;
                }
        }
        if (request_unknown_call(s) < 0) {
                pthread_mutex_unlock(&s->lock);
                return -EIO;
        }
        pthread_mutex_unlock(&s->lock);
        for (int i = 0; i < s->opts.workers; i++) {
                r = pthread_create(&s->workers[i], NULL, worker_main, s);
                if (r != 0)
                        return -r;
                s->n_workers++;
        }
        log_info("csi.listening", "endpoint=unix://%s workers=%d max_message_bytes=%d",
                 s->socket_path, s->opts.workers, s->opts.max_message_bytes);
        return 0;
}

void gantry_csi_server_shutdown(struct gantry_csi_server *s)
{
        struct timespec until;
        int r = 0;

        if (!s || !s->started || s->shut_down)
                return;
        s->shut_down = 1;
        if (s->n_workers == 0) {
                /* a start that failed before any worker ran: no worker will see the tag */
                stop_without_workers(s);
                log_info("csi.stopped", NULL);
                return;
        }
        log_info("csi.draining", "timeout_s=%d", s->opts.drain_timeout_seconds);
        pthread_mutex_lock(&s->lock);
        s->accepting = 0;
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += s->opts.drain_timeout_seconds;
        while (!s->shutdown_done && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&s->cond, &s->lock, &until);
        pthread_mutex_unlock(&s->lock);
        if (!s->shutdown_done) {
                log_warn("csi.drain_timeout", "action=cancel_all_calls");
                grpc_server_cancel_all_calls(s->server);
                pthread_mutex_lock(&s->lock);
                while (!s->shutdown_done)
                        pthread_cond_wait(&s->cond, &s->lock);
                pthread_mutex_unlock(&s->lock);
        }
        grpc_completion_queue_shutdown(s->cq);
        for (int i = 0; i < s->n_workers; i++)
                pthread_join(s->workers[i], NULL);
        s->n_workers = 0;
        log_info("csi.stopped", NULL);
}

void gantry_csi_server_free(struct gantry_csi_server *s)
{
        if (!s)
                return;
        if (s->started && !s->shut_down)
                gantry_csi_server_shutdown(s);
        if (s->server) {
                if (!s->started)
                        stop_without_workers(s); /* never started: nothing in flight */
                grpc_server_destroy(s->server);
        }
        if (s->cq)
                grpc_completion_queue_destroy(s->cq);
        if (s->socket_path[0] && s->started)
                unlink(s->socket_path);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s);
}

const char *gantry_csi_server_socket_path(const struct gantry_csi_server *s)
{
        return s->socket_path;
}
