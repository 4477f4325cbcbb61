/*
 * The axis orders of the torus all-gather family and the split of the data
 * between them (allgather_torus.c, allgather_tree.c): which ICI axes take part,
 * their orders (the rotations, then over three axes the other permutations),
 * the share of each order that balances the axes' loads (a small linear
 * program), and the estimate's split among the rotations for a pipeline depth.
 *
 * Cost model (W: bidirectional bandwidth of one link; f_a = 1 for a wrapped axis
 * and 1/2 for an open one): the load of axis a is sum_r frac_r * (prod of the
 * sizes gathered before a in order r) * (n_a - 1) / f_a in bytes per byte of
 * block over W; balanced, the most loaded axis carries (N-1)/N V / (W sum f).
 */
#include "allgather_orders.h"

#include <string.h>

/* Axes that take part: ICI axes of the mask with at least 2 chips. */
int tpu__allgather_axes(const tpu_topo_t *topo, unsigned mask, int *axes)
{
    int a, d = 0;

    for (a = 0; a < topo->naxes; a++) {
        if ((mask & (1u << a)) && topo->dims[a] >= 2) {
            axes[d++] = a;
        }
    }
    return d;
}

/* Ring steps of one axis: floor(n/2) when it wraps, n-1 when it is open. */
static int axis_steps(const tpu_topo_t *topo, int a)
{
    return topo->wrap[a] ? topo->dims[a] / 2 : topo->dims[a] - 1;
}

/* Bytes moved per byte of item by one 1D all-gather, in units of 1/W. */
static double axis_tau(const tpu_topo_t *topo, int a)
{
    return (topo->dims[a] - 1) / (topo->wrap[a] ? 1.0 : 0.5);
}

/*
 * The axis orders of a torus all-gather over d axes, as indices into axes[]:
 * the d rotations first (x-y-z, y-z-x, z-x-y), then over three axes the other
 * three permutations (x-z-y, z-y-x, y-x-z).  Returns how many.
 */
