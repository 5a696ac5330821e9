/*
 * Where the API server is and how to authenticate: the kubeconfig file
 * (YAML as kubectl writes it, parsed with libyaml's document loader) or the
 * in-cluster config (service-account files + KUBERNETES_SERVICE_HOST/PORT).
 *
 * Both end in a struct kube_conn that kube_http.c turns into libcurl
 * options. Every file the config names is read here, at start, so a missing
 * CA or key is reported before any request; errors name the source and the
 * field ("kubeconfig F: users[0].user.client-key: no such file"). Token,
 * password and key bytes are never copied into an error or a log line, and
 * are wiped when freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "attr_file.h"
#include "base64.h"
#include "kube_internal.h"

/* ------------------------------------------------------------------ files */

void kube_blob_clear(struct kube_blob *blob)
{
        if (!blob->data)
                return;
        explicit_bzero(blob->data, blob->len);
        free(blob->data);
        blob->data = NULL;
        blob->len = 0;
}

int kube_read_file(const char *path, struct kube_blob *ret_blob)
{
        char *data;
        size_t len;
        int r = gantry_file_read(path, KUBE_CONFIG_MAX_BYTES, &data, &len);

        if (r < 0)
                return r;
        ret_blob->data = (unsigned char *)data;
        ret_blob->len = len;
        return 0;
}

int kube_base64_decode(const char *in, size_t len, struct kube_blob *ret_blob)
{
        size_t size = len / 4 * 3 + 4, n;
        unsigned char *out = malloc(size);
        int r;

        if (!out)
                return -ENOMEM;
        r = gantry_base64_decode(in, len, out, size - 1, &n);
        if (r < 0) {
                free(out);
                return r;
        }
        out[n] = '\0';
        ret_blob->data = out;
        ret_blob->len = n;
        return 0;
}

static void free_secret(char *s)
{
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

void kube_conn_free(struct kube_conn *conn)
{
        if (!conn)
                return;
        free(conn->origin);
        free(conn->server);
        free(conn->namespace);
        free(conn->tls_server_name);
        free(conn->proxy_url);
        kube_blob_clear(&conn->ca);
        kube_blob_clear(&conn->cert);
        kube_blob_clear(&conn->key);
        free_secret(conn->token);
        free(conn->token_file);
        free(conn->username);
        free_secret(conn->password);
        free(conn);
}

/* Drops trailing whitespace (token files usually end in a newline). */
static void trim_right(char *s)
{
        size_t n = strlen(s);

        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
                s[--n] = '\0';
}

static int check_server_url(const char *url)
{
        const char *host;

        if (strncmp(url, "https://", 8) == 0)
                host = url + 8;
        else if (strncmp(url, "http://", 7) == 0)
                host = url + 7;
        else
                return -EINVAL;
        if (*host == '\0' || *host == '/')
                return -EINVAL;
        for (const char *p = url; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
                        return -EINVAL;
        return 0;
}

/* ------------------------------------------------------------- kubeconfig */

struct kc {
        yaml_document_t doc;
        const char *origin;
        const char *base_dir;
        struct gantry_error *err;
};

static yaml_node_t *node_at(struct kc *kc, int index)
{
        return yaml_document_get_node(&kc->doc, index);
}

/* The value under @key in mapping @map, or NULL. */
static yaml_node_t *map_get(struct kc *kc, yaml_node_t *map, const char *key)
{
        if (!map || map->type != YAML_MAPPING_NODE)
                return NULL;
        for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
                yaml_node_t *k = node_at(kc, p->key);

                if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
                    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
                        return node_at(kc, p->value);
        }
        return NULL;
}

static int field_error(struct kc *kc, int errnum, const char *field, const char *problem)
{
        return gantry_error_set(kc->err, errnum, "%s: %s: %s", kc->origin, field, problem);
}

/*
 * The string at @key of @map into *ret (borrowed from the document; NULL
 * when absent or null). A non-scalar or a string with a NUL is an error.
 */
static int get_str(struct kc *kc, yaml_node_t *map, const char *key, const char *field,
                   const char **ret)
{
        yaml_node_t *n = map_get(kc, map, key);

        *ret = NULL;
        if (!n)
                return 0;
        if (n->type != YAML_SCALAR_NODE)
                return field_error(kc, EINVAL, field, "must be a string");
        if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
                return field_error(kc, EINVAL, field, "contains a NUL byte");
        /* a plain "null" or "~" is YAML's null, as kubectl reads it */
        if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            (strcmp((const char *)n->data.scalar.value, "null") == 0 ||
             strcmp((const char *)n->data.scalar.value, "~") == 0 || n->data.scalar.length == 0))
                return 0;
        *ret = (const char *)n->data.scalar.value;
        return 0;
}

