/*
 * A no-op kube-scheduler extender: the baseline that bench_kube_sched.py
 * compares gantry-scheduler against under the real kube-scheduler. It is
 * honestly minimal: POST .../filter answers the node names it was given
 * (nodeCacheCapable bodies: NodeNames), POST .../prioritize answers a score of
 * zero for each of them, and nothing else is computed, watched or stored. It
 * does not bind (kube-scheduler binds when the entry has no bindVerb). It
 * serves the same transport as gantry-scheduler's recommended entry, so the
 * comparison is fair: libmicrohttpd with TLS, the same kind of server
 * certificate, a client CA (kube-scheduler presents its certificate during
 * the handshake) and a pool of 4 threads, gantry-scheduler's default.
 *
 * usage: noop_extender PORT CERT KEY CA
 */
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct body {
        char *data;
        size_t len;
};

static char *read_file(const char *path)
{
        FILE *f = fopen(path, "r");
        char *buf;
        long n;

        if (!f)
                return NULL;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
        }
        fclose(f);
        return buf;
}

/* filter: {"NodeNames": [...]}; prioritize: [{"Host": name, "Score": 0}...] */
static char *reply_for(const char *verb, const struct body *b)
{
        json_t *req = json_loadb(b->data ? b->data : "", b->len, 0, NULL), *names, *out, *n;
        size_t i;
        char *text;

        names = req ? json_object_get(req, "NodeNames") : NULL;
        if (!json_is_array(names))
                names = NULL;
        if (!strcmp(verb, "filter")) {
                out = json_pack("{s:O?,s:{},s:s}", "NodeNames", names, "FailedNodes", "Error", "");
        } else {
                out = json_array();
                json_array_foreach(names, i, n)
                        json_array_append_new(out, json_pack("{s:O,s:i}", "Host", n, "Score", 0));
        }
        text = out ? json_dumps(out, JSON_COMPACT) : NULL;
        json_decref(out);
        json_decref(req);
        return text;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **con_cls)
{
        struct body *b = *con_cls;
        struct MHD_Response *resp;
        const char *verb = strrchr(url, '/');
        char *text;
        enum MHD_Result ret;

        (void)cls;
        (void)version;
        if (!b) {
                *con_cls = b = calloc(1, sizeof(*b));
                return b ? MHD_YES : MHD_NO;
        }
        if (*size) {
                char *p = realloc(b->data, b->len + *size);

                if (!p)
                        return MHD_NO;
                memcpy(p + b->len, data, *size);
                b->data = p;
                b->len += *size;
                *size = 0;
                return MHD_YES;
        }
        verb = verb ? verb + 1 : url;
        if (strcmp(method, "POST") || (strcmp(verb, "filter") && strcmp(verb, "prioritize")))
                text = strdup("{\"Error\":\"not served\"}");
        else
                text = reply_for(verb, b);
        if (!text)
                return MHD_NO;
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode code)
{
        struct body *b = *con_cls;

        (void)cls;
        (void)conn;
        (void)code;
        if (b) {
                free(b->data);
                free(b);
        }
        *con_cls = NULL;
}

int main(int argc, char **argv)
{
        struct MHD_Daemon *d;
        char *cert, *key, *ca;
        sigset_t set;
        int sig;

        if (argc != 5) {
                fprintf(stderr, "usage: noop_extender PORT CERT KEY CA\n");
                return 2;
        }
        cert = read_file(argv[2]);
        key = read_file(argv[3]);
        ca = read_file(argv[4]);
        if (!cert || !key || !ca) {
                fprintf(stderr, "noop_extender: cannot read the certificate, key or CA\n");
                return 1;
        }
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG,
                             (uint16_t)atoi(argv[1]), NULL, NULL, answer, NULL,
                             MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                             MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                             MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
                             MHD_OPTION_HTTPS_MEM_TRUST, ca, MHD_OPTION_END);
        if (!d) {
                fprintf(stderr, "noop_extender: cannot serve on port %s\n", argv[1]);
                return 1;
        }
        printf("noop_extender: serving on %s\n", argv[1]);
        fflush(stdout);
        sigwait(&set, &sig);
        MHD_stop_daemon(d);
        return 0;
}
