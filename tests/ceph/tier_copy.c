/*
 * tier-copy: drives the copier (copier/copier.h) from the command line
 * for the tests of the `ceph` label and for bench/tier. It copies an RBD
 * image (at a snapshot, or only the changes since an older one) or a file
 * into an RBD image of another (or the same) cluster, and prints one JSON
 * line per persisted position and one at the end:
 *
 *   {"event":"persist","position":"12:14","bytes_done":..,"bytes_written":..}
 *   {"event":"done","result":0,"bytes_total":..,"bytes_read":..,...}
 *
 *   tier-copy --dst-conf C --dst-image I [--dst-pool rbd] [--create] [--data-pool P]
 *             (--src-file PATH | --src-conf C --src-image I [--src-pool rbd]
 *              [--src-snap S] [--from-snap S])
 *             [--in-flight N] [--bw BYTES_PER_S] [--position TEXT]
 *             [--persist-objects K] [--persist-ms T] [--order N]
 *             [--stripe-unit BYTES --stripe-count N]
 *             [--verify [--read-back] [--corrupt-object N]]
 *
 * --create makes the destination image with the source's size (order
 * --order, default 22, striped when asked) when it does not exist. --verify
 * has the copier check every object it writes: by checksum where the image
 * allows it (librbd's cache is turned off for that), else, or with
 * --read-back, by reading it back; one line says which:
 *
 *   {"event":"verify","check":"checksum"}
 *   {"event":"verify","check":"read-back","why":"..."}
 *
 * --corrupt-object N changes one byte of object N behind the copier's back
 * right after each of its writes there: a plain librados write into the
 * RADOS object of the image's data pool, the fault the check must find (the
 * done line's "mismatch_at" names the object's offset). Exit status 0 when
 * the copy completed, 1 otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "copier.h"

struct args {
        const char *src_conf, *src_pool, *src_image, *src_snap, *from_snap, *src_file;
        const char *dst_conf, *dst_pool, *dst_image, *data_pool, *position;
        int create, order, verify, read_back;
        unsigned in_flight, persist_objects, persist_ms;
        unsigned long long bw, stripe_unit, stripe_count;
        long long corrupt_object;
};

/* --corrupt-object: the destination's own write, then one byte of the RADOS object changed */
static const struct gantry_copier_dest_ops *dest_ops;
static struct gantry_copier_dest_ops corrupting_ops;
static rados_ioctx_t corrupt_io;
static char corrupt_oid[128];
static uint64_t corrupt_from, corrupt_to;

static int write_then_corrupt(struct gantry_copier_dest *d, uint64_t off, size_t len, const char *buf)
{
        int r = dest_ops->write(d, off, len, buf);
        char c;

        if (r < 0 || off < corrupt_from || off >= corrupt_to)
                return r;
        c = (char)(buf[0] ^ 0x5a);
        return rados_write(corrupt_io, corrupt_oid, &c, 1, off - corrupt_from);
}

/* Wraps @d's write for --corrupt-object @n: @io is the image's pool. */
static int corrupt_setup(rados_ioctx_t io, rbd_image_t img, struct gantry_copier_dest *d, long long n)
{
        char prefix[RBD_MAX_BLOCK_NAME_SIZE];
        int64_t pool = rbd_get_data_pool_id(img);
        int r;

        if (pool < 0)
                return (int)pool;
        if ((r = rbd_get_block_name_prefix(img, prefix, sizeof(prefix))) < 0 ||
            (r = rados_ioctx_create2(rados_ioctx_get_cluster(io), pool, &corrupt_io)) < 0)
                return r;
        snprintf(corrupt_oid, sizeof(corrupt_oid), "%s.%016llx", prefix, (unsigned long long)n);
        corrupt_from = (uint64_t)n * d->object_size;
        corrupt_to = corrupt_from + d->object_size;
        dest_ops = d->ops;
        corrupting_ops = *d->ops;
        corrupting_ops.write = write_then_corrupt;
        d->ops = &corrupting_ops;
        return 0;
}

static int connect_pool(const char *conf, const char *pool, rados_t *ret_c, rados_ioctx_t *ret_io)
{
        rados_t c;
        int r = rados_create(&c, NULL);

        if (r < 0)
                return r;
        if ((r = rados_conf_read_file(c, conf)) < 0 || (r = rados_connect(c)) < 0 ||
            (r = rados_ioctx_create(c, pool, ret_io)) < 0) {
                rados_shutdown(c);
                return r;
        }
        *ret_c = c;
        return 0;
}