static int get_bool(struct kc *kc, yaml_node_t *map, const char *key, const char *field, bool *ret)
{
        const char *s;
        int r = get_str(kc, map, key, field, &s);

        *ret = false;
        if (r < 0 || !s)
                return r;
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
                *ret = true;
        else if (strcmp(s, "false") && strcmp(s, "False") && strcmp(s, "FALSE"))
                return field_error(kc, EINVAL, field, "must be true or false");
        return 0;
}

/*
 * Finds the entry named @name in the sequence at top-level @list
 * ("clusters", "users", "contexts") and returns its @inner mapping
 * ("cluster", ...) and its index for error messages.
 */
static int find_named(struct kc *kc, const char *list, const char *inner, const char *name,
                      yaml_node_t **ret_inner, int *ret_index)
{
        yaml_node_t *seq = map_get(kc, yaml_document_get_root_node(&kc->doc), list);
        char field[96];
        int i = 0;

        if (!seq || seq->type != YAML_SEQUENCE_NODE) {
                snprintf(field, sizeof(field), "%s", list);
                return field_error(kc, EINVAL, field, seq ? "must be a list" : "missing");
        }
        for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
             it++, i++) {
                yaml_node_t *entry = node_at(kc, *it);
                const char *n;
                int r;

                snprintf(field, sizeof(field), "%s[%d].name", list, i);
                r = get_str(kc, entry, "name", field, &n);
                if (r < 0)
                        return r;
                if (!n || strcmp(n, name) != 0)
                        continue;
                *ret_inner = map_get(kc, entry, inner);
                if (!*ret_inner || (*ret_inner)->type != YAML_MAPPING_NODE) {
                        snprintf(field, sizeof(field), "%s[%d].%s", list, i, inner);
                        return field_error(kc, EINVAL, field, "missing or not a mapping");
                }
                *ret_index = i;
                return 0;
        }
        snprintf(field, sizeof(field), "%s", list);
        return gantry_error_set(kc->err, ENOENT, "%s: %s: no entry named \"%.64s\"", kc->origin,
                                field, name);
}

/* @path made absolute against the kubeconfig's folder; malloc'd. */
static char *resolve_path(struct kc *kc, const char *path)
{
        char *out;

        if (path[0] == '/' || !kc->base_dir)
                return strdup(path);
        if (asprintf(&out, "%s/%s", kc->base_dir, path) < 0)
                return NULL;
        return out;
}

/*
 * Loads a PEM either from "<key>-data" (base64) or from the file at <key>,
 * into @blob. The -data form wins, as in client-go.
 */
static int load_pem(struct kc *kc, yaml_node_t *map, const char *prefix, const char *key,
                    struct kube_blob *blob)
{
        char field[128], data_key[64];
        const char *data, *file;
        char *path;
        int r;

        snprintf(data_key, sizeof(data_key), "%s-data", key);
        snprintf(field, sizeof(field), "%s.%s", prefix, data_key);
        r = get_str(kc, map, data_key, field, &data);
        if (r < 0)
                return r;
        if (data) {
                r = kube_base64_decode(data, strlen(data), blob);
                if (r == -ENOMEM)
                        return gantry_error_set(kc->err, ENOMEM, "out of memory");
                if (r < 0 || blob->len == 0) {
                        kube_blob_clear(blob);
                        return field_error(kc, EINVAL, field, "invalid base64");
                }
                return 0;
        }
        snprintf(field, sizeof(field), "%s.%s", prefix, key);
        r = get_str(kc, map, key, field, &file);
        if (r < 0 || !file)
                return r;
        path = resolve_path(kc, file);
        if (!path)
                return gantry_error_set(kc->err, ENOMEM, "out of memory");
        r = kube_read_file(path, blob);
        if (r < 0) {
                gantry_error_set(kc->err, r, "%s: %s: %s: %s", kc->origin, field, path, strerror(-r));
                free(path);
                return r;
        }
        free(path);
        if (blob->len == 0) {
                kube_blob_clear(blob);
                return field_error(kc, EINVAL, field, "the file is empty");
        }
        return 0;
}