int tpu__allgather_axis_orders(int d, int ord[TPU_MAX_ORDERS][TPU_MAX_AXES])
{
    static const int rest[3][3] = {{0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    int r, j, n = 0;

    for (r = 0; r < d; r++) {
        for (j = 0; j < d; j++) {
            ord[n][j] = (r + j) % d;
        }
        n++;
    }
    for (r = 0; d == 3 && r < 3; r++) {
        memcpy(ord[n++], rest[r], sizeof(rest[r]));
    }
    return n;
}

/* load[a][r]: bytes per byte of item that order r puts on axis a, in units of 1/W. */
static void order_loads(const tpu_topo_t *topo, const int *axes, int d, int nord,
                        int ord[TPU_MAX_ORDERS][TPU_MAX_AXES],
                        double load[TPU_MAX_AXES][TPU_MAX_ORDERS])
{
    int r, j;

    for (r = 0; r < nord; r++) {
        double prod = 1;

        for (j = 0; j < d; j++) {
            int a = ord[r][j];

            load[a][r] = prod * axis_tau(topo, axes[a]);
            prod *= topo->dims[axes[a]];
        }
    }
}

/* Solve the n x n system m (augmented, column n) in place; 0 if it is singular. */
static int solve_system(double m[TPU_MAX_AXES + 1][TPU_MAX_AXES + 2], int n, double *x)
{
    int i, j, k;

    for (k = 0; k < n; k++) {
        int piv = k;

        for (i = k + 1; i < n; i++) {
            if ((m[i][k] < 0 ? -m[i][k] : m[i][k]) > (m[piv][k] < 0 ? -m[piv][k] : m[piv][k])) {
                piv = i;
            }
        }
        if ((m[piv][k] < 0 ? -m[piv][k] : m[piv][k]) < 1e-12) {
            return 0;
        }
        for (j = 0; j <= n; j++) {
            double t = m[k][j];

            m[k][j] = m[piv][j];
            m[piv][j] = t;
        }
        for (i = 0; i < n; i++) {
            if (i != k) {
                double f = m[i][k] / m[k][k];

                for (j = k; j <= n; j++) {
                    m[i][j] -= f * m[k][j];
                }
            }
        }
    }
    for (i = 0; i < n; i++) {
        x[i] = m[i][n] / m[i][i];
    }
    return 1;
}

/*
 * The shares of the orders that minimise the load of the most loaded axis (in
 * units of 1/W, so an axis' load is proportional to its time at its bandwidth
 * W f_a): a linear program, min t over shares s >= 0 summing to 1 with
 * sum_r s_r load[a][r] <= t on every axis.  An optimal vertex has as many
 * orders with a share as axes at t, so every choice of m orders and m axes (m =
 * 1..d) is solved with those axes at t, and the best feasible one kept (ties:
 * the first found, rotations before the other orders).  At its optimum the
 * axes carry loads proportional to their bandwidths wherever the orders can do
 * that: the formula's (N-1)/N V / (W sum f_a) is reached in bandwidth terms.
 * Returns the most loaded axis' load.
 */
static double balance_orders(int d, int nord, double load[TPU_MAX_AXES][TPU_MAX_ORDERS],
                             double *frac)
{
    double best = -1;
    int m, so, sa;

    for (m = 1; m <= d; m++) {
        for (so = 0; so < (1 << nord); so++) {
            int ro[TPU_MAX_AXES], ra[TPU_MAX_AXES], no = 0, na, r, i, j, ok;

            if (__builtin_popcount((unsigned)so) != m) {
                continue;
            }
            for (r = 0; r < nord; r++) {
                if (so & (1 << r)) {
                    ro[no++] = r;
                }
            }
            for (sa = 0; sa < (1 << d); sa++) {
                double mat[TPU_MAX_AXES + 1][TPU_MAX_AXES + 2], x[TPU_MAX_AXES + 1], t,
                    f[TPU_MAX_ORDERS];

                if (__builtin_popcount((unsigned)sa) != m) {
                    continue;
                }
                for (na = 0, i = 0; i < d; i++) {
                    if (sa & (1 << i)) {
                        ra[na++] = i;
                    }
                }
                /* Unknowns: the m shares, then t.  Rows: m tight axes, sum = 1. */
                for (i = 0; i < m; i++) {
                    for (j = 0; j < m; j++) {
                        mat[i][j] = load[ra[i]][ro[j]];
                    }
                    mat[i][m] = -1;
                    mat[i][m + 1] = 0;
                }
                for (j = 0; j < m; j++) {
                    mat[m][j] = 1;
                }
                mat[m][m] = 0;
                mat[m][m + 1] = 1;
                if (!solve_system(mat, m + 1, x)) {
                    continue;
                }
                memset(f, 0, sizeof(f));
                for (ok = 1, j = 0; j < m; j++) {
                    ok = ok && x[j] >= -1e-12;
                    f[ro[j]] = x[j] < 0 ? 0 : x[j];
                }
                for (t = 0, i = 0; ok && i < d; i++) {
                    double l = 0;

                    for (r = 0; r < nord; r++) {
                        l += f[r] * load[i][r];
                    }
                    t = l > t ? l : t;
                }
                if (ok && (best < 0 || t < best * (1 - 1e-9))) {
                    best = t;
                    memcpy(frac, f, sizeof(f));
                }
            }
        }
    }
    return best;
}

/*
 * Fractions of the data for each rotation of the axis order, such that every
 * axis carries the same load.  Falls back to equal parts if the system has no
 * non-negative solution.
 */
static void solve_fractions(const tpu_topo_t *topo, const int *axes, int d, double *frac)
{
    double m[TPU_MAX_AXES][TPU_MAX_AXES + 1];
    double load[TPU_MAX_AXES][TPU_MAX_AXES];
    int r, i, j, k, ok = 1;

    for (r = 0; r < d; r++) {
        double prod = 1;

        for (j = 0; j < d; j++) {
            int a = (r + j) % d; /* index into axes */

            load[a][r] = prod * axis_tau(topo, axes[a]);
            prod *= topo->dims[axes[a]];
        }
    }
    for (i = 0; i < d; i++) {
        for (r = 0; r < d; r++) {
            m[i][r] = i < d - 1 ? load[i][r] - load[i + 1][r] : 1.0;
        }
        m[i][d] = i < d - 1 ? 0.0 : 1.0;
    }
    for (k = 0; k < d && ok; k++) {
        int piv = k;

        for (i = k + 1; i < d; i++) {
            double a = m[i][k] < 0 ? -m[i][k] : m[i][k];
            double b = m[piv][k] < 0 ? -m[piv][k] : m[piv][k];

            if (a > b) {
                piv = i;
            }
        }
        if (m[piv][k] == 0) {
            ok = 0;
            break;
        }
        for (j = 0; j <= d; j++) {
            double t = m[k][j];

            m[k][j] = m[piv][j];
            m[piv][j] = t;
        }
        for (i = 0; i < d; i++) {
            if (i != k) {
                double f = m[i][k] / m[k][k];

                for (j = k; j <= d; j++) {
                    m[i][j] -= f * m[k][j];
                }
            }
        }
    }
    for (r = 0; r < d && ok; r++) {
        frac[r] = m[r][d] / m[r][r];
        ok = frac[r] >= 0;
    }
    if (!ok) {
        for (r = 0; r < d; r++) {
            frac[r] = 1.0 / d;
        }
    }
}

/*
 * An estimate of the time of the split 'frac' between the 'nord' orders 'ord'
 * with 'K' chunks, in seconds.  Phase j of order r moves its items in
 * axis_steps() ring steps: bw(r, j) = frac_r x (blocks gathered before) x tau x
 * block / W of bytes time, steps x alpha of hops.  The phases of the orders
 * advance in windows (phase j of every order in window j); in a window an axis
 * carries the phases of every order that is on it there, and the first chunk's
 * window lasts as long as its busiest axis (bw / K + hops); the other K - 1
 * chunks follow at the rate of the busiest axis, whose links carry every
 * window's phases of a chunk (the sum of its bw / K, or its ports' message
 * starts if they take longer); never below the load of the most loaded axis.
 * The rotations always count (their phases hold every axis in every window); the
 * other orders only where they have a share.
 */
static double split_estimate(const tpu_algo_args_t *args, const int *axes, int d, int nord,
                             int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], int K, const double *frac)
{
    const tpu_topo_t *topo = args->topo;
    const tpu_link_model_t *link = args->link;
    double eff = link->ici_efficiency > 0 ? link->ici_efficiency : 1;
    double unit = (double)args->shard / (link->ici_bw * eff);
    double wbw[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}}, wmsg[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}};
    double tot[TPU_MAX_AXES] = {0}, rate = 0, t = 0;
    int on[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}};
    int r, j, a;

    for (r = 0; r < nord; r++) {
        double prod = 1;

        if (r >= d && frac[r] <= 0) {
            continue;
        }
        for (j = 0; j < d; j++) {
            int steps;
            double bw;

            a = ord[r][j];
            steps = axis_steps(topo, axes[a]);
            bw = frac[r] * prod * axis_tau(topo, axes[a]) * unit;
            wbw[j][a] += bw / K;
            wmsg[j][a] += steps * link->msg_cost;
            on[j][a] = 1;
            tot[a] += bw;
            prod *= topo->dims[axes[a]];
        }
    }
    for (j = 0; j < d; j++) {
        double win = 0;

        for (a = 0; a < d; a++) {
            double chunk = wbw[j][a] + axis_steps(topo, axes[a]) * link->ici_latency;

            if (!on[j][a]) {
                continue;
            }
            win = chunk > win ? chunk : win;
        }
        t += win;
    }
    /* The other chunks follow at the rate of the busiest axis: its links carry
     * every window's phases of a chunk, and its ports start them (the starts
     * overlap the bytes, linkmodel.c). */
    for (a = 0; a < d; a++) {
        double bw = 0, msg = 0;

        for (j = 0; j < d; j++) {
            bw += wbw[j][a];
            msg += on[j][a] ? wmsg[j][a] : 0;
        }
        bw = bw > msg ? bw : msg;
        rate = bw > rate ? bw : rate;
    }
    t += (K - 1) * rate;
    for (a = 0; a < d; a++) {
        t = tot[a] > t ? tot[a] : t;
    }
    return t;
}