static int persist(const struct gantry_copier_progress *p, const char *position, void *arg)
{
        char line[128];

        (void)arg;
        gantry_copier_progress_format(p, line, sizeof(line));
        printf("{\"event\":\"persist\",\"position\":\"%s\",\"bytes_done\":%llu,\"bytes_total\":%llu,"
               "\"bytes_read\":%llu,\"bytes_written\":%llu,\"line\":\"%s\"}\n",
               position, (unsigned long long)p->bytes_done, (unsigned long long)p->bytes_total,
               (unsigned long long)p->bytes_read, (unsigned long long)p->bytes_written, line);
        fflush(stdout);
        return 0;
}

static int parse(int argc, char **argv, struct args *a)
{
        static const struct option opts[] = {
                { "src-conf", required_argument, NULL, 1 },  { "src-pool", required_argument, NULL, 2 },
                { "src-image", required_argument, NULL, 3 }, { "src-snap", required_argument, NULL, 4 },
                { "from-snap", required_argument, NULL, 5 }, { "src-file", required_argument, NULL, 6 },
                { "dst-conf", required_argument, NULL, 7 },  { "dst-pool", required_argument, NULL, 8 },
                { "dst-image", required_argument, NULL, 9 }, { "data-pool", required_argument, NULL, 10 },
                { "position", required_argument, NULL, 11 }, { "create", no_argument, NULL, 12 },
                { "in-flight", required_argument, NULL, 13 }, { "bw", required_argument, NULL, 14 },
                { "persist-objects", required_argument, NULL, 15 },
                { "persist-ms", required_argument, NULL, 16 }, { "order", required_argument, NULL, 17 },
                { "stripe-unit", required_argument, NULL, 18 }, { "stripe-count", required_argument, NULL, 19 },
                { "verify", no_argument, NULL, 20 },          { "read-back", no_argument, NULL, 21 },
                { "corrupt-object", required_argument, NULL, 22 },
                { 0 },
        };
        int c;

        a->src_pool = a->dst_pool = "rbd";
        a->order = 22;
        a->corrupt_object = -1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 1: a->src_conf = optarg; break;
                case 2: a->src_pool = optarg; break;
                case 3: a->src_image = optarg; break;
                case 4: a->src_snap = optarg; break;
                case 5: a->from_snap = optarg; break;
                case 6: a->src_file = optarg; break;
                case 7: a->dst_conf = optarg; break;
                case 8: a->dst_pool = optarg; break;
                case 9: a->dst_image = optarg; break;
                case 10: a->data_pool = optarg; break;
                case 11: a->position = optarg; break;
                case 12: a->create = 1; break;
                case 13: a->in_flight = (unsigned)atoi(optarg); break;
                case 14: a->bw = strtoull(optarg, NULL, 10); break;
                case 15: a->persist_objects = (unsigned)atoi(optarg); break;
                case 16: a->persist_ms = (unsigned)atoi(optarg); break;
                case 17: a->order = atoi(optarg); break;
                case 18: a->stripe_unit = strtoull(optarg, NULL, 10); break;
                case 19: a->stripe_count = strtoull(optarg, NULL, 10); break;
                case 20: a->verify = 1; break;
                case 21: a->read_back = 1; break;
                case 22: a->corrupt_object = atoll(optarg); break;
                default: return -EINVAL;
                }
        }
        if (!a->dst_conf || !a->dst_image || (!a->src_file && (!a->src_conf || !a->src_image)))
                return -EINVAL;
        return 0;
}

static int create_image(rados_ioctx_t io, const struct args *a, uint64_t size)
{
        rbd_image_options_t o;
        int r;

        rbd_image_options_create(&o);
        r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, (uint64_t)a->order);
        if (r == 0 && a->data_pool)
                r = rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, a->data_pool);
        if (r == 0 && a->stripe_unit)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_UNIT, a->stripe_unit);
        if (r == 0 && a->stripe_count)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_COUNT, a->stripe_count);
        if (r == 0)
                r = rbd_create4(io, a->dst_image, size, o);
        rbd_image_options_destroy(o);
        return r == -EEXIST ? 0 : r;
}

