/*
 * Unit tests of node/qos/io_stall.c, stall_cause.c and common/backend_name.c
 * on synthetic samples: a reader flat out is no stall, a hang across
 * several samples is one stall told once and ended once, the threshold's
 * edges, a counter that went back, a new stall after recovery, a volume
 * the pod never used; the event text with and without the backend's state,
 * and that state read from a StorageBackend object (fresh, stale, none).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "backend_name.h"
#include "io_stall.h"
#include "stall_cause.h"

#define S 1000000ull /* a second of stall, microseconds */

struct series {
        struct gantry_io_stall st;
        struct gantry_io_stall_config c;
        uint64_t t_ms, stall_us, rios, wios;
        unsigned started, ended;
};

/* One sample @dt_ms after the last: @stall_us more "some" stall, @ios more reads. */
static enum gantry_io_stall_change step(struct series *x, uint64_t dt_ms, uint64_t stall_us,
                                        uint64_t ios)
{
        enum gantry_io_stall_change c;

        x->t_ms += dt_ms;
        x->stall_us += stall_us;
        x->rios += ios;
        c = gantry_io_stall_feed(&x->st, &x->c, x->t_ms, x->stall_us, x->rios, x->wios);
        x->started += c == GANTRY_IO_STALL_STARTED;
        x->ended += c == GANTRY_IO_STALL_ENDED;
        return c;
}

static void init(struct series *x, uint64_t threshold_ms)
{
        memset(x, 0, sizeof(*x));
        x->c.threshold_ms = threshold_ms;
        x->t_ms = 1000;
        step(x, 0, 0, 0); /* the baseline */
}

static void test_busy_reader_is_no_stall(void **state)
{
        struct series x;

        (void)state;
        init(&x, 5000);
        /* waiting on IO the whole time, but its reads move */
        for (int i = 0; i < 60; i++)
                assert_int_equal(step(&x, 1000, S, 300), GANTRY_IO_STALL_NONE);
        assert_false(x.st.in_stall);
}

static void test_one_event_per_stall(void **state)
{
        struct series x;

        (void)state;
        init(&x, 5000);
        for (int i = 0; i < 5; i++)
                step(&x, 1000, S / 2, 200);
        /* 23 s without one IO while waiting on it, sampled every second */
        for (int i = 0; i < 23; i++) {
                enum gantry_io_stall_change c = step(&x, 1000, S, 0);

                assert_int_equal(c, i == 4 ? GANTRY_IO_STALL_STARTED : GANTRY_IO_STALL_NONE);
        }
        assert_int_equal(x.started, 1);
        assert_true(x.st.in_stall);
        assert_int_equal(x.st.start_ms, 6000); /* the last sample that saw IO move */
        assert_int_equal(step(&x, 1000, S / 3, 150), GANTRY_IO_STALL_ENDED);
        assert_int_equal(gantry_io_stall_length_ms(&x.st), 23000);
        for (int i = 0; i < 10; i++)
                step(&x, 1000, S / 2, 200);
        assert_int_equal(x.started, 1);
        assert_int_equal(x.ended, 1);

        /* a new stall after recovery is a new one */
        for (int i = 0; i < 6; i++)
                step(&x, 2000, 2 * S, 0);
        assert_int_equal(x.started, 2);
        step(&x, 2000, S, 10);
        assert_int_equal(x.ended, 2);
        assert_int_equal(gantry_io_stall_length_ms(&x.st), 12000);
}

static void test_threshold_edges(void **state)
{
        struct series x;

        (void)state;
        /* 4.9 s: under the threshold, never told (neither start nor end) */
        init(&x, 5000);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 7; i++)
                step(&x, 700, 700000, 0);
        assert_int_equal(step(&x, 1000, 0, 10), GANTRY_IO_STALL_NONE);
        assert_int_equal(x.started + x.ended, 0);
        /* exactly 5 s: told */
        init(&x, 5000);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 4; i++)
                assert_int_equal(step(&x, 1250, 1250000, 0), i == 3 ? GANTRY_IO_STALL_STARTED
                                                                    : GANTRY_IO_STALL_NONE);
        /* an interval stalled less than half of it breaks the stall */
        init(&x, 5000);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 2; i++)
                step(&x, 2000, 2 * S, 0);
        step(&x, 2000, S - 1, 0);
        for (int i = 0; i < 2; i++)
                step(&x, 2000, 2 * S, 0);
        assert_int_equal(x.started, 0);
        /* half of it is enough, as the default share says */
        init(&x, 5000);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 5; i++)
                step(&x, 2000, S, 0);
        assert_int_equal(x.started, 1);
        /* threshold 0: detection off */
        init(&x, 0);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 30; i++)
                step(&x, 1000, S, 0);
        assert_int_equal(x.started, 0);
}