/*
 * The split between the rotations of the axis order (the estimate's choice, when
 * select.c asks for no other): the fractions that minimise split_estimate() for
 * K chunks, over the equal-load split of solve_fractions() and a grid of the
 * simplex (steps of 1/SPLIT_GRID).  With unequal or open axes the phases of the
 * orders differ in length (bytes and ring steps); equal loads keep every link
 * busy only if the chunks overlap the phases completely, and a shallow pipeline
 * does better with the data split so that the phases of a window end together.
 */
#define SPLIT_GRID 120
void tpu__allgather_choose_split(const tpu_algo_args_t *args, const int *axes, int d, int nord,
                                 int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], int K, double *frac)
{
    double best, f[TPU_MAX_ORDERS] = {0};
    int i, j;

    solve_fractions(args->topo, axes, d, frac);
    best = split_estimate(args, axes, d, nord, ord, K, frac);
    for (i = 0; i <= SPLIT_GRID; i++) {
        for (j = 0; j <= (d == 3 ? SPLIT_GRID - i : 0); j++) {
            double t;

            f[0] = (double)i / SPLIT_GRID;
            f[1] = d == 3 ? (double)j / SPLIT_GRID : 1 - f[0];
            f[2] = d == 3 ? 1 - f[0] - f[1] : 0;
            t = split_estimate(args, axes, d, nord, ord, K, f);
            if (t < best) {
                best = t;
                memcpy(frac, f, sizeof(f));
            }
        }
    }
}


int64_t tpu__allgather_part(int r, int last, const double *frac, int64_t elems, int64_t done)
{
    int64_t part = (int64_t)(frac[r] * (double)elems + 0.5);

    if (r > last) {
        return 0;
    }
    return r == last || part > elems - done ? elems - done : part;
}

int tpu__allgather_orders(const tpu_topo_t *topo, unsigned mask, int *axes, int *d_p,
                          int ord[][TPU_MAX_AXES])
{
    *d_p = tpu__allgather_axes(topo, mask, axes);
    return tpu__allgather_axis_orders(*d_p, ord);
}

double tpu__allgather_balance(const tpu_topo_t *topo, const int *axes, int d, int nord,
                              int ord[][TPU_MAX_AXES], double *frac)
{
    double load[TPU_MAX_AXES][TPU_MAX_ORDERS];

    order_loads(topo, axes, d, nord, ord, load);
    return balance_orders(d, nord, load, frac);
}

int tpu__allgather_steps(const tpu_topo_t *topo, int axis)
{
    return axis_steps(topo, axis);
}