int main(int argc, char **argv)
{
        struct args a = { 0 };
        rados_t sc = NULL, dc = NULL;
        rados_ioctx_t sio = NULL, dio = NULL;
        rbd_image_t img = NULL;
        struct gantry_copier_source *src = NULL;
        struct gantry_copier_dest *dst = NULL;
        struct gantry_copier_bucket *bucket = NULL;
        struct gantry_copier_copy *copy = NULL;
        struct gantry_copier_copy_opts o = { 0 };
        struct gantry_copier_progress p;
        const char *step;
        int r;

        if (parse(argc, argv, &a) < 0) {
                fprintf(stderr, "usage: see the comment atop tests/ceph/tier_copy.c\n");
                return 2;
        }
        step = "open source";
        if (a.src_file) {
                r = gantry_copier_source_file_new(a.src_file, &src);
        } else if ((r = connect_pool(a.src_conf, a.src_pool, &sc, &sio)) == 0) {
                r = gantry_copier_source_rbd_new(sio, a.src_image, a.src_snap, a.from_snap, &src);
        }
        if (r < 0)
                goto out;
        step = "open destination";
        if ((r = connect_pool(a.dst_conf, a.dst_pool, &dc, &dio)) < 0)
                goto out;
        /* as gantry-target runs: a write is at the OSDs when it returns */
        if (a.verify && !a.read_back && (r = rados_conf_set(dc, "rbd_cache", "false")) < 0)
                goto out;
        if (a.create && (r = create_image(dio, &a, src->size)) < 0)
                goto out;
        if ((r = rbd_open(dio, a.dst_image, &img, NULL)) < 0 || (r = gantry_copier_dest_rbd_new(img, &dst)) < 0)
                goto out;
        if (a.verify) {
                const char *why = "--read-back";
                if (!a.read_back && (r = gantry_copier_dest_rbd_checksum(dst, dio, &why)) < 0 && r != -EOPNOTSUPP)
                        goto out;
                if (dst->checksum)
                        printf("{\"event\":\"verify\",\"check\":\"checksum\"}\n");
                else
                        printf("{\"event\":\"verify\",\"check\":\"read-back\",\"why\":\"%s\"}\n", why);
                r = 0;
        }
        step = "corrupt setup";
        if (a.corrupt_object >= 0 && (r = corrupt_setup(dio, img, dst, a.corrupt_object)) < 0)
                goto out;
        step = "copy";
        if ((r = gantry_copier_bucket_new(a.bw, &bucket)) < 0)
                goto out;
        o.in_flight = a.in_flight;
        o.bucket = bucket;
        o.position = a.position;
        o.persist_every_objects = a.persist_objects;
        o.persist_every_ms = a.persist_ms;
        o.persist = persist;
        o.verify = a.verify;
        if ((r = gantry_copier_copy_new(src, dst, &o, &copy)) < 0)
                goto out;
        r = gantry_copier_copy_run(copy);
        gantry_copier_copy_progress(copy, &p);
        printf("{\"event\":\"done\",\"result\":%d,\"bytes_total\":%llu,\"bytes_done\":%llu,"
               "\"bytes_read\":%llu,\"bytes_written\":%llu,\"objects_total\":%llu,"
               "\"object_count\":%llu,\"mismatch_at\":%llu,\"seconds\":%.3f}\n",
               r, (unsigned long long)p.bytes_total, (unsigned long long)p.bytes_done,
               (unsigned long long)p.bytes_read, (unsigned long long)p.bytes_written,
               (unsigned long long)p.objects_total, (unsigned long long)p.object_count,
               (unsigned long long)(r == -EUCLEAN ? gantry_copier_copy_mismatch(copy) : 0), p.elapsed_seconds);
out:
        if (r < 0)
                fprintf(stderr, "tier-copy: %s: %s\n", step, strerror(-r));
        gantry_copier_copy_free(copy);
        gantry_copier_bucket_free(bucket);
        gantry_copier_dest_free(dst);
        if (corrupt_io)
                rados_ioctx_destroy(corrupt_io);
        if (img)
                rbd_close(img);
        gantry_copier_source_free(src);
        if (sio)
                rados_ioctx_destroy(sio);
        if (dio)
                rados_ioctx_destroy(dio);
        if (sc)
                rados_shutdown(sc);
        if (dc)
                rados_shutdown(dc);
        return r < 0 ? 1 : 0;
}