static int dup_or_oom(struct kc *kc, const char *s, char **ret)
{
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : gantry_error_set(kc->err, ENOMEM, "out of memory");
}

static int load_cluster(struct kc *kc, const char *name, struct kube_conn *conn)
{
        yaml_node_t *cl;
        const char *server, *tls_name, *proxy;
        char prefix[64], field[96];
        int i, r;

        r = find_named(kc, "clusters", "cluster", name, &cl, &i);
        if (r < 0)
                return r;
        snprintf(prefix, sizeof(prefix), "clusters[%d].cluster", i);
        snprintf(field, sizeof(field), "%s.server", prefix);
        r = get_str(kc, cl, "server", field, &server);
        if (r < 0)
                return r;
        if (!server)
                return field_error(kc, EINVAL, field, "missing");
        if (check_server_url(server) < 0)
                return field_error(kc, EINVAL, field, "must be an http:// or https:// URL");
        r = dup_or_oom(kc, server, &conn->server);
        if (r < 0)
                return r;
        while (conn->server[strlen(conn->server) - 1] == '/')
                conn->server[strlen(conn->server) - 1] = '\0';

        snprintf(field, sizeof(field), "%s.insecure-skip-tls-verify", prefix);
        r = get_bool(kc, cl, "insecure-skip-tls-verify", field, &conn->insecure);
        if (r < 0)
                return r;
        snprintf(field, sizeof(field), "%s.tls-server-name", prefix);
        r = get_str(kc, cl, "tls-server-name", field, &tls_name);
        if (r < 0 || (r = dup_or_oom(kc, tls_name, &conn->tls_server_name)) < 0)
                return r;
        snprintf(field, sizeof(field), "%s.proxy-url", prefix);
        r = get_str(kc, cl, "proxy-url", field, &proxy);
        if (r < 0)
                return r;
        if (proxy && strncmp(proxy, "http://", 7) && strncmp(proxy, "https://", 8) &&
            strncmp(proxy, "socks5://", 9))
                return field_error(kc, EINVAL, field, "must be an http://, https:// or socks5:// URL");
        if ((r = dup_or_oom(kc, proxy, &conn->proxy_url)) < 0)
                return r;
        r = load_pem(kc, cl, prefix, "certificate-authority", &conn->ca);
        if (r < 0)
                return r;
        if (conn->insecure && conn->ca.len > 0) {
                snprintf(field, sizeof(field), "%s.insecure-skip-tls-verify", prefix);
                return field_error(kc, EINVAL, field,
                                   "must not be true when a certificate-authority is given");
        }
        return 0;
}

static int load_user(struct kc *kc, const char *name, struct kube_conn *conn)
{
        const char *token, *token_file, *username, *password;
        char prefix[64], field[96];
        yaml_node_t *u;
        int i, r;

        r = find_named(kc, "users", "user", name, &u, &i);
        if (r < 0)
                return r;
        snprintf(prefix, sizeof(prefix), "users[%d].user", i);
        /* Credential plugins run programs: not something a scheduler does. */
        if (map_get(kc, u, "exec")) {
                snprintf(field, sizeof(field), "%s.exec", prefix);
                return field_error(kc, ENOTSUP, field,
                                   "credential plugins are not supported; use a token or a client certificate");
        }
        if (map_get(kc, u, "auth-provider")) {
                snprintf(field, sizeof(field), "%s.auth-provider", prefix);
                return field_error(kc, ENOTSUP, field, "auth providers are not supported");
        }
        r = load_pem(kc, u, prefix, "client-certificate", &conn->cert);
        if (r < 0)
                return r;
        r = load_pem(kc, u, prefix, "client-key", &conn->key);
        if (r < 0)
                return r;
        if ((conn->cert.len > 0) != (conn->key.len > 0)) {
                snprintf(field, sizeof(field), "%s.%s", prefix,
                         conn->cert.len ? "client-key" : "client-certificate");
                return field_error(kc, EINVAL, field, "missing (a client certificate needs its key)");
        }

        snprintf(field, sizeof(field), "%s.token", prefix);
        r = get_str(kc, u, "token", field, &token);
        if (r < 0)
                return r;
        /* it goes into an HTTP header: no CR/LF or other control bytes */
        for (const char *p = token; p && *p; p++)
                if ((unsigned char)*p < ' ' || *p == 0x7f)
                        return field_error(kc, EINVAL, field, "contains a control character");
        r = dup_or_oom(kc, token, &conn->token);
        if (r < 0)
                return r;
        snprintf(field, sizeof(field), "%s.tokenFile", prefix);
        r = get_str(kc, u, "tokenFile", field, &token_file);
        if (r < 0)
                return r;
        if (token_file && !token) {
                struct kube_blob b = { 0 };

                conn->token_file = resolve_path(kc, token_file);
                if (!conn->token_file)
                        return gantry_error_set(kc->err, ENOMEM, "out of memory");
                r = kube_read_file(conn->token_file, &b);
                if (r < 0)
                        return gantry_error_set(kc->err, r, "%s: %s: %s: %s", kc->origin, field,
                                                conn->token_file, strerror(-r));
                kube_blob_clear(&b);
        }
        snprintf(field, sizeof(field), "%s.username", prefix);
        r = get_str(kc, u, "username", field, &username);
        if (r < 0 || (r = dup_or_oom(kc, username, &conn->username)) < 0)
                return r;
        snprintf(field, sizeof(field), "%s.password", prefix);
        r = get_str(kc, u, "password", field, &password);
        if (r < 0 || (r = dup_or_oom(kc, password, &conn->password)) < 0)
                return r;
        if (conn->username && !conn->password) {
                snprintf(field, sizeof(field), "%s.password", prefix);
                return field_error(kc, EINVAL, field, "missing (username given)");
        }
        return 0;
}

