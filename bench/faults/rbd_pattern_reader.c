/*
 * The host-side twin of tests/vm/fault_reader.py for bench/faults: reads a
 * dataset image flat out with librbd (no kernel, no VM) and checks every
 * byte against the fault tests' pattern (tests/vm/dataset_pattern.py: each
 * 4 KiB block is its byte offset and a seed, two little-endian u64,
 * repeated), until told to stop. Its figures are the storage's, not those
 * of an emulated guest's CPUs.
 *
 *   rbd_pattern_reader CONF POOL IMAGE SEED seq|rand THREADS STOPFILE OUT
 *
 * CONF names the cluster and an admin keyring. THREADS threads read the
 * image, each over its own part: "seq" 256 KiB requests in order,
 * wrapping; "rand" 64 KiB at random 4 KiB-aligned offsets. librados waits
 * for an OSD as long as it takes (no op timeout), as krbd does. It stops
 * once STOPFILE exists; reads in flight complete first. OUT.reading
 * appears after the first read; OUT gets the JSON fault_reader.py writes
 * (per read its start and end on CLOCK_MONOTONIC, the clock of Python's
 * time.monotonic, and the totals: bytes, reads, errors, wrong_bytes,
 * passes).
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define MAX_THREADS 64
#define MAX_READS (1 << 21)

struct reader {
        rbd_image_t img;
        uint64_t seed, base, size, req;
        int rand;
        const char *stopfile, *reading;
        pthread_t thread;
        double *t0, *t1;
        long n, errors, wrong, passes;
        uint64_t bytes;
};

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill_expected(uint8_t *buf, uint64_t off, uint64_t len, uint64_t seed)
{
        for (uint64_t b = 0; b < len; b += BLOCK)
                for (int i = 0; i < BLOCK; i += 16) {
                        uint64_t o = off + b;
                        memcpy(buf + b + i, &o, 8); /* little-endian host */
                        memcpy(buf + b + i + 8, &seed, 8);
                }
}

static void *read_loop(void *arg)
{
        struct reader *r = arg;
        uint8_t *buf = malloc(r->req), *want = malloc(r->req);
        unsigned rs = (unsigned)r->base;
        uint64_t off = 0;

        while (buf && want && r->n < MAX_READS && access(r->stopfile, F_OK) != 0) {
                if (r->rand) {
                        off = (uint64_t)rand_r(&rs) % ((r->size - r->req) / BLOCK + 1) * BLOCK;
                } else if (off + r->req > r->size) {
                        off = 0;
                        r->passes++;
                }
                double t0 = now();
                ssize_t got = rbd_read(r->img, r->base + off, r->req, (char *)buf);
                r->t0[r->n] = t0;
                r->t1[r->n] = now();
                if (++r->n == 1) {
                        FILE *f = fopen(r->reading, "w");
                        if (f)
                                fclose(f);
                }
                if (got != (ssize_t)r->req) {
                        r->errors++;
                        continue;
                }
                r->bytes += r->req;
                fill_expected(want, r->base + off, r->req, r->seed);
                if (memcmp(buf, want, r->req) != 0)
                        for (uint64_t i = 0; i < r->req; i++)
                                r->wrong += buf[i] != want[i];
                off += r->req;
        }
        free(buf);
        free(want);
        return NULL;
}

static int write_out(const char *out, struct reader *rs, int n, const char *mode, uint64_t part)
{
        char tmp[4096];
        long reads = 0, errors = 0, wrong = 0, passes = -1;
        uint64_t bytes = 0;
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", out);
        f = fopen(tmp, "w");
        if (!f)
                return -errno;
        for (int k = 0; k < 2; k++) {
                fprintf(f, k ? "], \"t1\": [" : "{\"t0\": [");
                for (int i = 0, first = 1; i < n; i++)
                        for (long j = 0; j < rs[i].n; j++, first = 0)
                                fprintf(f, "%s%.6f", first ? "" : ",", k ? rs[i].t1[j] : rs[i].t0[j]);
        }
        for (int i = 0; i < n; i++) {
                reads += rs[i].n;
                errors += rs[i].errors;
                wrong += rs[i].wrong;
                bytes += rs[i].bytes;
                if (passes < 0 || rs[i].passes < passes)
                        passes = rs[i].passes;
        }
        char pass[32] = "null"; /* random reads make no passes */
        if (!rs[0].rand)
                snprintf(pass, sizeof(pass), "%ld", passes);
        fprintf(f, "], \"mode\": \"%s\", \"part\": %llu, \"req\": %llu, \"bytes\": %llu, "
                   "\"reads\": %ld, \"errors\": %ld, \"wrong_bytes\": %ld, \"passes\": %s, "
                   "\"first_error\": null}\n",
                mode, (unsigned long long)part, (unsigned long long)rs[0].req,
                (unsigned long long)bytes, reads, errors, wrong, pass);
        if (fclose(f) != 0)
                return -errno;
        return rename(tmp, out) == 0 ? 0 : -errno;
}

int main(int argc, char **argv)
{
        static struct reader rs[MAX_THREADS];
        char reading[4096];
        rados_t cluster;
        rados_ioctx_t io;
        rbd_image_t img;
        uint64_t size, part;
        int threads, r;

        if (argc != 9) {
                fprintf(stderr, "usage: rbd_pattern_reader CONF POOL IMAGE SEED seq|rand THREADS "
                                "STOPFILE OUT\n");
                return 2;
        }
        threads = atoi(argv[6]);
        if (threads < 1 || threads > MAX_THREADS) {
                fprintf(stderr, "rbd_pattern_reader: THREADS: 1..%d\n", MAX_THREADS);
                return 2;
        }
        snprintf(reading, sizeof(reading), "%s.reading", argv[8]);
        if ((r = rados_create(&cluster, NULL)) < 0 ||
            (r = rados_conf_read_file(cluster, argv[1])) < 0 ||
            (r = rados_connect(cluster)) < 0 ||
            (r = rados_ioctx_create(cluster, argv[2], &io)) < 0 ||
            (r = rbd_open_read_only(io, argv[3], &img, NULL)) < 0 ||
            (r = rbd_get_size(img, &size)) < 0) {
                fprintf(stderr, "rbd_pattern_reader: %s/%s: %s\n", argv[2], argv[3], strerror(-r));
                return 1;
        }
        part = size / threads / (256 << 10) * (256 << 10);
        for (int i = 0; i < threads; i++) {
                struct reader *x = &rs[i];
                x->img = img;
                x->seed = strtoull(argv[4], NULL, 10);
                x->rand = strcmp(argv[5], "rand") == 0;
                x->req = x->rand ? 64 << 10 : 256 << 10;
                x->base = i * part;
                x->size = part;
                x->stopfile = argv[7];
                x->reading = reading;
                x->t0 = calloc(MAX_READS, sizeof(double));
                x->t1 = calloc(MAX_READS, sizeof(double));
                if (!x->t0 || !x->t1 || pthread_create(&x->thread, NULL, read_loop, x) != 0) {
                        fprintf(stderr, "rbd_pattern_reader: out of memory\n");
                        return 1;
                }
        }
        for (int i = 0; i < threads; i++)
                pthread_join(rs[i].thread, NULL);
        r = write_out(argv[8], rs, threads, argv[5], part);
        rbd_close(img);
        rados_ioctx_destroy(io);
        rados_shutdown(cluster);
        if (r < 0) {
                fprintf(stderr, "rbd_pattern_reader: %s: %s\n", argv[8], strerror(-r));
                return 1;
        }
        return 0;
}
