/*
 * Unit tests of the shared libmicrohttpd request body accumulator and reply
 * helpers (common/http_body.c), over real HTTP on loopback: a tiny server
 * echoes back each body it accumulated, and libcurl sends bodies in one
 * piece, in many chunks, at the limit, past it (announced by Content-Length
 * or only discovered while reading a chunked upload), and empty; and the
 * accumulator fed directly, without libmicrohttpd.
 */
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http_body.h"

#define LIMIT 4096

struct echo {
        struct MHD_Daemon *daemon;
        int port;
        int refused_on_headers; /* -EFBIG before any body was kept */
};

/* replies "<len>:<body as a C string>" so the test sees both length and NUL termination */
static enum MHD_Result echo_answer(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *data,
                                   size_t *data_size, void **con_cls)
{
        struct echo *e = cls;
        const struct gantry_http_body *b = NULL;
        char *text;
        int r;

        (void)url;
        (void)version;
        if (!*con_cls && strcmp(method, "POST") != 0)
                return gantry_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "POST\n");
        r = gantry_http_body_feed(conn, con_cls, LIMIT, data, data_size, &b);
        if (r == GANTRY_HTTP_BODY_READING)
                return MHD_YES;
        if (r == -EFBIG) {
                if (!*con_cls)
                        __atomic_add_fetch(&e->refused_on_headers, 1, __ATOMIC_SEQ_CST);
                return gantry_http_reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, "text/plain", "too large\n");
        }
        if (r < 0)
                return MHD_NO;
        /* runs on libmicrohttpd's thread: report a surprise as 500, no cmocka assert here */
        if (r != GANTRY_HTTP_BODY_DONE || !b || !(b->start > 0))
                return gantry_http_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "?\n");
        if (asprintf(&text, "%zu:%s", b->len, b->data) < 0)
                return MHD_NO;
        return gantry_http_reply_owned(conn, MHD_HTTP_OK, "text/plain", text);
}

static int echo_start(void **state)
{
        struct echo *e = calloc(1, sizeof(*e));
        const union MHD_DaemonInfo *info;

        e->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                     echo_answer, e, MHD_OPTION_NOTIFY_COMPLETED, gantry_http_body_completed, e,
                                     MHD_OPTION_END);
        if (!e->daemon) {
                free(e);
                return -1;
        }
        info = MHD_get_daemon_info(e->daemon, MHD_DAEMON_INFO_BIND_PORT);
        e->port = info->port;
        *state = e;
        return 0;
}

static int echo_stop(void **state)
{
        struct echo *e = *state;

        MHD_stop_daemon(e->daemon);
        free(e);
        return 0;
}

static size_t collect(char *ptr, size_t size, size_t n, void *userdata)
{
        return fwrite(ptr, size, n, userdata);
}

struct upload {
        const char *data;
        size_t len, off, piece;
};

/* hands libcurl the body @piece bytes at a time (a chunked upload) */
static size_t feed_piece(char *buf, size_t size, size_t n, void *userdata)
{
        struct upload *u = userdata;
        size_t want = size * n;

        if (want > u->piece)
                want = u->piece;
        if (want > u->len - u->off)
                want = u->len - u->off;
        memcpy(buf, u->data + u->off, want);
        u->off += want;
        return want;
}

