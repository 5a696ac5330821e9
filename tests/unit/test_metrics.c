/*
 * Unit tests of the metrics registry and its /metrics endpoint
 * (common/metrics.c): the rendered text is valid Prometheus exposition, and
 * the endpoint serves it over real HTTP on loopback.
 */
#include <curl/curl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static void test_render(void **state)
{
        struct gantry_metrics *m = gantry_metrics_new();
        char *text = NULL;

        (void)state;
        assert_int_equal(gantry_metrics_counter_add(m, "req_total", "Requests.", "method=\"Probe\"", 1), 0);
        assert_int_equal(gantry_metrics_counter_add(m, "req_total", "Requests.", "method=\"Probe\"", 2), 0);
        assert_int_equal(gantry_metrics_counter_add(m, "req_total", "Requests.", "method=\"X\"", 1), 0);
        assert_int_equal(gantry_metrics_gauge_set(m, "up", "Up.", NULL, 1), 0);
        assert_int_equal(gantry_metrics_histogram_observe(m, "lat_seconds", "Latency.", "method=\"X\"", 0.003), 0);
        assert_int_equal(gantry_metrics_histogram_observe(m, "lat_seconds", "Latency.", "method=\"X\"", 2), 0);
        /* a name keeps its type; counters only go up */
        assert_int_equal(gantry_metrics_gauge_set(m, "req_total", "", NULL, 1), -EINVAL);
        assert_int_equal(gantry_metrics_counter_add(m, "req_total", "", NULL, -1), -EINVAL);

        assert_int_equal(gantry_metrics_render(m, &text), 0);
        assert_non_null(strstr(text, "# TYPE req_total counter\n"));
        assert_non_null(strstr(text, "req_total{method=\"Probe\"} 3\n"));
        assert_non_null(strstr(text, "req_total{method=\"X\"} 1\n"));
        assert_non_null(strstr(text, "up 1\n"));
        assert_non_null(strstr(text, "# TYPE lat_seconds histogram\n"));
        assert_non_null(strstr(text, "lat_seconds_bucket{method=\"X\",le=\"0.001\"} 0\n"));
        assert_non_null(strstr(text, "lat_seconds_bucket{method=\"X\",le=\"0.005\"} 1\n"));
        assert_non_null(strstr(text, "lat_seconds_bucket{method=\"X\",le=\"2.5\"} 2\n"));
        assert_non_null(strstr(text, "lat_seconds_bucket{method=\"X\",le=\"+Inf\"} 2\n"));
        assert_non_null(strstr(text, "lat_seconds_count{method=\"X\"} 2\n"));
        /* HELP/TYPE once per family */
        {
                const char *first = strstr(text, "# TYPE req_total");
                assert_null(strstr(first + 1, "# TYPE req_total"));
        }
        free(text);
        gantry_metrics_free(m);
        gantry_metrics_free(NULL);
}

static size_t collect(char *ptr, size_t size, size_t n, void *userdata)
{
        FILE *f = userdata;
        return fwrite(ptr, size, n, f);
}

static long http_get(const char *url, char **ret_body)
{
        CURL *c = curl_easy_init();
        char *body = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&body, &len);
        long status = 0;

        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        if (curl_easy_perform(c) == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        fclose(f);
        *ret_body = body;
        return status;
}

static void test_server(void **state)
{
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_metrics_server *s = NULL;
        char url[64], *body = NULL;
        int port = 0;

        (void)state;
        gantry_metrics_counter_add(m, "gantry_test_total", "Test.", NULL, 7);
        assert_int_equal(gantry_metrics_server_start(m, "127.0.0.1:0", &s, &port), 0);
        assert_true(port > 0);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
        assert_int_equal(http_get(url, &body), 200);
        assert_non_null(strstr(body, "gantry_test_total 7\n"));
        free(body);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/other", port);
        assert_int_equal(http_get(url, &body), 404);
        free(body);
        gantry_metrics_server_stop(s);
        assert_int_equal(gantry_metrics_server_start(m, "nonsense", &s, NULL), -EINVAL);
        assert_int_equal(gantry_metrics_server_start(m, "127.0.0.1:99999", &s, NULL), -EINVAL);
        gantry_metrics_free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_server),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
