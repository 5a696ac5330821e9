/*
 * gantry-scheduler's routes, for both transports (libmicrohttpd's HTTP/1.1
 * and HTTP/2): the client certificate refusal, GET /healthz, /readyz and
 * /metrics, the POST verbs (the last path segment names the verb), the
 * request metrics. See sched_router.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_auth.h"
#include "log.h"
#include "metrics.h"
#include "sched_router.h"

static void set_reply(struct gantry_sched_reply *out, unsigned int status, const char *type,
                      char *text, bool owned)
{
        *out = (struct gantry_sched_reply){ .status = status, .type = type, .text = text,
                                            .owned = owned };
}

static void count_request(struct gantry_sched_router *r, const char *verb, unsigned int status,
                          double start)
{
        char labels[96];

        if (!r->metrics)
                return;
        snprintf(labels, sizeof(labels), "verb=\"%s\",code=\"%u\"", verb, status);
        gantry_metrics_counter_add(r->metrics, "gantry_scheduler_requests_total",
                                   "Extender requests by verb and HTTP status", labels, 1);
        snprintf(labels, sizeof(labels), "verb=\"%s\"", verb);
        gantry_metrics_histogram_observe(r->metrics, "gantry_scheduler_request_seconds",
                                         "Extender request latency by verb", labels,
                                         gantry_extender_now() - start);
}

static void serve_get(struct gantry_sched_router *r, const char *path,
                      struct gantry_sched_reply *out)
{
        char *text = NULL;

        if (!strcmp(path, "/healthz")) {
                set_reply(out, 200, "text/plain", "ok\n", false);
        } else if (!strcmp(path, "/readyz")) {
                char why[128];

                if (gantry_extender_ready(r->ext, why, sizeof(why)))
                        set_reply(out, 200, "text/plain", "ok\n", false);
                else if (asprintf(&text, "not ready: %s\n", why) < 0)
                        set_reply(out, 503, "text/plain", "not ready\n", false);
                else
                        set_reply(out, 503, "text/plain", text, true);
        } else if (!strcmp(path, "/metrics") && r->metrics) {
                gantry_extender_update_gauges(r->ext);
                if (gantry_metrics_render(r->metrics, &text) < 0)
                        set_reply(out, 500, "text/plain", "render failed\n", false);
                else
                        set_reply(out, 200, "text/plain; version=0.0.4", text, true);
        } else {
                set_reply(out, 404, "text/plain", "not found\n", false);
        }
}

int gantry_sched_route_head(struct gantry_sched_router *r, const char *method, const char *path,
                            const char *refused, enum gantry_extender_verb *ret_verb,
                            struct gantry_sched_reply *ret_reply)
{
        const char *slash;

        if (r->check_clients && refused && !gantry_sched_client_path_is_open(path)) {
                char qm[32], qp[512];

                /* anyone who reaches the port chooses both (the path decoded) */
                log_warn("sched.client_refused", "method=%s path=%s reason=\"%s\"",
                         gantry_log_quote(method, qm, sizeof(qm)),
                         gantry_log_quote(path, qp, sizeof(qp)), refused);
                count_request(r, "refused", 403, gantry_extender_now());
                set_reply(ret_reply, 403, "application/json",
                          "{\"Error\":\"a client certificate signed by gantry-scheduler's "
                          "--client-ca is required\"}", false);
                return GANTRY_SCHED_ROUTE_REPLY;
        }
        if (strcmp(method, "POST") != 0) {
                if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
                        serve_get(r, path, ret_reply);
                else
                        set_reply(ret_reply, 405, "text/plain", "method not allowed\n", false);
                return GANTRY_SCHED_ROUTE_REPLY;
        }
        slash = strrchr(path, '/');
        if (gantry_extender_verb_parse(slash ? slash + 1 : path, ret_verb) < 0) {
                set_reply(ret_reply, 404, "application/json",
                          "{\"Error\":\"no such verb: POST to .../filter, .../prioritize, "
                          ".../bind or .../modify\"}", false);
                return GANTRY_SCHED_ROUTE_REPLY;
        }
        return GANTRY_SCHED_ROUTE_BODY;
}

void gantry_sched_route_json(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                             int status, char *json, double start,
                             struct gantry_sched_reply *ret_reply)
{
        count_request(r, gantry_extender_verb_name(verb), (unsigned int)status, start);
        if (!json)
                set_reply(ret_reply, 500, "application/json", "{\"Error\":\"out of memory\"}",
                          false);
        else
                set_reply(ret_reply, (unsigned int)status, "application/json", json, true);
}

void gantry_sched_route_too_large(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                                  unsigned long long content_length, double start,
                                  struct gantry_sched_reply *ret_reply)
{
        char body[200];

        log_warn("sched.request_too_large", "verb=%s", gantry_extender_verb_name(verb));
        if (content_length)
                snprintf(body, sizeof(body),
                         "{\"Error\":\"request body: %llu bytes, the limit is %zu\"}",
                         content_length, r->max_body);
        else
                snprintf(body, sizeof(body), "{\"Error\":\"request body: more than %zu bytes\"}",
                         r->max_body);
        gantry_sched_route_json(r, verb, 413, strdup(body), start, ret_reply);
}

int gantry_sched_route_verb(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                            const char *body, size_t len, double start,
                            gantry_sched_bind_done_fn done, void *arg,
                            struct gantry_sched_reply *ret_reply)
{
        char *json = NULL;
        int status;

        if (verb == GANTRY_VERB_BIND && r->binds && done &&
            gantry_sched_bind_queue_submit(r->binds, body, len, done, arg) == 0)
                return GANTRY_SCHED_ROUTE_QUEUED;
        status = gantry_extender_handle(r->ext, verb, body, len, &json);
        gantry_sched_route_json(r, verb, status, json, start, ret_reply);
        return GANTRY_SCHED_ROUTE_REPLY;
}