/* POSTs @len bytes of @body, chunked in @piece-byte pieces when @piece > 0 */
static long post(const struct echo *e, const char *method, const char *body, size_t len, size_t piece,
                 char **ret_reply)
{
        CURL *c = curl_easy_init();
        struct curl_slist *headers = NULL;
        struct upload u = { .data = body, .len = len, .piece = piece };
        char url[64], *reply = NULL;
        size_t reply_len = 0;
        FILE *f = open_memstream(&reply, &reply_len);
        long status = 0;

        snprintf(url, sizeof(url), "http://127.0.0.1:%d/", e->port);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        if (strcmp(method, "POST") != 0) {
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        } else if (piece) {
                headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
                curl_easy_setopt(c, CURLOPT_POST, 1L);
                curl_easy_setopt(c, CURLOPT_READFUNCTION, feed_piece);
                curl_easy_setopt(c, CURLOPT_READDATA, &u);
        } else {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
        }
        if (curl_easy_perform(c) == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(headers);
        curl_easy_cleanup(c);
        fclose(f);
        *ret_reply = reply;
        return status;
}

static char *pattern(size_t len)
{
        char *p = malloc(len + 1);

        for (size_t i = 0; i < len; i++)
                p[i] = (char)('a' + i % 26);
        p[len] = '\0';
        return p;
}

static void expect_echo(const struct echo *e, size_t len, size_t piece)
{
        char *body = pattern(len), *reply = NULL, *want;

        assert_int_equal(post(e, "POST", body, len, piece, &reply), 200);
        assert_true(asprintf(&want, "%zu:%s", len, body) >= 0);
        assert_string_equal(reply, want);
        free(want);
        free(reply);
        free(body);
}

static void test_whole_body(void **state)
{
        expect_echo(*state, 11, 0);
}

static void test_many_pieces(void **state)
{
        /* 7-byte chunks: the accumulator grows through many appends */
        expect_echo(*state, 3000, 7);
}

static void test_at_limit(void **state)
{
        expect_echo(*state, LIMIT, 0);
        expect_echo(*state, LIMIT, 1000);
}

static void test_empty_body(void **state)
{
        char *reply = NULL;

        assert_int_equal(post(*state, "POST", "", 0, 0, &reply), 200);
        assert_string_equal(reply, "0:");
        free(reply);
}

static void test_announced_too_large(void **state)
{
        struct echo *e = *state;
        char *body = pattern(LIMIT + 1), *reply = NULL;
        int before = __atomic_load_n(&e->refused_on_headers, __ATOMIC_SEQ_CST);

        assert_int_equal(post(e, "POST", body, LIMIT + 1, 0, &reply), 413);
        assert_string_equal(reply, "too large\n");
        /* refused on the Content-Length header, before any byte was stored */
        assert_int_equal(__atomic_load_n(&e->refused_on_headers, __ATOMIC_SEQ_CST), before + 1);
        free(reply);
        free(body);
}

static void test_received_too_large(void **state)
{
        struct echo *e = *state;
        char *body = pattern(3 * LIMIT), *reply = NULL;
        int before = __atomic_load_n(&e->refused_on_headers, __ATOMIC_SEQ_CST);

        /* chunked: no Content-Length, the limit is found while reading */
        assert_int_equal(post(e, "POST", body, 3 * LIMIT, 512, &reply), 413);
        assert_string_equal(reply, "too large\n");
        assert_int_equal(__atomic_load_n(&e->refused_on_headers, __ATOMIC_SEQ_CST), before);
        free(reply);
        free(body);
        /* the server goes on answering */
        expect_echo(e, 5, 0);
}

static void test_headers_checked_first(void **state)
{
        char *reply = NULL;

        assert_int_equal(post(*state, "PUT", "x", 1, 0, &reply), 405);
        assert_string_equal(reply, "POST\n");
        free(reply);
}

/* The accumulator fed directly, as gantry-scheduler's HTTP/2 feeds it. */
static void test_direct_append(void **state)
{
        struct gantry_http_body b = { .limit = 8 };
        struct gantry_http_body empty = { .limit = 8 };

        (void)state;
        assert_int_equal(gantry_http_body_append(&b, "abcd", 4), 0);
        assert_int_equal(gantry_http_body_append(&b, "efgh", 4), 0);
        assert_int_equal(gantry_http_body_finish(&b), 0);
        assert_int_equal(b.len, 8);
        assert_string_equal(b.data, "abcdefgh");
        /* one byte past the limit: noted, not stored */
        assert_int_equal(gantry_http_body_append(&b, "i", 1), 0);
        assert_true(b.too_large);
        assert_int_equal(b.len, 8);
        assert_int_equal(gantry_http_body_finish(&b), -EFBIG);
        free(b.data);
        /* no body at all: an empty string */
        assert_int_equal(gantry_http_body_finish(&empty), 0);
        assert_string_equal(empty.data, "");
        free(empty.data);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_whole_body),
                cmocka_unit_test(test_many_pieces),
                cmocka_unit_test(test_at_limit),
                cmocka_unit_test(test_empty_body),
                cmocka_unit_test(test_announced_too_large),
                cmocka_unit_test(test_received_too_large),
                cmocka_unit_test(test_headers_checked_first),
                cmocka_unit_test(test_direct_append),
        };
        int r;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = cmocka_run_group_tests(tests, echo_start, echo_stop);
        curl_global_cleanup();
        return r;
}
