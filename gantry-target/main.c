/*
 * gantry-target: an NVMe-oF target agent for Linux's kernel target (nvmet).
 *
 *   gantry-target --listen 0.0.0.0:8009 --lvstore gantry=/var/lib/gantry-target/gantry
 *                 [--configfs /sys/kernel/config/nvmet] [--state FILE]
 *                 --token-file FILE | --insecure-no-auth
 *                 [--tls-cert PEM --tls-key PEM] [--log-level LEVEL]
 *
 * The JSON-RPC creates, exports and deletes volumes and sets the hosts'
 * DH-HMAC-CHAP keys, so the agent refuses to start without a bearer token
 * unless --insecure-no-auth says, in the command line, that anyone who
 * reaches the port may do all of that.
 *
 * At start it reads its state file and applies it to configfs again (after a
 * reboot configfs is empty), then serves JSON-RPC until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attr_file.h"
#include "log.h"
#include "target_internal.h"

#ifndef GANTRY_VERSION
#define GANTRY_VERSION "dev"
#endif

#define SMALL_FILE_MAX 65536 /* a token, certificate or key */

static void usage(FILE *f)
{
        fprintf(f,
                "usage: gantry-target --lvstore NAME=DIR [--lvstore ...] [options]\n"
                "  --listen HOST:PORT     JSON-RPC over HTTP(S) (default 127.0.0.1:8009)\n"
                "  --configfs DIR         nvmet's configfs root (default /sys/kernel/config/nvmet)\n"
                "  --state FILE           desired state, re-applied at start\n"
                "                         (default /var/lib/gantry-target/state.json)\n"
                "  --lvstore NAME=DIR     a logical volume store: backing files live in DIR\n"
                "  --token-file FILE      require \"Authorization: Bearer <contents>\" (required\n"
                "                         unless --insecure-no-auth)\n"
                "  --insecure-no-auth     serve the JSON-RPC to anyone who reaches it: any client\n"
                "                         can then create, export, read or delete every volume\n"
                "                         and set hosts' keys (tests and demos only)\n"
                "  --tls-cert FILE        serve HTTPS with this PEM certificate ...\n"
                "  --tls-key FILE         ... and this PEM key\n"
                "  --metrics-addr H:P     serve Prometheus metrics (drains, restores) at http://H:P/metrics\n"
                "  --durable FILE         the Ceph cluster checkpoint snapshots drain into (JSON;\n"
                "                         docs/targets.md)\n"
                "  --max-connections N    JSON-RPC connections at once (default 64)\n"
                "  --max-per-source N     of those, from one address (default 16)\n"
                "  --request-timeout S    a request must be whole S seconds after accept or the\n"
                "                         answer before, a byte a second or none (default 10)\n"
                "  --log-level LEVEL      debug, info, warn, error (default info)\n"
                "  --version, --help\n");
}

/* Reads a token or PEM file (at most SMALL_FILE_MAX bytes) without its trailing newline. */
static int read_small_file(const char *path, char **ret)
{
        char *buf = malloc(SMALL_FILE_MAX + 1);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        n = gantry_attr_read(path, buf, SMALL_FILE_MAX + 1);
        if (n <= 0) {
                free(buf);
                return n < 0 ? (int)n : -EINVAL;
        }
        *ret = buf;
        return 0;
}

/* A stable UUID-shaped id for an lvstore, from its name (FNV-1a, two seeds). */
static void lvstore_uuid(const char *name, char out[37])
{
        uint64_t a = 1469598103934665603ULL, b = 1099511628211ULL * 7;

        for (const char *c = name; *c; c++) {
                a = (a ^ (unsigned char)*c) * 1099511628211ULL;
                b = (b ^ (unsigned char)*c) * 1099511628211ULL + 0x9e3779b97f4a7c15ULL;
        }
        snprintf(out, 37, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(a >> 32),
                 (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 52) & 0xfff,
                 (unsigned long long)(b & 0xffffffffffffULL));
}