int kube_conn_from_kubeconfig(const char *yaml, size_t len, const char *origin,
                              const char *base_dir, const char *context,
                              struct kube_conn **ret_conn, struct gantry_error *err)
{
        struct kc kc = { .origin = origin, .base_dir = base_dir, .err = err };
        const char *ctx_name = context, *cluster, *user, *ns;
        yaml_parser_t parser;
        struct kube_conn *conn = NULL;
        yaml_node_t *root, *ctx;
        char prefix[64], field[96];
        int i, r;

        if (len > KUBE_CONFIG_MAX_BYTES)
                return gantry_error_set(err, EFBIG, "%s: larger than %d bytes", origin,
                                        KUBE_CONFIG_MAX_BYTES);
        if (!yaml_parser_initialize(&parser))
                return gantry_error_set(err, ENOMEM, "out of memory");
        yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
        if (!yaml_parser_load(&parser, &kc.doc)) {
                r = gantry_error_set(err, EINVAL, "%s: invalid YAML at line %zu: %s", origin,
                                     parser.problem_mark.line + 1,
                                     parser.problem ? parser.problem : "parse error");
                yaml_parser_delete(&parser);
                return r;
        }
        yaml_parser_delete(&parser);

        root = yaml_document_get_root_node(&kc.doc);
        if (!root || root->type != YAML_MAPPING_NODE) {
                r = gantry_error_set(err, EINVAL, "%s: not a kubeconfig (the top level must be a mapping)",
                                     origin);
                goto out;
        }
        if (!ctx_name || !*ctx_name) {
                r = get_str(&kc, root, "current-context", "current-context", &ctx_name);
                if (r < 0)
                        goto out;
                if (!ctx_name) {
                        r = field_error(&kc, EINVAL, "current-context", "not set (and no context given)");
                        goto out;
                }
        }
        r = find_named(&kc, "contexts", "context", ctx_name, &ctx, &i);
        if (r < 0)
                goto out;
        snprintf(prefix, sizeof(prefix), "contexts[%d].context", i);

        conn = calloc(1, sizeof(*conn));
        if (!conn || asprintf(&conn->origin, "%s context %s", origin, ctx_name) < 0) {
                if (conn)
                        conn->origin = NULL;
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        snprintf(field, sizeof(field), "%s.cluster", prefix);
        r = get_str(&kc, ctx, "cluster", field, &cluster);
        if (r < 0)
                goto out;
        if (!cluster) {
                r = field_error(&kc, EINVAL, field, "missing");
                goto out;
        }
        snprintf(field, sizeof(field), "%s.user", prefix);
        r = get_str(&kc, ctx, "user", field, &user);
        if (r < 0)
                goto out;
        snprintf(field, sizeof(field), "%s.namespace", prefix);
        r = get_str(&kc, ctx, "namespace", field, &ns);
        if (r < 0)
                goto out;
        r = dup_or_oom(&kc, ns ? ns : "default", &conn->namespace);
        if (r < 0)
                goto out;
        r = load_cluster(&kc, cluster, conn);
        if (r < 0)
                goto out;
        if (user) { /* a context without a user is anonymous access */
                r = load_user(&kc, user, conn);
                if (r < 0)
                        goto out;
        }
        *ret_conn = conn;
        conn = NULL;
        r = 0;
out:
        kube_conn_free(conn);
        yaml_document_delete(&kc.doc);
        return r;
}

int kube_conn_from_kubeconfig_file(const char *path, const char *context,
                                   struct kube_conn **ret_conn, struct gantry_error *err)
{
        struct kube_blob b = { 0 };
        char *copy, *dir, origin[600];
        int r;

