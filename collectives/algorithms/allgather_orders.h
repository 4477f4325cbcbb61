/*
 * The axis orders of the torus all-gather family and the split of the data
 * between them (allgather_orders.c).
 */
#ifndef TPU_ALLGATHER_ORDERS_H
#define TPU_ALLGATHER_ORDERS_H

#include "tpu/topo.h"

#include "algo.h"

#include <stdint.h>

/* The most axis orders of the torus family: every permutation of three axes. */
#define TPU_MAX_ORDERS 6

/* The axes that take part: ICI axes of 'mask' with at least 2 chips, into 'axes';
 * returns how many. */
int tpu__allgather_axes(const tpu_topo_t *topo, unsigned mask, int *axes);

/*
 * The axis orders of a torus all-gather over d axes, as indices into axes[]:
 * the d rotations first (x-y-z, y-z-x, z-x-y), then over three axes the other
 * three permutations (x-z-y, z-y-x, y-x-z).  Returns how many.
 */
int tpu__allgather_axis_orders(int d, int ord[TPU_MAX_ORDERS][TPU_MAX_AXES]);

/*
 * The ICI axes of 'mask' with two chips or more into 'axes' ('*d_p' of them) and
 * their axis orders into 'ord' (the d rotations first, then over three axes the
 * other three permutations), as indices into 'axes'; returns how many orders.
 */
int tpu__allgather_orders(const tpu_topo_t *topo, unsigned mask, int *axes, int *d_p,
                          int ord[][TPU_MAX_AXES]);

/*
 * The shares of the 'nord' orders that load every axis in proportion to its
 * bandwidth where the orders can (a linear program: minimise the most loaded
 * axis); 'frac' gets TPU_MAX_ORDERS shares, at most d of them above 0.  Returns
 * the most loaded axis' load, or -1 if none is feasible ('frac' untouched).
 */
double tpu__allgather_balance(const tpu_topo_t *topo, const int *axes, int d, int nord,
                              int ord[][TPU_MAX_AXES], double *frac);

/*
 * The split between the first 'nord' orders (the rotations) that minimises the
 * estimate of the time for 'K' chunks, into 'frac'.
 */
void tpu__allgather_choose_split(const tpu_algo_args_t *args, const int *axes, int d, int nord,
                                 int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], int K, double *frac);

/*
 * Elements of order 'r' when 'done' of 'elems' are taken by the orders before it:
 * its share 'frac[r]' rounded, the rest for order 'last', none after it.
 */
int64_t tpu__allgather_part(int r, int last, const double *frac, int64_t elems, int64_t done);

/* Ring steps of axis 'axis': floor(n/2) when it wraps, n-1 when it is open. */
int tpu__allgather_steps(const tpu_topo_t *topo, int axis);

#endif /* TPU_ALLGATHER_ORDERS_H */
