/*
 * bench's baseline (--compare-mpi): the host MPI library's own collective on the
 * same bytes over the same groups as tpuemu's, timed call by call.
 */
#include "bench_mpi.h"

#include "tpu/dtype.h"

#include "clock.h"

#include <stdint.h>

static MPI_Datatype mpi_type(tpu_dtype_t d)
{
    return d == TPU_DTYPE_I32 ? MPI_INT : d == TPU_DTYPE_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

/*
 * bf16 reductions for the MPI baseline: MPI has no bf16 type, so a user reduces
 * 16-bit words with an operation of their own.  Each step widens both operands,
 * combines them in f32 and rounds to bf16 (what a user operation on bf16 words
 * does; tpuemu accumulates in f32 and rounds once, so the two may differ in the
 * last bit: the baseline's result is never checked, only timed).
 */
#define BF16_OP(name, expr)                                                         \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)           \
    {                                                                               \
        const uint16_t *a = in;                                                     \
        uint16_t *b = inout;                                                        \
        int i;                                                                      \
                                                                                    \
        (void)type;                                                                 \
        for (i = 0; i < *len; i++) {                                                \
            float x = tpu_dtype_bf16_to_f32(a[i]), y = tpu_dtype_bf16_to_f32(b[i]); \
                                                                                    \
            b[i] = tpu_dtype_f32_to_bf16(expr);                                     \
        }                                                                           \
    }
BF16_OP(bf16_sum, x + y)
BF16_OP(bf16_max, x > y ? x : y)
BF16_OP(bf16_min, x < y ? x : y)
#undef BF16_OP

/* The MPI operation of a reduction; a user-defined one for bf16 (free it after). */
static MPI_Op mpi_op(tpu_redop_t op, tpu_dtype_t d)
{
    MPI_Op user = MPI_OP_NULL;

    if (d == TPU_DTYPE_BF16) {
        MPI_Op_create(op == TPU_REDOP_MAX   ? bf16_max
                      : op == TPU_REDOP_MIN ? bf16_min
                                            : bf16_sum,
                      1, &user);
        return user;
    }
    return op == TPU_REDOP_MAX ? MPI_MAX : op == TPU_REDOP_MIN ? MPI_MIN : MPI_SUM;
}

/* A group communicator per collective group, for the host MPI baseline. */
MPI_Comm app_bench_group_comm(app_job_t *job, const tpu_coll_desc_t *d)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    MPI_Comm group;

    if (d->kind == TPU_COLL_P2P) {
        /* The pair, the source first; the other ranks get MPI_COMM_NULL. */
        int in = job->chip == d->src || job->chip == d->dst;

        MPI_Comm_split(job->comm, in ? 0 : MPI_UNDEFINED, job->chip == d->src ? 0 : 1, &group);
        return group;
    }
    MPI_Comm_split(job->comm, tpu_topo_group_member(t, d->axes, job->chip, 0),
                   tpu_topo_group_index(t, d->axes, job->chip), &group);
    return group;
}

/* The largest element count handed to MPI in one piece. */
#define MPI_PIECE ((uint64_t)1 << 30)

/*
 * A datatype of 'bytes' contiguous bytes, also past INT_MAX (1 MiB units and a
 * remainder), for the collectives that move whole blocks (no reduction).
 */
static MPI_Datatype block_type(uint64_t bytes)
{
    MPI_Datatype t, unit, parts[2];
    int lens[2] = {1, 1};
    MPI_Aint disp[2];

    if (bytes <= MPI_PIECE) {
        MPI_Type_contiguous((int)bytes, MPI_BYTE, &t);
    } else {
        MPI_Type_contiguous(1 << 20, MPI_BYTE, &unit);
        MPI_Type_contiguous((int)(bytes >> 20), unit, &parts[0]);
        MPI_Type_contiguous((int)(bytes & ((1u << 20) - 1)), MPI_BYTE, &parts[1]);
        disp[0] = 0;
        disp[1] = (MPI_Aint)(bytes >> 20 << 20);
        MPI_Type_create_struct(2, lens, disp, parts, &t);
        MPI_Type_free(&unit);
        MPI_Type_free(&parts[0]);
        MPI_Type_free(&parts[1]);
    }
    MPI_Type_commit(&t);
    return t;
}

