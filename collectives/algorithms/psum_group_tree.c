/*
 * psum over any groups of chips: a binomial tree over the members in group
 * order, reducing the whole buffer up to member 0, then broadcasting it back
 * down the same tree.  2 ceil(log2 G) steps and 2 (G - 1) flows per group: the
 * plan grows like the number of chips, not like G^2 as the ring's and the
 * direct algorithms' do, for large groups of small buffers (a loss psum over
 * thousands of chips).
 *
 * What it does.  L = ceil(log2 G).  Reduce, step s = 0 .. L-1: member i whose
 * index is an odd multiple of 2^s sends its whole buffer (its own data plus
 * the partial sums its children sent at the steps before) to member i - 2^s,
 * which adds it in.  Broadcast, step L + (L-1-k) for k = L-1 .. 0: member i, a
 * multiple of 2^(k+1) with i + 2^k < G, sends the reduced buffer to member
 * i + 2^k, which copies it.  Every hop is a dimension-order route on the torus
 * (allgather_group_ring.c), over DCN between slices; a member sends once it has
 * every arrival of the steps before (its dependencies), and the broadcast starts
 * once the reduction has ended (a barrier: its root's last arrival is the last
 * of the reduction anyway).
 *
 * Cost model (V the padded buffer, W the bidirectional bandwidth of a link, so
 * W/2 one way, alpha the per-hop latency).  The walk's time is the bytes' time,
 * links shared, plus the hop latency of the deepest dependency chain
 * (timing.c).  Every member's edge up carries V; the root takes L of them in
 * turn and sends L, so on one link into and out of the root
 *
 *     T ~ 2 L V / (W/2) + 2 H alpha,
 *
 * H the most hops of a path up the tree (from a leaf to the root, the sum of
 * its edges' routes).  Edges of a level that share links queue behind each
 * other, which the walk charges.  Worked cases (tests): a group of 4 chips on an
 * open line, members in line order, T = 4 V/(W/2) + 6 alpha
 * (deepest chain 3 -> 2 -> 0 -> 2 -> 3); 6 chips, 6 V/(W/2) + 10 alpha (the
 * chain 5 -> 4 -> 0 -> 4 -> 5; the edge 4 -> 0 waits behind 2 -> 0 on the links
 * they share).  The ring psum moves 2 (G-1)/G V per member over 2 floor(G/2)
 * dependent steps: the tree wins where latency dominates (few bytes, many
 * members), the ring where bandwidth does; the selector times both.
 *
 * Restrictions: none on V beyond whole elements (padding to G blocks, as the
 * other group psums).  Not pipelined.  Symmetric groups (tpu_groups_period) are
 * built from the chips of one domain of their translations (orbit mode).
 * Source: the binomial-tree reduce and broadcast of MPI implementations (Thakur,
 * Rabenseifner and Gropp, "Optimization of collective communication operations
 * in MPICH", IJHPCA 2005).
 *
 * Steps, G = 6 (members 0..5):
 *   reduce     step 0: 1->0  3->2  5->4     step 1: 2->0     step 2: 4->0
 *   broadcast  step 3: 0->4                 step 4: 0->2     step 5: 0->1  2->3  4->5
 */
#include "algo.h"
#include "alloc.h"
#include "group_args.h"

#include <string.h>

/* The number of tree levels, ceil(log2 g). */
static int levels(int g)
{
    int l = 0;

    while ((1 << l) < g) {
        l++;
    }
    return l;
}

/* The trailing zero bits of i > 0 (the step at which member i sends up). */
static int low_bit(int i)
{
    int k = 0;

    while ((i & (1 << k)) == 0) {
        k++;
    }
    return k;
}

/* Add the flow of the whole buffer from member i to member j of group 'm', or -2
 * when it is not built here (not of the domain, not of a local chip); -1 when out
 * of memory. */
static int64_t add_edge(const tpu_algo_args_t *args, tpu_sched_t *sched, const int32_t *m, int i,
                        int j, int step, int reduce, int64_t len)
{
    const tpu_topo_t *topo = args->topo;
    tpu_flow_t f;

    if (!tpu__algo_in_domain(args, m[i]) ||
        (args->local != NULL && !args->local[m[i]] && !args->local[m[j]])) {
        return -2;
    }
    memset(&f, 0, sizeof(f));
    f.src = m[i];
    f.dst = m[j];
    f.step = step;
    f.reduce = (uint8_t)reduce;
    f.kind = tpu_topo_slice_of(topo, f.src) != tpu_topo_slice_of(topo, f.dst) ? TPU_ROUTE_DCN
                                                                              : TPU_ROUTE_ICI;
    f.tie = (int8_t)(j > i ? 1 : -1);
    f.span.len = len;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    return tpu__sched_add(sched, &f);
}