static void test_counter_reset(void **state)
{
        struct series x;

        (void)state;
        init(&x, 5000);
        step(&x, 1000, 0, 10);
        for (int i = 0; i < 8; i++)
                step(&x, 1000, S, 0);
        assert_int_equal(x.started, 1);
        /* the cgroup made again: the told stall ends, the sample is a new baseline */
        x.t_ms += 1000;
        assert_int_equal(gantry_io_stall_feed(&x.st, &x.c, x.t_ms, 100, 0, 0), GANTRY_IO_STALL_ENDED);
        assert_int_equal(gantry_io_stall_length_ms(&x.st), 8000);
        x.stall_us = 100;
        x.rios = 0;
        /* a new cgroup that never did IO is not watched yet */
        for (int i = 0; i < 10; i++)
                assert_int_equal(step(&x, 1000, S, 0), GANTRY_IO_STALL_NONE);
        /* an unreported stall cut by a reset ends silently */
        step(&x, 1000, 0, 5);
        step(&x, 1000, S, 0);
        x.t_ms += 1000;
        assert_int_equal(gantry_io_stall_feed(&x.st, &x.c, x.t_ms, 0, 0, 0), GANTRY_IO_STALL_NONE);
        /* a sample not after the last is ignored */
        assert_int_equal(gantry_io_stall_feed(&x.st, &x.c, x.t_ms, 9 * S, 0, 0), GANTRY_IO_STALL_NONE);
        assert_int_equal(x.st.last_stall_us, 0);
}

static void test_writes_and_idle_volume(void **state)
{
        struct series x;

        (void)state;
        /* the pod stalls on something else while this volume was never used */
        init(&x, 5000);
        for (int i = 0; i < 20; i++)
                step(&x, 1000, S, 0);
        assert_int_equal(x.started, 0);
        /* a writer that hangs */
        init(&x, 5000);
        x.wios += 40;
        step(&x, 1000, 0, 0);
        for (int i = 0; i < 6; i++)
                step(&x, 1000, S, 0);
        assert_int_equal(x.started, 1);
        assert_true(x.st.writes);
}

static void test_message(void **state)
{
        char buf[512];
        struct gantry_io_stall_report r = {
                .tier = "dataset", .volume_id = "0001-0006-ceph-a-0000000000000002-x",
                .stalled_ms = 23400, .started_at = 1796652131, /* 2026-12-07 14:02:11 UTC */
                .backend = { .name = "ceph-a", .state = "Degraded",
                             .reason = "OSD_DOWN: 1 osds down" },
        };

        (void)state;
        assert_string_equal(gantry_io_stall_message(&r, buf, sizeof(buf)),
                            "dataset reads stalled 23 s at 14:02:11 UTC on volume "
                            "0001-0006-ceph-a-0000000000000002-x: backend ceph-a was Degraded "
                            "(OSD_DOWN: 1 osds down)");
        r.ongoing = true;
        r.stalled_ms = 5000;
        assert_string_equal(gantry_io_stall_message(&r, buf, sizeof(buf)),
                            "dataset reads stalled since 14:02:11 UTC on volume "
                            "0001-0006-ceph-a-0000000000000002-x, 5 s so far: backend ceph-a is "
                            "Degraded (OSD_DOWN: 1 osds down)");
        /* no state known (no CRD, no RBAC, stale): no cause */
        r.ongoing = false;
        r.backend.state = NULL;
        r.writes = true;
        r.tier = "checkpoint";
        assert_string_equal(gantry_io_stall_message(&r, buf, sizeof(buf)),
                            "checkpoint writes stalled 5 s at 14:02:11 UTC on volume "
                            "0001-0006-ceph-a-0000000000000002-x");
        r.backend.state = "Healthy";
        r.backend.reason = NULL;
        r.tier = NULL;
        assert_string_equal(gantry_io_stall_message(&r, buf, sizeof(buf)),
                            "writes stalled 5 s at 14:02:11 UTC on volume "
                            "0001-0006-ceph-a-0000000000000002-x: backend ceph-a was Healthy");
        /* a small buffer is cut, NUL-terminated */
        assert_string_equal(gantry_io_stall_message(&r, buf, 12), "writes stal");
}

