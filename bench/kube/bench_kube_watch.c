/*
 * Benchmark: decoding a watch stream. 50,000 MODIFIED events of a realistic
 * training Pod (~2 KiB each) arrive in 16 KiB chunks, as curl hands them
 * over; each is split into its line, decoded and checked
 * (kube_lines_feed + kube_watch_decode + kube_object_key). The baseline, in
 * the same run, is jansson alone parsing the same lines already split: the
 * ratio is what the client adds on top of JSON parsing. Prints figures, no
 * assertions on time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_internal.h"

#define EVENTS 50000
#define CHUNK 16384
#define ROUNDS 3

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *make_stream(size_t *ret_len, size_t *ret_lines_bytes)
{
        size_t cap = (size_t)EVENTS * 2600, len = 0;
        char *s = malloc(cap);

        for (int i = 0; i < EVENTS && s; i++) {
                int n = snprintf(
                        s + len, cap - len,
                        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
                        "\"name\":\"llm-worker-%d\",\"namespace\":\"training\",\"uid\":\"6f1c2a3b-0000-4000-8000-%012d\","
                        "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-22T10:00:00Z\","
                        "\"labels\":{\"gantry.io/job\":\"llm\",\"batch.kubernetes.io/job-name\":\"llm\","
                        "\"batch.kubernetes.io/controller-uid\":\"11111111-2222-3333-4444-555555555555\"},"
                        "\"annotations\":{\"gantry.io/dataset-read-gbps\":\"25\",\"gantry.io/checkpoint-write-gbps\":\"10\"},"
                        "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"llm\","
                        "\"uid\":\"11111111-2222-3333-4444-555555555555\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
                        "\"spec\":{\"schedulerName\":\"gantry\",\"nodeName\":\"gpu-%04d\",\"restartPolicy\":\"Never\","
                        "\"containers\":[{\"name\":\"trainer\",\"image\":\"nvcr.io/nvidia/pytorch:24.10-py3\","
                        "\"command\":[\"torchrun\",\"--nnodes=64\",\"--nproc-per-node=8\",\"train.py\"],"
                        "\"env\":[{\"name\":\"NCCL_IB_HCA\",\"value\":\"mlx5\"},{\"name\":\"MASTER_ADDR\",\"value\":\"llm-0\"}],"
                        "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"32\",\"memory\":\"512Gi\"},"
                        "\"limits\":{\"nvidia.com/gpu\":\"8\"}},"
                        "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true},"
                        "{\"name\":\"ckpt\",\"mountPath\":\"/ckpt\"}]}],"
                        "\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"imagenet\",\"readOnly\":true}},"
                        "{\"name\":\"ckpt\",\"persistentVolumeClaim\":{\"claimName\":\"ckpt-llm-%d\"}}],"
                        "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]},"
                        "\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.%d.%d\",\"podIP\":\"10.100.%d.%d\","
                        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodScheduled\",\"status\":\"True\"}],"
                        "\"containerStatuses\":[{\"name\":\"trainer\",\"ready\":true,\"restartCount\":0,"
                        "\"image\":\"nvcr.io/nvidia/pytorch:24.10-py3\",\"started\":true}]}}}\n",
                        i, i, 100000 + i, i % 1024, i, i / 256 % 256, i % 256, i / 256 % 256, i % 256);
                len += (size_t)n;
        }
        *ret_len = len;
        *ret_lines_bytes = len;
        return s;
}

static int on_line(void *ctx, char *line, size_t n)
{
        struct kube_watch_event ev;
        struct gantry_error err;
        char key[320];
        long *count = ctx;

        if (kube_watch_decode(line, n, &ev, &err) < 0 || kube_object_key(ev.object, key, sizeof(key)) < 0)
                return -1;
        json_decref(ev.object);
        (*count)++;
        return 0;
}

int main(void)
{
        size_t len, bytes;
        char *stream = make_stream(&len, &bytes);
        double best_client = 1e9, best_base = 1e9;

        if (!stream)
                return 1;
        for (int round = 0; round < ROUNDS; round++) {
                struct kube_lines lines;
                long count = 0;
                double t0 = now();

                kube_lines_init(&lines, 16u << 20);
                for (size_t off = 0; off < len; off += CHUNK)
                        if (kube_lines_feed(&lines, stream + off, len - off < CHUNK ? len - off : CHUNK, on_line,
                                            &count) < 0)
                                return 1;
                kube_lines_clear(&lines);
                if (count != EVENTS)
                        return 1;
                best_client = now() - t0 < best_client ? now() - t0 : best_client;

                t0 = now();
                for (char *p = stream, *nl; (nl = memchr(p, '\n', (size_t)(stream + len - p))); p = nl + 1) {
                        json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);

                        if (!j)
                                return 1;
                        json_decref(j);
                }
                best_base = now() - t0 < best_base ? now() - t0 : best_base;
        }
        printf("watch stream: %d events, %.1f MiB, %d-byte chunks, best of %d\n", EVENTS,
               (double)bytes / (1 << 20), CHUNK, ROUNDS);
        printf("  client (split + decode + check): %.3f s  %.0f events/s  %.1f MiB/s\n", best_client,
               EVENTS / best_client, (double)bytes / (1 << 20) / best_client);
        printf("  baseline (jansson on pre-split lines): %.3f s  %.0f events/s\n", best_base, EVENTS / best_base);
        printf("  ratio client/baseline: %.2f\n", best_client / best_base);
        printf("FIGURE watch_client_vs_jansson %.3f -- time to split, decode and check a watch stream ÷ "
               "jansson alone on pre-split lines\n", best_client / best_base);
        free(stream);
        return 0;
}
