/*
 * The baseline of the dataset benchmark: create + remove of RBD images with
 * bare librbd, as the plugin does them (data in the EC pool), at a given
 * concurrency, with none of the plugin around it (no gRPC, journal, locks).
 *
 *   bare_rbd MON_HOST USER KEYFILE POOL DATAPOOL SIZE_BYTES OPS CONCURRENCY
 *
 * Prints one line: "ops=N concurrency=C p50_ms=… p99_ms=… ops_per_s=…
 * lat_ms=a,b,…", where an op is one create + remove pair and lat_ms lists
 * every pair's latency (sorted), for the caller to pool across rounds.
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bench {
        rados_ioctx_t io;
        const char *data_pool;
        uint64_t size;
        int ops;
        int next;
        double *lat_ms;
        pthread_mutex_t lock;
        int failed;
};

static double now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *worker(void *arg)
{
        struct bench *b = arg;
        char name[64];

        for (;;) {
                int i, r;
                double t0;
                rbd_image_options_t o;

                pthread_mutex_lock(&b->lock);
                i = b->next++;
                pthread_mutex_unlock(&b->lock);
                if (i >= b->ops)
                        return NULL;
                snprintf(name, sizeof(name), "bench-bare-%d-%d", (int)getpid(), i);
                rbd_image_options_create(&o);
                rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, b->data_pool);
                rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES, 1 /* layering */);
                t0 = now_ms();
                r = rbd_create4(b->io, name, b->size, o);
                if (r == 0)
                        r = rbd_remove(b->io, name);
                b->lat_ms[i] = now_ms() - t0;
                rbd_image_options_destroy(o);
                if (r < 0) {
                        fprintf(stderr, "bare_rbd: %s: %s\n", name, strerror(-r));
                        b->failed = 1;
                }
        }
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        struct bench b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        char key[256] = "", mon[300];
        pthread_t th[64];
        rados_t rados;
        FILE *f;
        int conc, r;
        double t0, wall;

        if (argc != 9) {
                fprintf(stderr, "usage: bare_rbd MON_HOST USER KEYFILE POOL DATAPOOL SIZE OPS CONCURRENCY\n");
                return 2;
        }
        b.data_pool = argv[5];
        b.size = strtoull(argv[6], NULL, 10);
        b.ops = atoi(argv[7]);
        conc = atoi(argv[8]);
        if (b.ops < 1 || conc < 1 || conc > 64)
                return 2;
        f = fopen(argv[3], "r");
        if (!f || !fgets(key, sizeof(key), f))
                return 1;
        fclose(f);
        key[strcspn(key, "\n")] = '\0';
        snprintf(mon, sizeof(mon), "[v2:%s]", argv[1]);
        if ((r = rados_create(&rados, argv[2])) < 0 ||
            (r = rados_conf_set(rados, "mon_host", mon)) < 0 ||
            (r = rados_conf_set(rados, "key", key)) < 0 ||
            (r = rados_conf_set(rados, "client_mount_timeout", "30")) < 0 ||
            (r = rados_conf_set(rados, "rados_osd_op_timeout", "30")) < 0 ||
            (r = rados_connect(rados)) < 0 || (r = rados_ioctx_create(rados, argv[4], &b.io)) < 0) {
                fprintf(stderr, "bare_rbd: connect: %s\n", strerror(-r));
                return 1;
        }
        b.lat_ms = calloc((size_t)b.ops, sizeof(double));
        t0 = now_ms();
        for (int i = 0; i < conc; i++)
                pthread_create(&th[i], NULL, worker, &b);
        for (int i = 0; i < conc; i++)
                pthread_join(th[i], NULL);
        wall = now_ms() - t0;
        qsort(b.lat_ms, (size_t)b.ops, sizeof(double), cmp);
        printf("ops=%d concurrency=%d p50_ms=%.2f p99_ms=%.2f ops_per_s=%.2f", b.ops, conc,
               b.lat_ms[b.ops / 2], b.lat_ms[(b.ops * 99) / 100 < b.ops ? (b.ops * 99) / 100 : b.ops - 1],
               b.ops / (wall / 1e3));
        for (int i = 0; i < b.ops; i++)
                printf("%s%.3f", i ? "," : " lat_ms=", b.lat_ms[i]);
        printf("\n");
        free(b.lat_ms);
        rados_ioctx_destroy(b.io);
        rados_shutdown(rados);
        return b.failed;
}
