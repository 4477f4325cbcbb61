/*
 * All-gather over any groups of chips: a bidirectional ring over the members in
 * group order, each ring hop routed over the torus.
 *
 * What it does.  The groups are lists of chips (tpu/groups.h): parts of an axis,
 * strided sets, several axes in a non-torus order, chips of several slices.  The
 * members of a group form a ring in member order, 0 -> 1 -> ... -> G-1 -> 0, and
 * every member ends with all G blocks, block k at k * B.  At step t (1 to
 * floor(G/2)) member i sends to member i+1 the block it got from member i-1 at
 * step t-1 (its own at t = 1), and to member i-1 the block it got from member
 * i+1; on an even ring the block from the opposite member is split at the last
 * step, its first half going forwards and its second half backwards, so every
 * block arrives exactly once.  A ring hop between members is a dimension-order
 * route on the torus (x, then y, then z, each the shortest way; at the tie
 * distance forward hops take +, backward hops -); between slices it crosses DCN
 * to the chip with the same coordinates, then ICI.  The schedule covers every
 * group at once, so groups that share links share their bandwidth, and a ring
 * hop that runs back along a line (the hop that closes the ring of a part of an
 * open axis) shares the links of the hops going the other way.
 *
 * Cost model (B = V/G bytes per block, W the bidirectional bandwidth of a link,
 * alpha the per-hop latency, h the hops of a ring hop, L the largest number of
 * ring hops of one step that cross one directed link):
 *
 *     T ~ sum over steps of (h_max * alpha + L * b_t / (W/2)),  b_t = B (B/2 at the half step)
 *
 * A ring whose hops are single links none of which two hops share (a whole
 * wrapped axis, or the same rings in every row) gives L = 1 and h = 1:
 *     T = (G-1)/G * V/W + floor(G/2) * alpha,
 * the torus ring's time.  A part of an open line (G chips in a row) has L = 2:
 * the hop G-1 -> 0 runs back over the links of the backward hops, so the time is
 * about twice that: the "no wraparound" factor of 2 falls out of the link
 * sharing.  Worked case (tests): a group of 4 consecutive chips on a line,
 * T = 4 alpha + 6B/W (step 1: 1-hop flows at alpha + 4B/W, the 3-hop closing
 * hops at 3 alpha + 4B/W; step 2, half blocks: 3 alpha + 4B/W + alpha + 2B/W).
 *
 * Restrictions: V divides into G blocks of whole elements (checked by the plan).
 * Not pipelined.  Across slices a ring hop between members of different slices
 * crosses DCN; there is no hierarchical split (the torus algorithms do that for
 * the whole 'dcn' axis).  Symmetric groups (tpu_groups_period; along an open axis,
 * groups that repeat within windows of the period, plan.c) are built and timed
 * from the chips of one domain of their translations (orbit mode, linkmodel.h).  Source: Patarasuk
 * and Yuan (bandwidth optimal all-reduce, JPDC 2009) for the ring; the route and the sharing are
 * tpuemu's link model.
 *
 * The model schedule (args->compact, a ring of 8 members or more) holds steps 1,
 * 2 and T only: every step moves the same blocks' bytes over the same routes, so
 * step 2 stands for steps 2 to T - 1 and the walk runs it T - 2 times
 * (timing_repeat.c), each run from the one before, exactly as the walk of every
 * step: 6 flows per chip of the model instead of G.  On the 8,960-chip v5p pods
 * over x,y,z at 1,174,405,120 bytes (B = 131,072) every link carries one flow a
 * step on the wrapped and mixed pods and at most two (a row's hops and the hop
 * that closes the next row, running back along it) on the open one, all starting
 * together: steps of B/(W/2) and 2B/(W/2), 11,171.7 us wrapped, 11,315.7 us mixed
 * (the hops that close a y line cross 19 open links), 22,013.5 us open.
 *
 * Steps for a group {0, 2, 5, 7} (member order), B = one block ([m] = block of
 * member m), ring 0 -> 2 -> 5 -> 7 -> 0:
 *
 *   step   chip0          chip2          chip5          chip7
 *    1   [0]->2,[0]->7  [1]->5,[1]->0  [2]->7,[2]->2  [3]->0,[3]->5
 *    2   [3]a->2        [0]a->5        [1]a->7        [2]a->0     (a: first half, forward)
 *        [1]b->7        [2]b->0        [3]b->2        [0]b->5     (b: second half, backward)
 */
#include "allgather_group_ring.h"

#include "algo.h"
#include "alloc.h"
#include "group_args.h"

#include <string.h>

