/*
 * The ready /metrics endpoint of metrics.h (gantry_metrics_server_start())
 * on libmicrohttpd, for binaries with no HTTP server of their own
 * (gantry-csi's and gantry-target's --metrics-addr). Its port is reachable
 * by anyone on the node's network: connections are limited in all, per
 * source address and in time (http_guard.h).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "http_body.h"
#include "http_guard.h"
#include "metrics.h"
#include "netaddr.h"

struct gantry_metrics_server {
        struct MHD_Daemon *daemon;
        struct gantry_metrics *metrics;
        struct gantry_http_guard *guard; /* scrapers and probes share the port with anyone */
};

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
        (void)cls, (void)con_cls, (void)toe;
        gantry_http_guard_completed(conn);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
        struct gantry_metrics_server *s = cls;
        char *text = NULL;

        (void)version;
        (void)upload_data;
        (void)upload_data_size;
        (void)con_cls;
        gantry_http_guard_answering(conn);
        if (strcmp(method, "GET") != 0)
                return gantry_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                                         "method not allowed\n");
        if (strcmp(url, "/metrics") != 0)
                return gantry_http_reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n");
        if (gantry_metrics_render(s->metrics, &text) < 0)
                return gantry_http_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                                         "render failed\n");
        return gantry_http_reply_owned(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", text);
}

int gantry_metrics_server_start(struct gantry_metrics *m, const char *addr,
                                struct gantry_metrics_server **ret_server, int *ret_port)
{
        struct gantry_metrics_server *s;
        struct sockaddr_storage ss;
        unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
        const union MHD_DaemonInfo *info;
        int r;

        if (!m || !addr)
                return -EINVAL;
        r = gantry_netaddr_parse(addr, &ss);
        if (r < 0)
                return r;
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->metrics = m;
        r = gantry_http_guard_new(&(struct gantry_http_guard_options){ .metrics = m,
                                                                      .port = "metrics" },
                                  &s->guard);
        if (r < 0) {
                free(s);
                return r;
        }
        s->daemon = MHD_start_daemon(flags, 0, gantry_http_guard_accept, s->guard, answer, s,
                                     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
                                     MHD_OPTION_NOTIFY_CONNECTION, gantry_http_guard_notify, s->guard,
                                     MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                                     MHD_OPTION_END);
        if (!s->daemon) {
                gantry_http_guard_free(s->guard);
                free(s);
                return -EADDRNOTAVAIL;
        }
        if (ret_port) {
                info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
                *ret_port = info ? info->port : 0;
        }
        *ret_server = s;
        return 0;
}

void gantry_metrics_server_stop(struct gantry_metrics_server *s)
{
        if (!s)
                return;
        MHD_stop_daemon(s->daemon);
        gantry_http_guard_free(s->guard);
        free(s);
}
