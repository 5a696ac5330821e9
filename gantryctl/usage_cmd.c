/*
 * `gantryctl usage`: what each job declared against what its pods pull,
 * scraped from the node plugins' /metrics (gantry-csi --metrics-addr):
 *
 *   gantryctl usage --metrics URL [--metrics URL ...] [--json] [--timeout S]
 *
 * One --metrics per node plugin (e.g. http://gpu-7:9809/metrics, or the API
 * server's node proxy with `kubectl proxy`). An endpoint that cannot be
 * read is listed under "errors" and on stderr, the others are still shown,
 * and the exit status is 1; bad usage is 2.
 */
#include "usage_cmd.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_buf.h"
#include "metrics_fetch.h"
#include "usage_report.h"

#define MAX_URLS 4096

static void usage_text(FILE *f)
{
        fprintf(f, "usage: gantryctl usage --metrics URL [--metrics URL ...] [--json] [--timeout S]\n"
                   "  declared vs used bandwidth per job, from the node plugins' /metrics\n");
}

int gantry_usage_main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "metrics", required_argument, NULL, 'm' },
                { "json", no_argument, NULL, 'j' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        const char **urls = calloc(MAX_URLS, sizeof(*urls));
        struct gantry_usage_report *rep = NULL;
        json_t *errors = json_array();
        size_t n_urls = 0;
        long timeout_s = 10;
        bool as_json = false;
        int c, rc = 0;

        optind = 0; /* the top-level dispatcher may have run getopt before */
        if (!urls || !errors) {
                fprintf(stderr, "gantryctl usage: out of memory\n");
                free(urls);
                json_decref(errors);
                return 1;
        }
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'm':
                        if (n_urls == MAX_URLS) {
                                fprintf(stderr, "gantryctl usage: --metrics: more than %d\n", MAX_URLS);
                                rc = 2;
                                goto out;
                        }
                        if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
                                fprintf(stderr, "gantryctl usage: --metrics %s: want an http:// or https:// URL\n",
                                        optarg);
                                rc = 2;
                                goto out;
                        }
                        urls[n_urls++] = optarg;
                        break;
                case 'j': as_json = true; break;
                case 't': {
                        char *end;

                        timeout_s = strtol(optarg, &end, 10);
                        if (*end || timeout_s < 1 || timeout_s > 600) {
                                fprintf(stderr, "gantryctl usage: --timeout: want 1 to 600 seconds\n");
                                rc = 2;
                                goto out;
                        }
                        break;
                }
                case 'h': usage_text(stdout); goto out;
                default: usage_text(stderr); rc = 2; goto out;
                }
        }
        if (optind != argc + 1 || n_urls == 0) {
                if (n_urls == 0)
                        fprintf(stderr, "gantryctl usage: --metrics URL: at least one is required\n");
                usage_text(stderr);
                rc = 2;
                goto out;
        }
        rep = gantry_usage_report_new();
        if (!rep) {
                rc = 1;
                goto out;
        }
        curl_global_init(CURL_GLOBAL_DEFAULT);
        for (size_t i = 0; i < n_urls; i++) {
                struct gantry_error err = { 0 };
                struct gantry_buf b = { .max = GANTRY_METRICS_FETCH_MAX };
                int r = gantry_metrics_fetch(urls[i], timeout_s, NULL, &b, &err);

                if (r == 0)
                        r = gantry_usage_report_add_text(rep, b.data ? b.data : "", b.len, urls[i], &err);
                free(b.data);
                if (r < 0) {
                        fprintf(stderr, "gantryctl usage: %s\n", err.msg);
                        json_array_append_new(errors, json_pack("{s:s, s:s}", "source", urls[i], "error",
                                                                err.msg));
                        rc = 1;
                }
        }
        curl_global_cleanup();
        if (as_json) {
                json_t *o = gantry_usage_report_json(rep);

                if (o) {
                        json_object_set(o, "errors", errors);
                        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
                        fputc('\n', stdout);
                        json_decref(o);
                }
        } else {
                gantry_usage_report_table(rep, stdout);
        }
out:
        gantry_usage_report_free(rep);
        json_decref(errors);
        free(urls);
        return rc;
}