tpu_status_t tpu__ring_allgather(const tpu_algo_args_t *args, const tpu_groups_t *gr,
                                 const int32_t *blk, tpu_sched_t *sched)
{
    const tpu_topo_t *topo = args->topo;
    int32_t *prev = NULL, *cur = NULL, *tmp;
    uint8_t *built = NULL; /* per chip: its flows are built (a chip of the domain) */
    int64_t B = args->shard, e = args->shard / args->elem, h1 = (e + 1) / 2;
    int G = gr->size, T = G / 2, t, g, i, di, k, nk;
    int steps[3] = {1, 2, T}; /* the compact form's steps (args->compact) */
    tpu_status_t status;

    status = tpu__algo_user_layout(sched, B, G);
    if (status != TPU_OK) {
        goto out;
    }
    prev = tpu__malloc((size_t)topo->nchips * 2 * sizeof(int32_t));
    cur = tpu__malloc((size_t)topo->nchips * 2 * sizeof(int32_t));
    built = tpu__malloc((size_t)topo->nchips);
    if (prev == NULL || cur == NULL || built == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    for (i = 0; i < topo->nchips; i++) {
        built[i] = (uint8_t)tpu__algo_in_domain(args, i);
    }
    /* Every step, or (compact) steps 1, 2 and T: step 2 then stands for steps 2 to
     * T - 1, which repeat it (timing_repeat.c). */
    nk = args->compact && T >= 4 ? 3 : T;
    for (k = 0; k < nk && status == TPU_OK; k++) {
        int half, sh;

        t = nk == 3 ? steps[k] : k + 1;
        half = G % 2 == 0 && t == G / 2;
        sh = (t - 1) % G;

        for (g = 0; g < gr->ngroups && status == TPU_OK; g++) {
            const int32_t *m = gr->chips + (int64_t)g * G;

            for (i = 0; i < G && status == TPU_OK; i++) {
                for (di = 0; di < 2; di++) {
                    /* Member indices modulo G by a comparison (each sum is within one
                     * G of [0, G)): the loop visits every member of every step. */
                    int dir = di == 0 ? 1 : -1, jn = i + dir, jp = i - dir, origin;
                    int src = m[i], dst, pred;
                    tpu_flow_t f;
                    int64_t idx;

                    jn = jn == G ? 0 : jn < 0 ? G - 1 : jn;
                    dst = m[jn];
                    cur[src * 2 + di] = -1;
                    if (!built[src] ||
                        (args->local != NULL && !args->local[src] && !args->local[dst])) {
                        continue;
                    }
                    jp = jp == G ? 0 : jp < 0 ? G - 1 : jp;
                    pred = m[jp];
                    origin = i - dir * sh; /* (i - dir (t - 1)) mod G */
                    origin += origin < 0 ? G : origin >= G ? -G : 0;
                    memset(&f, 0, sizeof(f));
                    f.src = src;
                    f.dst = dst;
                    f.step = k;
                    f.kind = tpu_topo_slice_of(topo, src) != tpu_topo_slice_of(topo, dst)
                                 ? TPU_ROUTE_DCN
                                 : TPU_ROUTE_ICI;
                    f.tie = (int8_t)dir;
                    f.span.off = (int64_t)(blk != NULL ? blk[origin] : origin) * B;
                    f.span.len = B;
                    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
                    if (half) {
                        if (dir > 0) {
                            f.span.len = h1 * args->elem;
                        } else {
                            f.span.off += h1 * args->elem;
                            f.span.len = (e - h1) * args->elem;
                        }
                    }
                    f.span.dst_off = f.span.off;
                    cur[src * 2 + di] = -1;
                    if (f.span.len == 0) {
                        continue;
                    }
                    idx = tpu__sched_add(sched, &f);
                    if (idx < 0) {
                        status = TPU_ERR_NO_MEMORY;
                        break;
                    }
                    /* The block came from the predecessor at the step before (from the
                     * chip of the domain that stands for it, in orbit mode). */
                    pred = tpu__algo_canon(args, pred);
                    if (k > 0 && prev[pred * 2 + di] >= 0) {
                        status = tpu__sched_add_deps(sched, idx, &prev[pred * 2 + di], 1);
                        if (status != TPU_OK) {
                            break;
                        }
                    }
                    cur[src * 2 + di] = (int32_t)idx;
                }
            }
        }
        tmp = prev;
        prev = cur;
        cur = tmp;
    }
    sched->nsteps = nk;
    sched->nstreams = 1;
out:
    tpu__free(built);
    tpu__free(prev);
    tpu__free(cur);
    return status;
}

tpu_status_t tpu__algo_ALL_GATHER_group_ring(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                             tpu_err_t *err)
{
    tpu_algo_groups_t ag;
    tpu_status_t status;

    status = tpu__algo_groups(args, &ag, err);
    if (status != TPU_OK) {
        return status;
    }
    status = tpu__ring_allgather(args, ag.gr, NULL, sched);
    tpu__algo_groups_fini(&ag);
    return status;
}
