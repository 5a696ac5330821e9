/*
 * The request plumbing the three libmicrohttpd servers share (gantry-csi's
 * /metrics, gantry-scheduler's extender, gantry-target's JSON-RPC): reading a
 * request body chunk by chunk into one buffer with a size limit, freeing it
 * when libmicrohttpd is done with the request, and queueing a text reply.
 * Each server keeps only its own routing and handlers.
 *
 * Use: pass gantry_http_body_completed as MHD_OPTION_NOTIFY_COMPLETED, and
 * from the access handler, after any check that needs only the headers
 * (method, URL, credentials: *con_cls is still NULL on the first call), call
 * gantry_http_body_feed() with the handler's arguments.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct gantry_http_body {
        char *data;   /* NUL-terminated once complete; never NULL then */
        size_t len;   /* bytes in data, without the NUL */
        double start; /* CLOCK_MONOTONIC seconds when the headers arrived */
        size_t cap;   /* the rest is the accumulator's own */
        size_t limit;
        bool too_large;
};

/* gantry_http_body_feed() results other than -errno */
#define GANTRY_HTTP_BODY_READING 0 /* more to come: return MHD_YES */
#define GANTRY_HTTP_BODY_DONE 1    /* *ret_body holds the whole body */

/*
 * Feeds one call of a libmicrohttpd access handler: @conn, @con_cls,
 * @upload_data and @upload_data_size are the handler's own arguments; @limit
 * is the largest body accepted, in bytes.
 *
 * Returns GANTRY_HTTP_BODY_READING while the body is still arriving (the
 * handler returns MHD_YES), GANTRY_HTTP_BODY_DONE on the last call with
 * *ret_body set (borrowed: valid until the request completes), -EFBIG when
 * the body is larger than @limit (as announced by Content-Length on the first
 * call, or as received; the handler answers 413 now: the rest of an
 * oversized body is read and dropped, never stored), -ENOMEM when out of
 * memory (the handler returns MHD_NO). From the first call on *con_cls holds
 * the struct gantry_http_body, except after an -EFBIG on the first call.
 */
int gantry_http_body_feed(struct MHD_Connection *conn, void **con_cls, size_t limit,
                          const char *upload_data, size_t *upload_data_size,
                          const struct gantry_http_body **ret_body);

/*
 * The accumulator without libmicrohttpd, for a transport that reads the
 * body itself (gantry-scheduler's HTTP/2): start from a zeroed struct with
 * .limit and .start set. gantry_http_body_append() adds @n bytes of @data,
 * or notes that the body passed the limit (b->too_large; nothing stored):
 * 0, or -ENOMEM. gantry_http_body_finish() at the body's end: 0 with
 * b->data NUL-terminated, -EFBIG when it was too large, or -ENOMEM.
 * Free b->data when done.
 */
int gantry_http_body_append(struct gantry_http_body *b, const char *data, size_t n);
int gantry_http_body_finish(struct gantry_http_body *b);

/*
 * MHD_OPTION_NOTIFY_COMPLETED callback: frees the body gantry_http_body_feed()
 * kept in *con_cls. @cls, @conn and @toe are not used.
 */
void gantry_http_body_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                enum MHD_RequestTerminationCode toe);

/*
 * Queue @text as the reply to @conn with HTTP @status and Content-Type
 * @content_type. gantry_http_reply() copies nothing: @text must outlive the
 * reply (a literal). gantry_http_reply_owned() takes over malloc'd @text and
 * frees it, also on failure. Both return what MHD_queue_response() returns;
 * MHD_NO when out of memory or when @text is NULL (a failed strdup()).
 */
enum MHD_Result gantry_http_reply(struct MHD_Connection *conn, unsigned int status,
                                  const char *content_type, const char *text);
enum MHD_Result gantry_http_reply_owned(struct MHD_Connection *conn, unsigned int status,
                                        const char *content_type, char *text);
