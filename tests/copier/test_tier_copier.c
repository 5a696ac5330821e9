/*
 * The copier (copier/copier.c) between real sparse files: holes are neither
 * read nor written, zero runs inside data are not written, the content
 * arrives whole, a cancelled copy resumes from its persisted position and
 * re-reads only what was in flight, errors stop the copy, and the read-back
 * check as the bytes go finds an object stored wrong. The CRC-32C the
 * checksum verify compares with the OSD's (its check against real Ceph is
 * ceph_tier_copy's) against a bit-by-bit reference.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "copier.h"
#include "crc32c.h"

#define MiB (1024ull * 1024)
#define SIZE (40 * MiB)

struct files {
        char dir[64];
        char src[96];
        char dst[96];
};

static void write_at(int fd, uint64_t off, size_t len, int pattern)
{
        char *buf = malloc(len);

        assert_non_null(buf);
        for (size_t i = 0; i < len; i++)
                buf[i] = pattern ? (char)((off + i) * 131 + (uint64_t)pattern) | 1 : 0;
        assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
        free(buf);
}

/*
 * A 40 MiB sparse source: data in [0, 1 MiB), a few bytes at 8 MiB + 100,
 * written zeros in [20, 24) MiB (allocated, but nothing to write) and data
 * in [30, 34) MiB. Objects (4 MiB) 0, 2, 5, 7 and 8 are planned.
 */
static int setup(void **state)
{
        struct files *f = calloc(1, sizeof(*f));
        int fd;

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "%s/tiercopyXXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->src, sizeof(f->src), "%s/src", f->dir);
        snprintf(f->dst, sizeof(f->dst), "%s/dst", f->dir);
        fd = open(f->src, O_RDWR | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, SIZE), 0);
        write_at(fd, 0, MiB, 1);
        write_at(fd, 8 * MiB + 100, 4900, 2);
        write_at(fd, 20 * MiB, 4 * MiB, 0);
        write_at(fd, 30 * MiB, 4 * MiB, 3);
        close(fd);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct files *f = *state;

        unlink(f->src);
        unlink(f->dst);
        rmdir(f->dir);
        free(f);
        return 0;
}

static void assert_same_content(const char *a, const char *b)
{
        FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
        char ba[65536], bb[65536];
        size_t na, nb;

        assert_non_null(fa);
        assert_non_null(fb);
        do {
                na = fread(ba, 1, sizeof(ba), fa);
                nb = fread(bb, 1, sizeof(bb), fb);
                assert_int_equal(na, nb);
                assert_memory_equal(ba, bb, na);
        } while (na);
        fclose(fa);
        fclose(fb);
}

static void test_source_extents(void **state)
{
        struct files *f = *state;
        struct gantry_copier_source *s;
        char buf[16];

        assert_int_equal(gantry_copier_source_file_new(f->src, &s), 0);
        assert_int_equal(s->size, SIZE);
        assert_false(s->incremental);
        assert_string_equal(s->ops->kind, "file");
        assert_int_equal(s->ops->read(s, 8 * MiB + 100, sizeof(buf), buf), 0);
        assert_true(buf[0] != 0);
        assert_int_equal(s->ops->read(s, 12 * MiB, sizeof(buf), buf), 0); /* a hole reads zeros */
        assert_int_equal(buf[0], 0);
        assert_int_equal(s->ops->read(s, SIZE - 4, sizeof(buf), buf), -EIO); /* past the end */
        gantry_copier_source_free(s);
        assert_int_equal(gantry_copier_source_file_new("/nonexistent/x", &s), -ENOENT);
        gantry_copier_source_free(NULL);
}

struct persisted {
        unsigned calls;
        char position[256];
        struct gantry_copier_progress last;
        int fail;
};

static int record(const struct gantry_copier_progress *p, const char *position, void *arg)
{
        struct persisted *r = arg;

        r->calls++;
        r->last = *p;
        snprintf(r->position, sizeof(r->position), "%s", position);
        return r->fail;
}

/*
 * The file source with one change: reading offset @cancel_at cancels the
 * copy (as DeleteVolume would, from another thread), at a known point.
 */
static struct gantry_copier_copy *running;
static const struct gantry_copier_source_ops *file_ops;
static uint64_t cancel_at = UINT64_MAX;

static int read_then_cancel(struct gantry_copier_source *s, uint64_t off, size_t len, char *buf)
{
        if (off == cancel_at)
                gantry_copier_copy_cancel(running);
        return file_ops->read(s, off, len, buf);
}

