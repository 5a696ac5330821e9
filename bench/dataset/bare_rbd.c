/*
 * The baseline of the dataset benchmark: create + remove of RBD images with
 * bare librbd, as the plugin does them (data in the EC pool), at a given
 * concurrency, with none of the plugin around it (no gRPC, journal, locks).
 *
 *   bare_rbd MON_HOST USER KEYFILE POOL DATAPOOL SIZE_BYTES OPS CONCURRENCY [journal]
 *
 * With "journal", each pair also does, with bare librados, the RADOS
 * operations the plugin's journal adds to an empty volume, in the same
 * order (journal.c): reserve the name with the record in the directory
 * object (omap compare + set; ready already: an empty image of these
 * features is whole once it opens), make the image; on delete read the
 * record while the image is removed, and remove the name (compare) and
 * the record in one operation once librbd deletes the image's objects (its
 * first progress call, as the plugin does), else after the removal. What the plugin
 * costs beyond that is its own (gRPC, locks, decoding): the figure tells
 * the journal's share of the gap from the rest.
 *
 * Prints one line: "ops=N concurrency=C p50_ms=… p99_ms=… ops_per_s=…
 * cpu_ms=… lat_ms=a,b,…", where an op is one create + remove pair, cpu_ms
 * is the CPU time this process spent on the pairs (user + system, the
 * connect not included) and lat_ms lists every pair's latency (sorted),
 * for the caller to pool across rounds.
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
        int journal;
};

#define DIR_OBJ "bench.volumes"
#define NKEYS 8

/* The record's keys in the directory, as many and about as long as the plugin's. */
static void record_keys(const char *uuid, char k[NKEYS][64], const char *keys[NKEYS],
                        size_t kl[NKEYS])
{
        static const char *const f[NKEYS] = { "name", "image", "source", "fp", "dataPool",
                                              "size", "ready", "plain" };

        for (int i = 0; i < NKEYS; i++) {
                snprintf(k[i], 64, "\xf4\x8f\xbf\xbf%s.%s", uuid, f[i]);
                keys[i] = k[i];
                kl[i] = strlen(k[i]);
        }
}

/* Adds the record (@ready) to @op. */
static void record_set(rados_write_op_t op, const char *uuid, const char *name,
                       const char *image, const char *ready)
{
        char k[NKEYS][64];
        const char *keys[NKEYS];
        const char *vals[NKEYS] = { name, image, "",
                                    "cluster=perf;pool=rbd;dataPool=ecdata;features=layering;"
                                    "size=67108864;source=;fs=;mkfs=;map=",
                                    "ecdata", "67108864", ready, "1" };
        size_t kl[NKEYS], vl[NKEYS];

        record_keys(uuid, k, keys, kl);
        for (int i = 0; i < NKEYS; i++)
                vl[i] = strlen(vals[i]);
        rados_write_op_omap_set2(op, keys, vals, kl, vl, NKEYS);
}

/* The removal of name and record, started on librbd's first progress call once the read is in. */
struct removal {
        rados_ioctx_t io;
        rados_completion_t read;
        const char *const *keys;
        const size_t *kl;
        const char *uuid;
        rados_write_op_t op;
        rados_completion_t c;
        int prval;
        int tried;
};

static rados_write_op_t removal_op(const struct removal *x, int *prval)
{
        rados_write_op_t op = rados_create_write_op();

        rados_write_op_omap_cmp(op, x->keys[0], LIBRADOS_CMPXATTR_OP_EQ, x->uuid,
                                strlen(x->uuid), prval);
        rados_write_op_omap_rm_keys2(op, x->keys, x->kl, NKEYS + 1);
        return op;
}

static int on_trim(uint64_t done, uint64_t total, void *arg)
{
        struct removal *x = arg;

        (void)done;
        (void)total;
        if (x->tried || !rados_aio_is_complete(x->read))
                return 0;
        x->tried = 1;
        x->op = removal_op(x, &x->prval);
        rados_aio_create_completion2(NULL, NULL, &x->c);
        if (rados_aio_write_op_operate(x->op, x->io, x->c, DIR_OBJ, NULL, 0) < 0) {
                rados_aio_release(x->c);
                rados_release_write_op(x->op);
                x->op = NULL;
        }
        return 0;
}