/*
 * One call of the host MPI library's own collective on the same bytes over the
 * same group: this rank's wall time.  Counts never pass INT_MAX: reductions go in
 * pieces of MPI_PIECE elements (a reduce-scatter whose block is larger reduces
 * each block to its owner), whole blocks travel as one derived datatype.  p2p:
 * MPI_Send from the source, MPI_Recv at the destination (group: the pair, source
 * first); the other ranks (group MPI_COMM_NULL) time nothing, as in ours.
 */
double app_bench_mpi_once(app_case_t *c, MPI_Comm group, int me)
{
    const tpu_coll_desc_t *d = &c->desc;
    int n, es = tpu_dtype_size(d->dtype);
    MPI_Datatype et = mpi_type(d->dtype), bt = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    uint64_t off, piece;
    double t0;

    if (group == MPI_COMM_NULL) {
        return 0.0;
    }
    MPI_Comm_size(group, &n);
    if (d->kind == TPU_COLL_PSUM || d->kind == TPU_COLL_REDUCE_SCATTER) {
        op = mpi_op(d->op, d->dtype);
    }
    if (d->kind == TPU_COLL_ALL_GATHER || d->kind == TPU_COLL_ALL_TO_ALL) {
        bt = block_type(d->kind == TPU_COLL_ALL_GATHER ? c->in_bytes : d->bytes / (uint64_t)n);
    }
    t0 = tpu__now_s();
    switch (d->kind) {
    case TPU_COLL_PSUM: {
        uint64_t count = d->bytes / (uint64_t)es;

        for (off = 0; off < count; off += piece) {
            piece = count - off < MPI_PIECE ? count - off : MPI_PIECE;
            MPI_Allreduce((char *)c->in + off * es, (char *)c->out + off * es, (int)piece, et, op,
                          group);
        }
        break;
    }
    case TPU_COLL_ALL_GATHER:
        MPI_Allgather(c->in, 1, bt, c->out, 1, bt, group);
        break;
    case TPU_COLL_REDUCE_SCATTER: {
        uint64_t count = c->out_bytes / (uint64_t)es;
        int r;

        if (count <= MPI_PIECE) {
            MPI_Reduce_scatter_block(c->in, c->out, (int)count, et, op, group);
            break;
        }
        for (r = 0; r < n; r++) {
            for (off = 0; off < count; off += piece) {
                piece = count - off < MPI_PIECE ? count - off : MPI_PIECE;
                MPI_Reduce((char *)c->in + ((uint64_t)r * count + off) * es,
                           (char *)c->out + off * es, (int)piece, et, op, r, group);
            }
        }
        break;
    }
    case TPU_COLL_ALL_TO_ALL:
        MPI_Alltoall(c->in, 1, bt, c->out, 1, bt, group);
        break;
    case TPU_COLL_P2P: {
        int r;

        MPI_Comm_rank(group, &r);
        for (off = 0; off < d->bytes; off += piece) {
            piece = d->bytes - off < MPI_PIECE ? d->bytes - off : MPI_PIECE;
            if (r == 0) {
                MPI_Send((char *)c->in + off, (int)piece, MPI_BYTE, 1, 0, group);
            } else {
                MPI_Recv((char *)c->out + off, (int)piece, MPI_BYTE, 0, 0, group,
                         MPI_STATUS_IGNORE);
            }
        }
        break;
    }
    default: {
        int to = ((me + d->shift) % n + n) % n, from = ((me - d->shift) % n + n) % n;

        for (off = 0; off < d->bytes; off += piece) {
            piece = d->bytes - off < MPI_PIECE ? d->bytes - off : MPI_PIECE;
            MPI_Sendrecv((char *)c->in + off, (int)piece, MPI_BYTE, to, 0, (char *)c->out + off,
                         (int)piece, MPI_BYTE, from, 0, group, MPI_STATUS_IGNORE);
        }
        break;
    }
    }
    t0 = tpu__now_s() - t0;
    if (bt != MPI_DATATYPE_NULL) {
        MPI_Type_free(&bt);
    }
    if (d->dtype == TPU_DTYPE_BF16 && op != MPI_OP_NULL) {
        MPI_Op_free(&op);
    }
    return t0;
}
