/*
 * Property tests of the placement library: over many random clusters and
 * pod streams, (1) no placement the library accepts (reserve) ever leaves a
 * NIC, leaf uplink, backend or GPU count over its capacity, and filter
 * agrees with reserve; (2) threads reserving concurrently on a shared
 * cluster never over-commit, and exactly as many pods are admitted as a
 * serial replay could fit; (3) the ledger's members per job, kept as pods
 * are recorded, reserved, released, expired and their nodes removed, are
 * always what a scan of every entry finds.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"
#include "placement_internal.h"

#define N_LEAVES 4
#define N_NODES 16
#define N_BACKENDS 3

static char node_names[N_NODES][16];
static const char *node_ptrs[N_NODES];
static const char *backend_names[N_BACKENDS] = { "ceph-a", "ceph-b", "tgt-a" };

static double rnd(unsigned *seed, double lo, double hi)
{
        return lo + (hi - lo) * (rand_r(seed) / (double)RAND_MAX);
}

static struct gantry_cluster *random_cluster(unsigned *seed)
{
        struct gantry_cluster *c;
        char leaf[16], spine[16];

        assert_int_equal(gantry_cluster_new(&c), 0);
        for (int l = 0; l < N_LEAVES; l++) {
                snprintf(leaf, sizeof(leaf), "leaf-%d", l);
                snprintf(spine, sizeof(spine), "spine-%d", l / 2);
                struct gantry_leaf_spec ls = { .name = leaf, .spine = spine };
                if (rand_r(seed) % 2)
                        ls.uplink_gbps = rnd(seed, 20, 200);
                else
                        ls.oversubscription = rnd(seed, 1, 4);
                assert_int_equal(gantry_cluster_set_leaf(c, &ls, NULL), 0);
        }
        for (int n = 0; n < N_NODES; n++) {
                snprintf(node_names[n], sizeof(node_names[n]), "gpu-%d", n);
                node_ptrs[n] = node_names[n];
                snprintf(leaf, sizeof(leaf), "leaf-%d", n % N_LEAVES);
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = node_names[n], .leaf = leaf, .nic_gbps = rnd(seed, 25, 200),
                        .gpus = 8 }, NULL), 0);
        }
        for (int b = 0; b < N_BACKENDS; b++) {
                snprintf(leaf, sizeof(leaf), "leaf-%d", b % N_LEAVES);
                const char *leaves[] = { leaf };
                assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                        .name = backend_names[b],
                        .kind = b == 2 ? GANTRY_BACKEND_NVMEOF : GANTRY_BACKEND_CEPH,
                        .gbps = rnd(seed, 50, 300), .leaves = leaves, .n_leaves = 1 }, NULL), 0);
        }
        return c;
}

static void random_demand(unsigned *seed, struct gantry_pod_demand *d, char *uid, size_t size, int i)
{
        snprintf(uid, size, "pod-%d", i);
        memset(d, 0, sizeof(*d));
        d->uid = uid;
        d->gpus = 1 + rand_r(seed) % 4;
        d->n_flows = rand_r(seed) % 3;
        for (size_t f = 0; f < d->n_flows; f++) {
                int b = rand_r(seed) % (N_BACKENDS + 1);
                d->flows[f].backend = b == N_BACKENDS ? NULL : backend_names[b];
                d->flows[f].gbps = rnd(seed, 0, 40);
        }
}

static void assert_within_capacity(struct gantry_cluster *c)
{
        for (int n = 0; n < N_NODES; n++) {
                struct gantry_node_usage u;
                assert_int_equal(gantry_cluster_node_usage(c, node_names[n], &u), 0);
                assert_true(u.nic_used_gbps <= u.nic_gbps + 1e-6);
                assert_true(u.uplink_gbps == 0 || u.uplink_used_gbps <= u.uplink_gbps + 1e-6);
                assert_true(u.gpus_used <= u.gpus);
        }
        for (int b = 0; b < N_BACKENDS; b++) {
                double cap, used;
                assert_int_equal(gantry_cluster_backend_usage(c, backend_names[b], &cap, &used), 0);
                assert_true(used <= cap + 1e-6);
        }
}

static void test_accepted_never_exceeds(void **state)
{
        (void)state;
        for (unsigned round = 0; round < 50; round++) {
                unsigned seed = 1000 + round;
                struct gantry_cluster *c = random_cluster(&seed);
                int accepted = 0, refused = 0;

                for (int i = 0; i < 200; i++) {
                        struct gantry_pod_demand d;
                        struct gantry_node_verdict v[N_NODES];
                        char uid[32];
                        int node;

                        random_demand(&seed, &d, uid, sizeof(uid), i);
                        assert_int_equal(gantry_cluster_filter(c, &d, node_ptrs, N_NODES, v, NULL), 0);
                        node = rand_r(&seed) % N_NODES;
                        struct gantry_error err;
                        int r = gantry_cluster_reserve(c, &d, node_ptrs[node], 0, NULL, &err);
                        /* filter and reserve agree on the same state */
                        assert_int_equal(r == 0, v[node].fits);
                        if (r == 0) {
                                accepted++;
                        } else {
                                assert_int_equal(r, -ENOSPC);
                                char why[512];

                                gantry_node_verdict_detail(&v[node], node_ptrs[node], why, sizeof(why));
                                assert_string_equal(err.msg, why);
                                refused++;
                        }
                        assert_within_capacity(c);
                        /* now and then a pod finishes */
                        if (i % 7 == 3) {
                                char done[32];
                                snprintf(done, sizeof(done), "pod-%d", rand_r(&seed) % (i + 1));
                                gantry_cluster_release(c, done);
                        }
                }
                /* the property is not vacuous: both outcomes happened */
                assert_true(accepted > 0);
                assert_true(refused > 0);
                gantry_cluster_free(c);
        }
}