/* One pair with the journal's operations around it (see the top of the file). */
static int journal_pair(struct bench *b, const char *name, rbd_image_options_t o)
{
        char uuid[40], image[64], k[NKEYS][64];
        const char *keys[NKEYS + 1], *vals[1] = { uuid };
        size_t kl[NKEYS + 1], vl[1];
        rados_write_op_t op;
        rados_read_op_t rop;
        rados_completion_t c;
        rados_omap_iter_t it = NULL;
        struct removal x;
        int prval = 0, r, rr, rrm;

        snprintf(uuid, sizeof(uuid), "%08x-0000-8000-8000-%012x", (unsigned)getpid(),
                 (unsigned)(strtoul(strrchr(name, '-') + 1, NULL, 10)));
        vl[0] = strlen(uuid);
        snprintf(image, sizeof(image), "%s", name);
        /* create: the name and the record (ready=1) in one op, then the image */
        keys[0] = name;
        kl[0] = strlen(name);
        op = rados_create_write_op();
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        rados_write_op_omap_cmp(op, name, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &prval);
        rados_write_op_omap_set2(op, keys, vals, kl, vl, 1);
        record_set(op, uuid, name, image, "1");
        r = rados_write_op_operate(op, b->io, DIR_OBJ, NULL, 0);
        rados_release_write_op(op);
        if (r < 0 || (r = rbd_create4(b->io, image, b->size, o)) < 0)
                return r;
        /* delete: the record read while the image is removed, name + record in one op */
        record_keys(uuid, k, keys + 1, kl + 1);
        rop = rados_create_read_op();
        rados_read_op_omap_get_vals_by_keys2(rop, keys + 1, NKEYS, kl + 1, &it, &prval);
        rados_aio_create_completion2(NULL, NULL, &c);
        r = rados_aio_read_op_operate(rop, b->io, c, DIR_OBJ, 0);
        x = (struct removal){ .io = b->io, .read = c, .keys = keys, .kl = kl, .uuid = uuid };
        rr = rbd_remove_with_progress(b->io, image, on_trim, &x);
        if (r == 0) {
                rados_aio_wait_for_complete(c);
                r = rados_aio_get_return_value(c);
        }
        if (it)
                rados_omap_get_end(it);
        rados_aio_release(c);
        rados_release_read_op(rop);
        if (x.op) {
                rados_aio_wait_for_complete(x.c);
                rrm = rados_aio_get_return_value(x.c);
                rados_aio_release(x.c);
                rados_release_write_op(x.op);
        } else {
                op = removal_op(&x, &prval);
                rrm = rados_write_op_operate(op, b->io, DIR_OBJ, NULL, 0);
                rados_release_write_op(op);
        }
        return r < 0 ? r : rr < 0 ? rr : rrm;
}

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
                if (b->journal) {
                        r = journal_pair(b, name, o);
                } else {
                        r = rbd_create4(b->io, name, b->size, o);
                        if (r == 0)
                                r = rbd_remove(b->io, name);
                }
                b->lat_ms[i] = now_ms() - t0;
                rbd_image_options_destroy(o);
                if (r < 0) {
                        fprintf(stderr, "bare_rbd: %s: %s\n", name, strerror(-r));
                        b->failed = 1;
                }
        }
}

static double cpu_ms(void)
{
        struct rusage u;

        getrusage(RUSAGE_SELF, &u);
        return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
               (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
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
        double t0, wall, cpu0;

        if (argc != 9 && !(argc == 10 && strcmp(argv[9], "journal") == 0)) {
                fprintf(stderr, "usage: bare_rbd MON_HOST USER KEYFILE POOL DATAPOOL SIZE OPS "
                        "CONCURRENCY [journal]\n");
                return 2;
        }
        b.journal = argc == 10;
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
        cpu0 = cpu_ms();
        t0 = now_ms();
        for (int i = 0; i < conc; i++)
                pthread_create(&th[i], NULL, worker, &b);
        for (int i = 0; i < conc; i++)
                pthread_join(th[i], NULL);
        wall = now_ms() - t0;
        cpu0 = cpu_ms() - cpu0;
        qsort(b.lat_ms, (size_t)b.ops, sizeof(double), cmp);
        printf("ops=%d concurrency=%d p50_ms=%.2f p99_ms=%.2f ops_per_s=%.2f", b.ops, conc,
               b.lat_ms[b.ops / 2], b.lat_ms[(b.ops * 99) / 100 < b.ops ? (b.ops * 99) / 100 : b.ops - 1],
               b.ops / (wall / 1e3));
        printf(" cpu_ms=%.1f", cpu0);
        for (int i = 0; i < b.ops; i++)
                printf("%s%.3f", i ? "," : " lat_ms=", b.lat_ms[i]);
        printf("\n");
        free(b.lat_ms);
        rados_ioctx_destroy(b.io);
        rados_shutdown(rados);
        return b.failed;
}
