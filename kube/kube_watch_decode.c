/*
 * Decoding a watch stream: the API server writes one JSON object per line,
 * {"type":"ADDED","object":{...}}, in HTTP chunks that need not align with
 * lines. kube_lines_feed() splits the bytes as they arrive, keeping at most
 * a bounded unfinished line; kube_watch_decode() checks one event's shape.
 * These are the parsers of untrusted bytes (tests/fuzz/fuzz_kube_parse.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

void kube_lines_init(struct kube_lines *l, size_t max)
{
        memset(l, 0, sizeof(*l));
        l->b.max = max;
}

void kube_lines_clear(struct kube_lines *l)
{
        free(l->b.data);
        memset(&l->b, 0, sizeof(l->b));
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t len,
                    int (*fn)(void *ctx, char *line, size_t n), void *ctx)
{
        struct gantry_buf *b = &l->b;

        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                size_t n = nl ? (size_t)(nl - data) : len;
                int r = gantry_buf_append(b, data, n);

                if (r < 0)
                        return r;
                if (!nl)
                        return 0;
                data += n + 1;
                len -= n + 1;
                /* a '\r' before the '\n' and blank lines carry nothing */
                if (b->len > 0 && b->data[b->len - 1] == '\r')
                        b->data[--b->len] = '\0';
                if (b->len > 0) {
                        size_t line_len = b->len;

                        b->len = 0; /* the next line starts afresh */
                        r = fn(ctx, b->data, line_len);
                        if (r != 0)
                                return r;
                }
        }
        return 0;
}

const char *kube_object_resource_version(const json_t *obj)
{
        return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

int kube_object_key(const json_t *obj, char *buf, size_t size)
{
        const json_t *meta = json_object_get(obj, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        int n;

        if (!name || !*name)
                return -EBADMSG;
        n = ns && *ns ? snprintf(buf, size, "%s/%s", ns, name) : snprintf(buf, size, "%s", name);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static const char *const type_names[] = {
        [KUBE_WATCH_ADDED] = "ADDED",       [KUBE_WATCH_MODIFIED] = "MODIFIED",
        [KUBE_WATCH_DELETED] = "DELETED",   [KUBE_WATCH_BOOKMARK] = "BOOKMARK",
        [KUBE_WATCH_ERROR] = "ERROR",
};

int kube_watch_decode(const char *line, size_t len, struct kube_watch_event *ret_ev,
                      struct gantry_error *err)
{
        const char *type, *rv, *problem = NULL;
        json_error_t jerr;
        json_t *root, *obj;
        char key[320];
        long code = 0;
        int t = -1;

        root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return gantry_error_set(err, EBADMSG, "watch event: invalid JSON at column %d: %s",
                                        jerr.column, jerr.text);
        type = json_string_value(json_object_get(root, "type"));
        obj = json_object_get(root, "object");
        if (!type) {
                problem = "type: missing or not a string";
                goto bad;
        }
        for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
                if (strcmp(type, type_names[i]) == 0)
                        t = (int)i;
        if (t < 0) {
                /* the message is set while @type still lives in @root */
                gantry_error_set(err, EBADMSG, "watch event: type: unknown \"%.32s\"", type);
                json_decref(root);
                return -EBADMSG;
        }
        if (!json_is_object(obj)) {
                problem = "object: missing or not an object";
                goto bad;
        }
        rv = kube_object_resource_version(obj);
        if (t == KUBE_WATCH_ERROR) {
                /* a Status: {"kind":"Status","code":410,"reason":"Expired",...} */
                json_int_t c = json_integer_value(json_object_get(obj, "code"));

                code = c > 0 && c < 1000 ? (long)c : 500;
        } else if (!rv || !*rv) {
                problem = "object.metadata.resourceVersion: missing";
                goto bad;
        } else if (t != KUBE_WATCH_BOOKMARK && kube_object_key(obj, key, sizeof(key)) < 0) {
                /* a BOOKMARK carries only the resourceVersion, no name */
                problem = "object.metadata.name: missing or too long";
                goto bad;
        }
        ret_ev->type = (enum kube_watch_type)t;
        ret_ev->code = code;
        ret_ev->object = json_incref(obj);
        ret_ev->resource_version = rv; /* lives in ret_ev->object */
        json_decref(root);
        return 0;
bad:
        json_decref(root);
        return gantry_error_set(err, EBADMSG, "watch event: %s", problem);
}