#define N_THREADS 8
#define PER_THREAD 400

struct worker {
        struct gantry_cluster *c;
        int id;
        int accepted;
};

static void *reserve_worker(void *arg)
{
        struct worker *w = arg;
        unsigned seed = 77 + w->id;

        for (int i = 0; i < PER_THREAD; i++) {
                struct gantry_pod_demand d = { .gpus = 0, .n_flows = 1 };
                char uid[32];

                snprintf(uid, sizeof(uid), "t%d-%d", w->id, i);
                d.uid = uid;
                d.flows[0].backend = backend_names[rand_r(&seed) % N_BACKENDS];
                d.flows[0].gbps = 1 + rand_r(&seed) % 5;
                if (gantry_cluster_reserve(w->c, &d, node_ptrs[rand_r(&seed) % N_NODES], 0, NULL, NULL) == 0)
                        w->accepted++;
        }
        return NULL;
}

static void test_concurrent_reservations(void **state)
{
        unsigned seed = 4242;
        struct gantry_cluster *c = random_cluster(&seed);
        pthread_t t[N_THREADS];
        struct worker w[N_THREADS];
        struct gantry_cluster_stats s;
        int accepted = 0;

        (void)state;
        for (int i = 0; i < N_THREADS; i++) {
                w[i] = (struct worker){ .c = c, .id = i };
                assert_int_equal(pthread_create(&t[i], NULL, reserve_worker, &w[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                accepted += w[i].accepted;
        }
        assert_within_capacity(c);
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.entries, (size_t)accepted);
        /* demand far exceeds capacity, so the limits were really tested */
        assert_true(accepted < N_THREADS * PER_THREAD);
        assert_true(accepted > 0);
        gantry_cluster_free(c);
}

static const char *jobs[] = { NULL, "ns/a", "ns/b", "ns/c", "other/a", "ns/big" };
#define N_JOBS (sizeof(jobs) / sizeof(jobs[0]))

/* Each job's members are exactly the entries of that job, each at its index. */
static void assert_job_members(struct gantry_cluster *c)
{
        size_t with_job = 0;

        for (size_t i = 0; i < c->n_entries; i++) {
                const struct gp_entry *e = c->entries[i];
                const struct gp_job_members *m = gp_job_members_get(c, e->job);

                if (!e->job) {
                        assert_null(m);
                        continue;
                }
                with_job++;
                assert_non_null(m);
                assert_true(e->job_index < m->n);
                assert_ptr_equal(m->v[e->job_index], e);
        }
        for (size_t j = 1; j < N_JOBS; j++) {
                const struct gp_job_members *m = gp_job_members_get(c, jobs[j]);
                size_t scan = 0;

                for (size_t i = 0; i < c->n_entries; i++)
                        scan += c->entries[i]->job && !strcmp(c->entries[i]->job, jobs[j]);
                assert_int_equal(m ? m->n : 0, scan);
                assert_true(!m || m->n > 0); /* a job with none is dropped */
                with_job -= scan;
        }
        assert_int_equal(with_job, 0);
}

static void test_job_members_match_scan(void **state)
{
        (void)state;
        for (unsigned seed = 1; seed <= 20; seed++) {
                unsigned s = seed;
                struct gantry_cluster *c = random_cluster(&s);
                struct gantry_pod_demand d;
                uint64_t token = 0; /* the last reservation's: sometimes still its pod's */
                char uid[32];

                for (int step = 0; step < 600; step++) {
                        int op = rand_r(&s) % 10, node = rand_r(&s) % N_NODES;

                        random_demand(&s, &d, uid, sizeof(uid), rand_r(&s) % 80);
                        d.job = jobs[rand_r(&s) % N_JOBS];
                        if (op < 4) {
                                gantry_cluster_record(c, &d, node_names[node], NULL);
                        } else if (op < 6) {
                                gantry_cluster_reserve(c, &d, node_names[node], 100 + step, &token, NULL);
                        } else if (op < 8) {
                                gantry_cluster_release(c, d.uid);
                        } else if (op == 8) {
                                gantry_cluster_expire(c, 100 + rand_r(&s) % 600);
                        } else if (rand_r(&s) % 4 == 0) {
                                /* a node goes (its entries with it) and comes back */
                                char leaf[16];

                                snprintf(leaf, sizeof(leaf), "leaf-%d", node % N_LEAVES);
                                gantry_cluster_remove_node(c, node_names[node]);
                                assert_job_members(c);
                                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                                        .name = node_names[node], .leaf = leaf, .nic_gbps = 400,
                                        .gpus = 8 }, NULL), 0);
                        } else {
                                gantry_cluster_release_reservation(c, d.uid, token);
                        }
                        assert_job_members(c);
                }
                gantry_cluster_free(c);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepted_never_exceeds),
                cmocka_unit_test(test_concurrent_reservations),
                cmocka_unit_test(test_job_members_match_scan),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