static void copy(const struct files *f, struct gantry_copier_copy_opts *o, struct persisted *rec,
                 int expect, struct gantry_copier_progress *ret)
{
        static struct gantry_copier_source_ops ops;
        struct gantry_copier_source *s;
        struct gantry_copier_dest *d;
        struct gantry_copier_copy *c;

        assert_int_equal(gantry_copier_source_file_new(f->src, &s), 0);
        file_ops = s->ops;
        ops = *s->ops;
        ops.read = read_then_cancel;
        s->ops = &ops;
        assert_int_equal(gantry_copier_dest_file_new(f->dst, SIZE, &d), 0);
        o->persist = record;
        o->arg = rec;
        assert_int_equal(gantry_copier_copy_new(s, d, o, &c), 0);
        running = c;
        assert_int_equal(gantry_copier_copy_run(c), expect);
        gantry_copier_copy_progress(c, ret);
        gantry_copier_copy_free(c);
        gantry_copier_dest_free(d);
        gantry_copier_source_free(s);
        cancel_at = UINT64_MAX;
}

static void test_copy_skips_holes_and_zeros(void **state)
{
        struct files *f = *state;
        struct gantry_copier_copy_opts o = { .in_flight = 4 };
        struct persisted rec = { 0 };
        struct gantry_copier_progress p;
        struct stat st;
        char line[64];

        copy(f, &o, &rec, 0, &p);
        assert_same_content(f->src, f->dst);
        assert_true(p.planned);
        assert_int_equal(p.object_count, 10);
        assert_int_equal(p.objects_total, 5);
        assert_int_equal(p.objects_done, 5);
        assert_int_equal(p.bytes_total, 20 * MiB);
        assert_int_equal(p.bytes_done, 20 * MiB);
        assert_int_equal(p.bytes_read, 20 * MiB);
        /* 1 MiB + one 64 KiB block around 8 MiB + 100 + 4 MiB: the written zeros stay out */
        assert_int_equal(p.bytes_written, 5 * MiB + 64 * 1024);
        assert_int_equal(p.watermark, 10);
        assert_int_equal(stat(f->dst, &st), 0);
        assert_true((uint64_t)st.st_blocks * 512 <= 6 * MiB);
        /* the final position is the complete one, persisted */
        assert_true(rec.calls >= 1);
        assert_string_equal(rec.position, "10");
        gantry_copier_progress_format(&rec.last, line, sizeof(line));
        assert_string_equal(line, "100 %");
}

static void test_cancel_and_resume(void **state)
{
        struct files *f = *state;
        struct gantry_copier_copy_opts o = { .in_flight = 1 };
        struct persisted rec = { 0 };
        struct gantry_copier_progress p, q;
        char position[256];

        /* cancelled while object 5 is read: it finishes, object 7 never starts */
        cancel_at = 20 * MiB;
        copy(f, &o, &rec, -ECANCELED, &p);
        assert_int_equal(p.objects_done, 3);
        assert_int_equal(p.bytes_read, 12 * MiB);
        /* the cancelled run persisted where it stopped */
        assert_string_equal(rec.position, "7");
        snprintf(position, sizeof(position), "%s", rec.position);

        memset(&rec, 0, sizeof(rec));
        o.position = position;
        o.in_flight = 3;
        copy(f, &o, &rec, 0, &q);
        assert_same_content(f->src, f->dst);
        /* the resumed run counts what was done before, and reads only the rest */
        assert_int_equal(q.bytes_done, 20 * MiB);
        assert_int_equal(q.objects_done, 5);
        assert_int_equal(q.bytes_read, 8 * MiB);
}

/*
 * A mock destination (no real fault can be made to order between a write and
 * its read-back): the file destination, counting the bytes read back, and
 * changing one byte of what is written into object @corrupt_object.
 */
static const struct gantry_copier_dest_ops *file_dest_ops;
static uint64_t corrupt_object = UINT64_MAX, read_back;

static int write_corrupting(struct gantry_copier_dest *d, uint64_t off, size_t len, const char *buf)
{
        char *copy;
        int r;

        if (off / (4 * MiB) != corrupt_object)
                return file_dest_ops->write(d, off, len, buf);
        copy = malloc(len);
        assert_non_null(copy);
        memcpy(copy, buf, len);
        copy[len / 2] ^= 0x40;
        r = file_dest_ops->write(d, off, len, copy);
        free(copy);
        return r;
}

static int read_counting(struct gantry_copier_dest *d, uint64_t off, size_t len, char *buf)
{
        __atomic_add_fetch(&read_back, len, __ATOMIC_RELAXED);
        return file_dest_ops->read(d, off, len, buf);
}

static int copy_to_mock(const struct files *f, struct gantry_copier_copy_opts *o, struct persisted *rec,
                        struct gantry_copier_progress *ret, uint64_t *ret_mismatch)
{
        static struct gantry_copier_dest_ops ops;
        struct gantry_copier_source *s;
        struct gantry_copier_dest *d;
        struct gantry_copier_copy *c;
        int r;