static int add_lvstore(struct tgt_context *ctx, const char *arg)
{
        const char *eq = strchr(arg, '=');
        struct tgt_lvstore *l;
        size_t n;

        if (!eq || ctx->n_lvstores == TGT_MAX_LVSTORES)
                return -EINVAL;
        n = (size_t)(eq - arg);
        if (n == 0 || n > TGT_NAME_MAX || eq[1] != '/')
                return -EINVAL;
        l = &ctx->lvstores[ctx->n_lvstores];
        memcpy(l->name, arg, n);
        l->name[n] = '\0';
        for (char *c = l->name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '-' || *c == '_' || *c == '.'))
                        return -EINVAL;
        if (tgt_lvstore_find(ctx, l->name))
                return -EEXIST;
        l->dir = strdup(eq + 1);
        if (!l->dir)
                return -ENOMEM;
        if (mkdir(l->dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        lvstore_uuid(l->name, l->uuid);
        ctx->n_lvstores++;
        return 0;
}

/* Creates the state file's directory (one level) when it is missing. */
static int ensure_state_dir(const char *state_path)
{
        char dir[4096];
        char *slash;

        snprintf(dir, sizeof(dir), "%s", state_path);
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "listen", required_argument, NULL, 'l' },  { "configfs", required_argument, NULL, 'c' },
                { "state", required_argument, NULL, 's' },   { "lvstore", required_argument, NULL, 'v' },
                { "token-file", required_argument, NULL, 't' }, { "tls-cert", required_argument, NULL, 'C' },
                { "tls-key", required_argument, NULL, 'K' }, { "log-level", required_argument, NULL, 'L' },
                { "durable", required_argument, NULL, 'D' },
                { "metrics-addr", required_argument, NULL, 'M' },
                { "insecure-no-auth", no_argument, NULL, 'I' },
                { "max-connections", required_argument, NULL, 'N' },
                { "max-per-source", required_argument, NULL, 'P' },
                { "request-timeout", required_argument, NULL, 'R' },
                { "version", no_argument, NULL, 'V' },       { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct tgt_context ctx = { 0 };
        struct tgt_server_options so = { .listen = "127.0.0.1:8009" };
        const char *token_file = NULL, *cert_file = NULL, *key_file = NULL, *durable_file = NULL,
                   *metrics_addr = NULL;
        struct gantry_metrics_server *metrics_server = NULL;
        char *token = NULL, *cert = NULL, *key = NULL;
        struct gantry_error err = { 0 };
        struct tgt_server *server = NULL;
        enum gantry_log_level level;
        struct stat st;
        sigset_t set;
        int c, r, sig, port = 0, rc = 1;
        bool insecure = false;

        /* SIGTERM and SIGINT wait for sigwait() from the start: one that comes
         * while the state is re-applied (or a drain's Ceph connect is in
         * progress: given up at stop) still ends in the clean stop; no thread
         * started later takes them */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        signal(SIGPIPE, SIG_IGN);
        ctx.configfs = "/sys/kernel/config/nvmet";
        ctx.state_path = "/var/lib/gantry-target/state.json";
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'l': so.listen = optarg; break;
                case 'c': ctx.configfs = optarg; break;
                case 's': ctx.state_path = optarg; break;
                case 'v':
                        if ((r = add_lvstore(&ctx, optarg)) < 0) {
                                fprintf(stderr, "gantry-target: --lvstore %s: %s (want NAME=/DIR, "
                                        "NAME of [A-Za-z0-9._-], unique)\n", optarg, strerror(-r));
                                return 2;
                        }
                        break;
                case 't': token_file = optarg; break;
                case 'I': insecure = true; break;
                case 'N':
                case 'P':
                case 'R': {
                        char *end;
                        double v;

                        errno = 0;
                        v = strtod(optarg, &end);
                        if (errno || end == optarg || *end || v < (c == 'R' ? 0.1 : 1) || v > 65536) {
                                fprintf(stderr, "gantry-target: --%s: must be a number from %s to 65536\n",
                                        c == 'N' ? "max-connections" : c == 'P' ? "max-per-source"
                                                                             : "request-timeout",
                                        c == 'R' ? "0.1" : "1");
                                return 2;
                        }
                        if (c == 'N')
                                so.max_connections = (unsigned int)v;
                        else if (c == 'P')
                                so.max_per_source = (unsigned int)v;
                        else
                                so.request_budget_s = v;
                        break;
                }
                case 'D': durable_file = optarg; break;
                case 'M': metrics_addr = optarg; break;
                case 'C': cert_file = optarg; break;
                case 'K': key_file = optarg; break;
                case 'L':
                        if (gantry_log_level_parse(optarg, &level) < 0) {
                                fprintf(stderr, "gantry-target: --log-level: unknown level %s\n", optarg);
                                return 2;
                        }
                        gantry_log_set_level(level);
                        break;
                case 'V': printf("gantry-target %s\n", GANTRY_VERSION); return 0;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc || !cert_file != !key_file) {
                usage(stderr);
                return 2;
        }
        if (!token_file && !insecure) {
                fprintf(stderr, "gantry-target: refusing to serve the JSON-RPC without authentication: "
                        "give --token-file FILE (the bearer token gantry-csi sends), or "
                        "--insecure-no-auth to let anyone who reaches the port manage every volume\n");
                rc = 2;
                goto out;
        }
        if (token_file && insecure) {
                fprintf(stderr, "gantry-target: --token-file and --insecure-no-auth contradict each other\n");
                rc = 2;
                goto out;
        }
        if (insecure)
                log_warn("target.insecure_no_auth", "note=\"JSON-RPC open to anyone who reaches the port: "
                         "any client can create, export, read or delete every volume\"");
        if ((token_file && (r = read_small_file(token_file, &token)) < 0) ||
            (cert_file && (r = read_small_file(cert_file, &cert)) < 0) ||
            (key_file && (r = read_small_file(key_file, &key)) < 0)) {
                fprintf(stderr, "gantry-target: reading --token-file/--tls-cert/--tls-key: %s\n",
                        strerror(-r));
                goto out;
        }
        if (stat(ctx.configfs, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "gantry-target: --configfs %s: not a directory (is the nvmet "
                        "module loaded and configfs mounted?)\n", ctx.configfs);
                goto out;
        }
        if (ensure_state_dir(ctx.state_path) < 0) {
                fprintf(stderr, "gantry-target: --state %s: cannot create its directory: %s\n",
                        ctx.state_path, strerror(errno));
                goto out;
        }
        ctx.configfs_real = tgt_nvmet_is_configfs(ctx.configfs);
        if (!ctx.configfs_real)
                log_warn("target.configfs_standin", "root=%s note=not_configfs_no_kernel_target",
                         ctx.configfs);
        ctx.dhchap_supported = tgt_nvmet_dhchap_probe(&ctx);
        if (!ctx.dhchap_supported)
                log_warn("target.dhchap_unsupported", "configfs=%s note=\"kernel target without "
                         "DH-HMAC-CHAP (CONFIG_NVME_TARGET_AUTH): hosts with a key are refused; only "
                         "auth: none volumes can be exported\"", ctx.configfs);
        if (durable_file && (r = tgt_durable_load(durable_file, &ctx.durable, &err)) < 0) {
                fprintf(stderr, "gantry-target: --durable %s\n", err.msg);
                goto out;
        }
        if ((r = tgt_state_load(&ctx, &err)) < 0 || (r = tgt_state_drop_unfinished(&ctx, &err)) < 0 ||
            (r = tgt_rpc_reapply(&ctx, &err)) < 0) {
                fprintf(stderr, "gantry-target: %s\n", err.msg);
                goto out;
        }
        so.token = token;
        so.tls_cert = cert;
        so.tls_key = key;
        if (metrics_addr) {
                int mport = 0;
                ctx.metrics = gantry_metrics_new();
                if (!ctx.metrics ||
                    (r = gantry_metrics_server_start(ctx.metrics, metrics_addr, &metrics_server, &mport)) < 0) {
                        fprintf(stderr, "gantry-target: --metrics-addr %s: cannot serve\n", metrics_addr);
                        goto out;
                }
                log_info("target.metrics_listening", "port=%d", mport);
        }
        if ((r = tgt_drainer_start(&ctx, &err)) < 0 || (r = tgt_server_start(&ctx, &so, &server, &port, &err)) < 0) {
                fprintf(stderr, "gantry-target: %s\n", err.msg);
                goto out;
        }
        if (ctx.metrics)
                gantry_metrics_gauge_set(ctx.metrics, "gantry_target_dhchap_supported",
                                         "Whether the kernel target can authenticate hosts with DH-HMAC-CHAP", NULL,
                                         ctx.dhchap_supported ? 1 : 0);
        log_info("target.listening", "port=%d tls=%d auth=%s dhchap=%d lvstores=%zu state=%s durable=%s", port,
                 cert != NULL, token ? "bearer" : "none", ctx.dhchap_supported, ctx.n_lvstores, ctx.state_path,
                 ctx.durable ? ctx.durable->cluster_id : "none");
        do
                r = sigwait(&set, &sig);
        while (r != 0);
        log_info("target.stopping", "signal=%d", sig);
        rc = 0;
out:
        tgt_server_stop(server);
        tgt_drainer_stop(&ctx);
        gantry_metrics_server_stop(metrics_server);
        gantry_metrics_free(ctx.metrics);
        if (ctx.durable)
                explicit_bzero(ctx.durable->key, strlen(ctx.durable->key));
        tgt_durable_free(ctx.durable);
        if (token)
                explicit_bzero(token, strlen(token));
        free(token);
        free(cert);
        if (key)
                explicit_bzero(key, strlen(key));
        free(key);
        for (size_t i = 0; i < ctx.n_lvstores; i++)
                free(ctx.lvstores[i].dir);
        json_decref(ctx.state);
        return rc;
}
