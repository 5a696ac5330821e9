/*
 * The gang planner: chooses a node for every member of a gang at once, so
 * that all of them fit together (GPUs, NICs, leaf uplinks, backends), on one
 * leaf when one leaf can feed the gang, else on the fewest leaves under one
 * spine (any spines when the gang opted into spreading). It measures by
 * doing: members are charged one by one onto a leaf's nodes (packing each
 * node before the next) and the charges are given back unless kept, so the
 * answer is exactly what gp_charge_fits() would say member after member.
 *
 * Nodes without a leaf form one more group (index n_leaves) with no spine:
 * without topology labels there is no locality to keep. See gang.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gang_internal.h"

/* Present nodes ordered by group: the nodes of group g are
 * order[start[g] .. start[g + 1]). */
struct groups {
        int n;
        int *order, *start;
        int *free_gpus; /* per group: GPUs not charged, a tightness measure */
};

static void groups_free(struct groups *gs)
{
        free(gs->order);
        free(gs->start);
        free(gs->free_gpus);
}

int gp_gang_node_group(const struct gantry_cluster *c, int node)
{
        int leaf = c->nodes[node].leaf;

        return leaf >= 0 ? leaf : (int)c->n_leaves;
}

static int groups_build(const struct gantry_cluster *c, struct groups *gs)
{
        int *fill;

        gs->n = (int)c->n_leaves + 1;
        gs->order = calloc(c->n_nodes + 1, sizeof(int));
        gs->start = calloc(gs->n + 1, sizeof(int));
        gs->free_gpus = calloc(gs->n, sizeof(int));
        fill = calloc(gs->n, sizeof(int));
        if (!gs->order || !gs->start || !gs->free_gpus || !fill) {
                free(fill);
                groups_free(gs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_nodes; i++)
                if (c->nodes[i].present) {
                        int g = gp_gang_node_group(c, (int)i);

                        gs->start[g + 1]++;
                        gs->free_gpus[g] += c->nodes[i].gpus - c->nodes[i].gpus_used;
                }
        for (int g = 0; g < gs->n; g++)
                gs->start[g + 1] += gs->start[g];
        for (size_t i = 0; i < c->n_nodes; i++)
                if (c->nodes[i].present) {
                        int g = gp_gang_node_group(c, (int)i);

                        gs->order[gs->start[g] + fill[g]++] = (int)i;
                }
        free(fill);
        return 0;
}

static int group_spine(const struct gantry_cluster *c, int g)
{
        return g < (int)c->n_leaves ? c->leaves[g].spine : -1;
}

/*
 * Charges up to @want members onto group @g's nodes, appending the charges
 * to @out (*@n_out grows). Returns how many were placed; *@ret_why says what
 * stopped it (may be NULL).
 */
static int fill(struct gantry_cluster *c, const struct groups *gs, const struct gantry_pod_demand *d,
                int g, int want, struct gp_charge *out, int *n_out, const char **ret_why)
{
        struct gantry_node_verdict v;
        int placed = 0;

        for (int i = gs->start[g]; i < gs->start[g + 1] && placed < want; i++) {
                int node = gs->order[i];

                /* GPUs not tracked (0) is no room for a member that needs
                 * some: a plan looks beyond the nodes kube-scheduler offered,
                 * and its own GPU filter would never offer this one */
                if (d->gpus > 0 && c->nodes[node].gpus <= 0) {
                        if (ret_why)
                                *ret_why = gantry_refusal_cause_words(GANTRY_REFUSAL_GPUS);
                        continue;
                }
                while (placed < want) {
                        struct gp_charge ch;

                        gp_charge_compute(c, d, node, &ch);
                        if (!gp_charge_fits(c, &ch, &v)) {
                                if (ret_why)
                                        *ret_why = gantry_refusal_cause_words(v.cause);
                                break;
                        }
                        gp_charge_apply(c, &ch, 1);
                        out[(*n_out)++] = ch;
                        placed++;
                }
        }
        return placed;
}

static void undo(struct gantry_cluster *c, const struct gp_charge *ch, int n)
{
        for (int i = n; i-- > 0;)
                gp_charge_apply(c, &ch[i], -1);
}

/* Orders candidate groups: preferred first, then most members. */
struct cand {
        int g, cnt, prefer;
};

static int cand_cmp(const void *a, const void *b)
{
        const struct cand *x = a, *y = b;

        if (x->prefer != y->prefer)
                return y->prefer - x->prefer;
        if (x->cnt != y->cnt)
                return y->cnt - x->cnt;
        return x->g - y->g;
}

/*
 * Fewest groups under one spine (any spine with @spread) whose counts add up
 * to @k; writes them to @ret (best first) and returns how many, 0 when none.
 */
static int pick_spine(const struct gantry_cluster *c, const struct groups *gs, const int *cnt,
                      const int *prefer, int k, bool spread, struct cand *scratch, struct cand *ret)
{
        int best_n = 0, best_pref = -1;
        int n_spines = spread ? 1 : (int)c->n_spines;

        for (int s = 0; s < n_spines; s++) {
                int n = 0, used = 0, sum = 0, pref = 0;

                for (int g = 0; g < gs->n; g++)
                        if (cnt[g] > 0 && (spread || (group_spine(c, g) == s && s >= 0)))
                                scratch[n++] = (struct cand){ g, cnt[g], prefer ? prefer[g] : 0 };
                qsort(scratch, n, sizeof(*scratch), cand_cmp);
                while (used < n && sum < k) {
                        sum += scratch[used].cnt;
                        pref += scratch[used].prefer;
                        used++;
                }
                if (sum < k)
                        continue;
                if (best_n == 0 || used < best_n || (used == best_n && pref > best_pref)) {
                        best_n = used;
                        best_pref = pref;
                        memcpy(ret, scratch, used * sizeof(*ret));
                }
        }
        return best_n;
}

int gp_gang_plan(struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                 const int *prefer, int avoid, bool spread, struct gp_charge *ret_charges,
                 struct gp_plan_miss *ret_miss)
{
        struct groups gs = { 0 };
        struct cand *scratch = NULL, *chosen = NULL;
        const char **why = NULL;
        int *cnt = NULL, r = -ENOMEM, n_out = 0, best = -1, n_chosen = 0;

        if (groups_build(c, &gs) < 0)
                return -ENOMEM;
        cnt = calloc(gs.n, sizeof(int));
        why = calloc(gs.n, sizeof(*why));
        scratch = calloc(gs.n, sizeof(*scratch));
        chosen = calloc(gs.n, sizeof(*chosen));
        if (!cnt || !why || !scratch || !chosen)
                goto out;

        /* how many members each leaf can take now (measured, then given back) */
        for (int g = 0; g < gs.n; g++) {
                if (g == avoid)
                        continue;
                n_out = 0;
                cnt[g] = fill(c, &gs, d, g, k, ret_charges, &n_out, &why[g]);
                undo(c, ret_charges, n_out);
        }
        n_out = 0;

        /* one leaf: the preferred one, else the tightest that fits (it keeps
         * roomier leaves for bigger gangs) */
        for (int g = 0; g < gs.n; g++) {
                if (cnt[g] < k)
                        continue;
                if (best < 0 || (prefer ? prefer[g] : 0) > (prefer ? prefer[best] : 0) ||
                    ((prefer ? prefer[g] : 0) == (prefer ? prefer[best] : 0) &&
                     gs.free_gpus[g] < gs.free_gpus[best]))
                        best = g;
        }
        if (best >= 0) {
                chosen[0] = (struct cand){ best, k, 0 };
                n_chosen = 1;
        } else {
                n_chosen = pick_spine(c, &gs, cnt, prefer, k, false, scratch, chosen);
                if (n_chosen == 0 && spread)
                        n_chosen = pick_spine(c, &gs, cnt, prefer, k, true, scratch, chosen);
        }
        if (n_chosen > 0) {
                for (int i = 0; i < n_chosen && n_out < k; i++) {
                        int want = k - n_out < chosen[i].cnt ? k - n_out : chosen[i].cnt;

                        fill(c, &gs, d, chosen[i].g, want, ret_charges, &n_out, NULL);
                }
                if (n_out == k) {
                        r = 0;
                        goto out;
                }
                /* leaves share a backend: their counts did not add up */
                undo(c, ret_charges, n_out);
        }
        if (ret_miss) {
                *ret_miss = (struct gp_plan_miss){ .best_group = -1, .short_of = "GPUs" };
                for (int g = 0; g < gs.n; g++)
                        if (g != avoid && (ret_miss->best_group < 0 || cnt[g] > ret_miss->best_fit)) {
                                ret_miss->best_fit = cnt[g];
                                ret_miss->best_group = g;
                                ret_miss->short_of = why[g] ? why[g] : "nodes";
                        }
        }
        r = -ENOSPC;
out:
        free(cnt);
        free(why);
        free(scratch);
        free(chosen);
        groups_free(&gs);
        return r;
}

bool gp_gang_fits_empty(struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                        bool spread)
{
        double *nic = calloc(c->n_nodes + 1, sizeof(double));
        int *gpus = calloc(c->n_nodes + 1, sizeof(int));
        double *up = calloc(c->n_leaves + 1, sizeof(double));
        double *be = calloc(c->n_backends + 1, sizeof(double));
        struct gp_charge *ch = calloc(k > 0 ? k : 1, sizeof(*ch));
        bool fits = true; /* out of memory: do not call it oversize */

        if (nic && gpus && up && be && ch) {
                for (size_t i = 0; i < c->n_nodes; i++) {
                        nic[i] = c->nodes[i].nic_used;
                        gpus[i] = c->nodes[i].gpus_used;
                        c->nodes[i].nic_used = 0;
                        c->nodes[i].gpus_used = 0;
                }
                for (size_t i = 0; i < c->n_leaves; i++) {
                        up[i] = c->leaves[i].uplink_used;
                        c->leaves[i].uplink_used = 0;
                }
                for (size_t i = 0; i < c->n_backends; i++) {
                        be[i] = c->backends[i].used;
                        c->backends[i].used = 0;
                }
                /* the plan's charges are overwritten by the restore below;
                 * a backend's live state says nothing of the gang's size */
                c->nominal_only = true;
                fits = gp_gang_plan(c, d, k, NULL, -1, spread, ch, NULL) != -ENOSPC;
                c->nominal_only = false;
                for (size_t i = 0; i < c->n_nodes; i++) {
                        c->nodes[i].nic_used = nic[i];
                        c->nodes[i].gpus_used = gpus[i];
                }
                for (size_t i = 0; i < c->n_leaves; i++)
                        c->leaves[i].uplink_used = up[i];
                for (size_t i = 0; i < c->n_backends; i++)
                        c->backends[i].used = be[i];
        }
        free(nic);
        free(gpus);
        free(up);
        free(be);
        free(ch);
        return fits;
}