static void test_backend_of_volume(void **state)
{
        char b[GANTRY_BACKEND_NAME_MAX + 1], small[4];
        const char *tier = NULL;

        (void)state;
        assert_int_equal(gantry_backend_of_volume("0001-0004-test-0000000000000001-ds", b,
                                                  sizeof(b), &tier), 0);
        assert_string_equal(b, "test");
        assert_string_equal(tier, "dataset");
        assert_int_equal(gantry_backend_of_volume("0002-0005-tgt-a-0000000000000000-5f1c", b,
                                                  sizeof(b), &tier), 0);
        assert_string_equal(b, "tgt-a");
        assert_string_equal(tier, "checkpoint");
        assert_int_equal(gantry_backend_of_volume("0001-0004-test-00", small, sizeof(small), NULL),
                         -EINVAL);
        assert_int_equal(gantry_backend_of_volume("0003-0004-test-00", b, sizeof(b), NULL), -EINVAL);
        assert_int_equal(gantry_backend_of_volume("0001-0009-test-00", b, sizeof(b), NULL), -EINVAL);
        assert_int_equal(gantry_backend_of_volume("0001-zz04-test-00", b, sizeof(b), NULL), -EINVAL);
        assert_int_equal(gantry_backend_of_volume("pvc-123", b, sizeof(b), NULL), -EINVAL);
        assert_int_equal(gantry_backend_of_volume(NULL, b, sizeof(b), NULL), -EINVAL);
        assert_int_equal(gantry_backend_object_name("Ceph_A", b, sizeof(b)), 0);
        assert_string_equal(b, "ceph-a");
}

static void test_cause_from_object(void **state)
{
        struct gantry_stall_cause c;
        json_t *o = json_pack("{s:{s:s, s:s, s:s}}", "status", "state", "Degraded", "reason",
                              "OSD_DOWN: 1 osds down", "observedAt", "2026-12-07T14:02:30Z");
        const time_t at = 1796652150; /* 14:02:30 */

        (void)state;
        assert_int_equal(gantry_stall_cause_from_object(o, at + 10, &c), 0);
        assert_string_equal(c.state, "Degraded");
        assert_string_equal(c.reason, "OSD_DOWN: 1 osds down");
        /* stale: no live state */
        assert_int_equal(gantry_stall_cause_from_object(o, at + GANTRY_STALL_CAUSE_STALE_SECONDS + 1,
                                                        &c), -ENOENT);
        json_decref(o);
        /* fractions of a second are fine; a status without a state or time is none */
        o = json_pack("{s:{s:s, s:s}}", "status", "state", "Healthy", "observedAt",
                      "2026-12-07T14:02:30.25Z");
        assert_int_equal(gantry_stall_cause_from_object(o, at, &c), 0);
        assert_string_equal(c.reason, "");
        json_decref(o);
        o = json_pack("{s:{s:s}}", "status", "observedAt", "2026-12-07T14:02:30Z");
        assert_int_equal(gantry_stall_cause_from_object(o, at, &c), -ENOENT);
        json_decref(o);
        o = json_pack("{s:{s:s, s:s}}", "status", "state", "Degraded", "observedAt", "yesterday");
        assert_int_equal(gantry_stall_cause_from_object(o, at, &c), -ENOENT);
        json_decref(o);
        assert_int_equal(gantry_stall_cause_from_object(NULL, at, &c), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_busy_reader_is_no_stall),
                cmocka_unit_test(test_one_event_per_stall),
                cmocka_unit_test(test_threshold_edges),
                cmocka_unit_test(test_counter_reset),
                cmocka_unit_test(test_writes_and_idle_volume),
                cmocka_unit_test(test_message),
                cmocka_unit_test(test_backend_of_volume),
                cmocka_unit_test(test_cause_from_object),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