tpu_status_t tpu__algo_PSUM_group_tree(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                       tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    tpu_algo_groups_t ag;
    int32_t *up = NULL, *down = NULL, deps[32];
    int G, L, g, i, k, s, nd;
    int64_t len, idx;
    tpu_status_t status;

    status = tpu__algo_groups(args, &ag, err);
    if (status != TPU_OK) {
        return status;
    }
    G = ag.gr->size;
    L = levels(G);
    len = args->shard * G;
    status = tpu__algo_user_layout(sched, args->shard, G);
    /* Per chip: its flow up (reduce), and its flows down by level (broadcast). */
    up = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    down = tpu__malloc((size_t)topo->nchips * (size_t)(L > 0 ? L : 1) * sizeof(int32_t));
    if (status == TPU_OK && (up == NULL || down == NULL)) {
        status = TPU_ERR_NO_MEMORY;
    }
    for (i = 0; status == TPU_OK && i < topo->nchips; i++) {
        up[i] = -1;
        for (k = 0; k < L; k++) {
            down[(int64_t)i * L + k] = -1;
        }
    }
    /* Reduce: the members that are odd multiples of 2^s send up at step s, after the
     * arrivals from their children (the members i + 2^k, k < s). */
    for (s = 0; s < L && status == TPU_OK; s++) {
        for (g = 0; g < ag.gr->ngroups && status == TPU_OK; g++) {
            const int32_t *m = ag.gr->chips + (int64_t)g * G;

            for (i = 1 << s; i < G && status == TPU_OK; i += 2 << s) {
                idx = add_edge(args, sched, m, i, i - (1 << s), s, 1, len);
                if (idx == -2) {
                    continue;
                }
                if (idx < 0) {
                    status = TPU_ERR_NO_MEMORY;
                    break;
                }
                for (k = 0, nd = 0; k < s && i + (1 << k) < G; k++) {
                    int c = tpu__algo_canon(args, m[i + (1 << k)]);

                    if (up[c] >= 0) {
                        deps[nd++] = up[c];
                    }
                }
                up[m[i]] = (int32_t)idx;
                status = nd > 0 ? tpu__sched_add_deps(sched, idx, deps, nd) : TPU_OK;
            }
        }
    }
    /* Broadcast, the levels in reverse: member i (a multiple of 2^(k+1)) sends down to
     * i + 2^k after its own arrival (the root: after all its children's). */
    for (k = L - 1; k >= 0 && status == TPU_OK; k--) {
        for (g = 0; g < ag.gr->ngroups && status == TPU_OK; g++) {
            const int32_t *m = ag.gr->chips + (int64_t)g * G;

            for (i = 0; i + (1 << k) < G && status == TPU_OK; i += 2 << k) {
                int c, j;

                idx = add_edge(args, sched, m, i, i + (1 << k), L + (L - 1 - k), 0, len);
                if (idx == -2) {
                    continue;
                }
                if (idx < 0) {
                    status = TPU_ERR_NO_MEMORY;
                    break;
                }
                nd = 0;
                if (i == 0) {
                    for (j = 0; j < L && (1 << j) < G; j++) {
                        c = tpu__algo_canon(args, m[1 << j]);
                        if (up[c] >= 0) {
                            deps[nd++] = up[c];
                        }
                    }
                } else {
                    /* The flow into i came from i - 2^t, t = low_bit(i), at level t. */
                    c = tpu__algo_canon(args, m[i - (1 << low_bit(i))]);
                    if (down[(int64_t)c * L + low_bit(i)] >= 0) {
                        deps[nd++] = down[(int64_t)c * L + low_bit(i)];
                    }
                }
                down[(int64_t)m[i] * L + k] = (int32_t)idx;
                status = nd > 0 ? tpu__sched_add_deps(sched, idx, deps, nd) : TPU_OK;
            }
        }
    }
    if (status == TPU_OK) {
        sched->nsteps = 2 * L;
        sched->nstreams = 1;
        sched->barrier = L;
        status = tpu__sched_sort(sched);
    }
    tpu__free(up);
    tpu__free(down);
    tpu__algo_groups_fini(&ag);
    return status;
}