        unlink(f->dst);
        read_back = 0;
        assert_int_equal(gantry_copier_source_file_new(f->src, &s), 0);
        assert_int_equal(gantry_copier_dest_file_new(f->dst, SIZE, &d), 0);
        file_dest_ops = d->ops;
        ops = *d->ops;
        ops.write = write_corrupting;
        ops.read = read_counting;
        d->ops = &ops;
        o->persist = record;
        o->arg = rec;
        assert_int_equal(gantry_copier_copy_new(s, d, o, &c), 0);
        r = gantry_copier_copy_run(c);
        gantry_copier_copy_progress(c, ret);
        *ret_mismatch = gantry_copier_copy_mismatch(c);
        gantry_copier_copy_free(c);
        gantry_copier_dest_free(d);
        gantry_copier_source_free(s);
        return r;
}

static void test_verify_as_it_goes(void **state)
{
        struct files *f = *state;
        struct gantry_copier_copy_opts o = { .in_flight = 3, .verify = true };
        struct persisted rec = { 0 };
        struct gantry_copier_progress p;
        uint64_t bad;

        /* every planned object read back once, whole (written zeros included), nothing else */
        corrupt_object = UINT64_MAX;
        assert_int_equal(copy_to_mock(f, &o, &rec, &p, &bad), 0);
        assert_same_content(f->src, f->dst);
        assert_int_equal(read_back, 20 * MiB);
        assert_int_equal(p.objects_done, 5);

        /* object 7 stored wrong: the copy stops there, naming it, and never counts it done */
        memset(&rec, 0, sizeof(rec));
        o.in_flight = 1;
        corrupt_object = 7;
        assert_int_equal(copy_to_mock(f, &o, &rec, &p, &bad), -EUCLEAN);
        assert_int_equal(bad, 28 * MiB);
        assert_int_equal(p.objects_done, 3);
        assert_string_not_equal(rec.position, "10");

        /* the same fault without the check goes unseen: the check is what finds it */
        memset(&rec, 0, sizeof(rec));
        o.verify = false;
        assert_int_equal(copy_to_mock(f, &o, &rec, &p, &bad), 0);
        assert_int_equal(read_back, 0);
        assert_string_equal(rec.position, "10");
        corrupt_object = UINT64_MAX;
}

/* CRC-32C one bit at a time, Ceph's convention: no inversion before or after. */
static uint32_t reference_crc32c(uint32_t crc, const unsigned char *p, size_t n)
{
        while (n--) {
                crc ^= *p++;
                for (int k = 0; k < 8; k++)
                        crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
        }
        return crc;
}

static void test_crc32c(void **state)
{
        unsigned char *buf = malloc(100003);
        uint32_t seed = 0xffffffffu;

        (void)state;
        assert_non_null(buf);
        /* the check value of CRC-32C, 0xe3069283, is this with the final inversion */
        assert_int_equal(gantry_copier_crc32c(seed, "123456789", 9), 0xe3069283u ^ 0xffffffffu);
        for (size_t i = 0; i < 100003; i++)
                buf[i] = (unsigned char)(i * 2654435761u >> 13);
        /* unaligned starts and odd lengths, in one go or in two pieces */
        assert_int_equal(gantry_copier_crc32c(seed, buf + 1, 100001), reference_crc32c(seed, buf + 1, 100001));
        assert_int_equal(gantry_copier_crc32c(gantry_copier_crc32c(seed, buf, 4099), buf + 4099, 7),
                         reference_crc32c(seed, buf, 4106));
        /* NULL: zeros, past one internal block */
        memset(buf, 0, 10000);
        assert_int_equal(gantry_copier_crc32c(0x1234u, NULL, 10000), reference_crc32c(0x1234u, buf, 10000));
        assert_int_equal(gantry_copier_crc32c(0x1234u, NULL, 0), 0x1234u);
        free(buf);
}

static void test_errors(void **state)
{
        struct files *f = *state;
        struct gantry_copier_copy_opts o = { .in_flight = 2, .persist_every_objects = 1 };
        struct persisted rec = { .fail = -EIO };
        struct gantry_copier_source *s;
        struct gantry_copier_dest *d;
        struct gantry_copier_copy *c;
        struct gantry_copier_progress p;

        /* a persist that fails fails the copy with its error: done is never claimed */
        copy(f, &o, &rec, -EIO, &p);
        assert_true(rec.calls >= 1);

        /* a position that is not this copy's */
        memset(&rec, 0, sizeof(rec));
        o.position = "11";
        copy(f, &o, &rec, -EINVAL, &p);
        assert_int_equal(rec.calls, 0);

        /* a destination smaller than the source */
        unlink(f->dst);
        assert_int_equal(gantry_copier_source_file_new(f->src, &s), 0);
        assert_int_equal(gantry_copier_dest_file_new(f->dst, SIZE / 2, &d), 0);
        assert_int_equal(gantry_copier_copy_new(s, d, NULL, &c), -EINVAL);
        gantry_copier_dest_free(d);
        gantry_copier_source_free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_source_extents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_copy_skips_holes_and_zeros, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_and_resume, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verify_as_it_goes, setup, teardown),
                cmocka_unit_test(test_crc32c),
                cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
