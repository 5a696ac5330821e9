/*
 * Request bodies and replies for the libmicrohttpd servers; see
 * http_body.h. libmicrohttpd hands the access handler a body in pieces of
 * whatever size arrived, then calls it once more with none: we append each
 * piece to one buffer that grows geometrically up to the limit, and note
 * (without storing) whatever goes past it, so the handler answers 413 once
 * instead of the connection being dropped mid-upload.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "http_body.h"

int gantry_http_body_append(struct gantry_http_body *b, const char *data, size_t n)
{
        if (b->too_large || n > b->limit - b->len) {
                b->too_large = true;
                return 0;
        }
        if (b->len + n + 1 > b->cap) {
                size_t cap = (b->len + n + 1) * 2;
                char *p;

                if (cap > b->limit + 1)
                        cap = b->limit + 1;
                p = realloc(b->data, cap);
                if (!p)
                        return -ENOMEM;
                b->data = p;
                b->cap = cap;
        }
        memcpy(b->data + b->len, data, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

int gantry_http_body_feed(struct MHD_Connection *conn, void **con_cls, size_t limit,
                          const char *upload_data, size_t *upload_data_size,
                          const struct gantry_http_body **ret_body)
{
        struct gantry_http_body *b = *con_cls;
        const char *cl;
        int r;

        if (!b) {
                /* headers only: refuse an announced oversized body before reading it */
                cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > limit)
                        return -EFBIG;
                b = calloc(1, sizeof(*b));
                if (!b)
                        return -ENOMEM;
                b->limit = limit;
                b->start = gantry_now_s();
                *con_cls = b;
                return GANTRY_HTTP_BODY_READING;
        }
        if (*upload_data_size) {
                r = gantry_http_body_append(b, upload_data, *upload_data_size);
                *upload_data_size = 0;
                return r < 0 ? r : GANTRY_HTTP_BODY_READING;
        }
        if ((r = gantry_http_body_finish(b)) < 0)
                return r;
        *ret_body = b;
        return GANTRY_HTTP_BODY_DONE;
}

int gantry_http_body_finish(struct gantry_http_body *b)
{
        if (b->too_large)
                return -EFBIG;
        if (!b->data) {
                b->data = calloc(1, 1);
                if (!b->data)
                        return -ENOMEM;
                b->cap = 1;
        }
        return 0;
}

void gantry_http_body_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                enum MHD_RequestTerminationCode toe)
{
        struct gantry_http_body *b = *con_cls;

        (void)cls;
        (void)conn;
        (void)toe;
        if (!b)
                return;
        free(b->data);
        free(b);
        *con_cls = NULL;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
                             const char *content_type, void *text, enum MHD_ResponseMemoryMode mode)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;

        resp = MHD_create_response_from_buffer(strlen(text), text, mode);
        if (!resp) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(text);
                return MHD_NO;
        }
        if (MHD_add_response_header(resp, "Content-Type", content_type) != MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result gantry_http_reply(struct MHD_Connection *conn, unsigned int status,
                                  const char *content_type, const char *text)
{
        if (!text)
                return MHD_NO;
        /* MHD takes void * but never writes a PERSISTENT buffer */
        return reply(conn, status, content_type, (void *)text, MHD_RESPMEM_PERSISTENT);
}

enum MHD_Result gantry_http_reply_owned(struct MHD_Connection *conn, unsigned int status,
                                        const char *content_type, char *text)
{
        if (!text)
                return MHD_NO;
        return reply(conn, status, content_type, text, MHD_RESPMEM_MUST_FREE);
}