        snprintf(origin, sizeof(origin), "kubeconfig %.512s", path);
        r = kube_read_file(path, &b);
        if (r < 0)
                return gantry_error_set(err, r, "%s: %s", origin, strerror(-r));
        copy = strdup(path);
        if (!copy) {
                kube_blob_clear(&b);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        dir = dirname(copy);
        r = kube_conn_from_kubeconfig((const char *)b.data, b.len, origin, dir, context, ret_conn, err);
        free(copy);
        kube_blob_clear(&b);
        return r;
}

/* -------------------------------------------------------------- in-cluster */

int kube_conn_in_cluster(const char *sa_dir, struct kube_conn **ret_conn, struct gantry_error *err)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        struct kube_conn *conn;
        struct kube_blob b = { 0 };
        char *path = NULL, *end;
        long p;
        int r;

        if (!sa_dir || !*sa_dir)
                sa_dir = KUBE_DEFAULT_SA_DIR;
        if (!host || !*host)
                return gantry_error_set(err, EINVAL, "in-cluster: KUBERNETES_SERVICE_HOST: not set (not running in a pod? use --kubeconfig)");
        if (!port || !*port)
                return gantry_error_set(err, EINVAL, "in-cluster: KUBERNETES_SERVICE_PORT: not set");
        errno = 0;
        p = strtol(port, &end, 10);
        if (errno || *end || p < 1 || p > 65535)
                return gantry_error_set(err, EINVAL, "in-cluster: KUBERNETES_SERVICE_PORT: not a port number");
        for (const char *c = host; *c; c++)
                if ((unsigned char)*c <= ' ' || strchr("/?#@[]", *c))
                        return gantry_error_set(err, EINVAL, "in-cluster: KUBERNETES_SERVICE_HOST: not a host name or address");

        conn = calloc(1, sizeof(*conn));
        if (!conn)
                return gantry_error_set(err, ENOMEM, "out of memory");
        /* an IPv6 address goes in brackets in a URL */
        if (asprintf(&conn->server, strchr(host, ':') ? "https://[%s]:%ld" : "https://%s:%ld", host, p) < 0 ||
            !(conn->origin = strdup("in-cluster"))) {
                conn->server = NULL;
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        if (asprintf(&conn->token_file, "%s/token", sa_dir) < 0) {
                conn->token_file = NULL;
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        r = kube_read_file(conn->token_file, &b);
        if (r == 0 && b.len == 0)
                r = -EINVAL;
        kube_blob_clear(&b);
        if (r < 0) {
                r = gantry_error_set(err, r, "in-cluster: token file %s: %s", conn->token_file,
                                     r == -EINVAL ? "empty or not a file" : strerror(-r));
                goto fail;
        }
        if (asprintf(&path, "%s/ca.crt", sa_dir) < 0) {
                path = NULL;
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        r = kube_read_file(path, &conn->ca);
        if (r == 0 && conn->ca.len == 0)
                r = -EINVAL;
        if (r < 0) {
                r = gantry_error_set(err, r, "in-cluster: CA file %s: %s", path,
                                     r == -EINVAL ? "empty or not a file" : strerror(-r));
                goto fail;
        }
        free(path);
        if (asprintf(&path, "%s/namespace", sa_dir) < 0) {
                path = NULL;
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        if (kube_read_file(path, &b) == 0 && b.len > 0) {
                trim_right((char *)b.data);
                conn->namespace = strdup((char *)b.data);
        } else {
                conn->namespace = strdup("default");
        }
        kube_blob_clear(&b);
        if (!conn->namespace) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        free(path);
        *ret_conn = conn;
        return 0;
fail:
        free(path);
        kube_conn_free(conn);
        return r;
}
