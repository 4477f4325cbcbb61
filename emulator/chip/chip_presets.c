/*
 * The chip generations and where each figure comes from.
 *
 * [S]  shared/reference/seeds/001 "TPU Programming Fundamentals", the
 *      specifications table (HBM capacity and bandwidth, bf16 and int8 FLOP/s,
 *      pod shapes) and the ICI list (bidirectional bandwidth per link), the
 *      per-hop latency (~1 us) and the MXU sizes (128x128; 256x256 on v6e).
 * [B]  JAX scaling book, "How to Think About TPUs": TensorCores per chip (v4 and
 *      v5p are megacore, 2 TensorCores; v5e and v6e have 1), MXUs per TensorCore
 *      (4 on v5e and later, 4 on v4), hosts (4 chips as 2x2x1 on v4/v5p, 8 chips
 *      as 4x2 on v5e/v6e), DCN egress per chip (v5e 3.125e9, v4/v5p 6.25e9,
 *      v6e 12.5e9 bytes/s), and the VPU figure of v5p (~1.4e13 FLOP/s, also in [S]).
 * [F]  shared/reference/fidelity.md, which collects the same table and adds
 *      TPU7x (Ironwood): 2.30e15 bf16, 4.61e15 int8, 192 GB at 7.4e12 B/s,
 *      1.8e11 B/s ICI per link, 3 axes, 9,216 chips, 4 chips per host.
 *
 * Choices where the sources are silent, each overridable in YAML:
 * - VMEM per chip (the seeds give only v5e's 128 MiB [S]): JAX's Pallas table of
 *   VMEM per TensorCore [P] times the TensorCores: v4 16 MiB x 2, v5e 128 MiB x 1,
 *   v5p 64 MiB x 2, v6e 128 MiB x 1, TPU7x 64 MiB x 2.  The VMEM executor gives
 *   one kernel's plan a TensorCore's share (vmem_bytes / tensorcores).
 *   [P] jax-ml/jax, jax/_src/pallas/mosaic/tpu_info.py, vmem_capacity_bytes.
 * - v7 MXU: 256x256 like v6e; the pod shape 16x24x24 (9,216 chips, whole cubes);
 *   DCN 12.5e9 B/s per chip like v6e.
 * - VPU: v5e is (8 sublanes x 128 lanes) x 4 ALUs x 1.5 GHz = 6.144e12 FLOP/s, all
 *   three figures from [S] (counting one FLOP per ALU operation, which also gives
 *   v5p's 1.4e13: 2 TensorCores x 4096 x 1.75 GHz).  The other generations: v5p's
 *   1.4e13 scaled by bf16 peak, since the VPU and the MXUs share a clock and grow
 *   together.
 * - f32 matmul: a third of bf16 peak (XLA's 3-pass bf16 emulation of f32).
 * - DCN latency (DCN_LATENCY, 10 us chip to chip): no source publishes one
 *   (fidelity.md).  The path is chip -> PCIe -> host -> NIC -> datacenter network
 *   -> NIC -> host -> PCIe -> chip; 10 us is the order of a one-way RDMA message
 *   between two hosts of a datacenter including both PCIe crossings.  An
 *   assumption: set dcn_latency_us in YAML or --dcn-latency-us.
 * - PCIe (PCIE_BW, 16e9 bytes/s each direction per chip): [S] "PCIe (Host)
 *   (~16 GB/s)" in the memory hierarchy list.  A chip's DCN traffic crosses it
 *   to its host; at the published DCN figures it never binds (pcie_bw in YAML).
 * - Host NIC: the book's DCN bandwidth is per chip; a host's NIC carries its
 *   chips x dcn_bw unless nic_bw says otherwise (YAML nic_bw, --nic-bw).
 * - Per-message cost (MSG_COST, 0.05 us): a chip's DMA engine starting a batch
 *   of messages on a link (a descriptor and a doorbell; the 1 us hop already
 *   holds one message's start end to end).  No source publishes it; we take 50
 *   ns, about 50 cycles of these chips' ~1 GHz clocks, an assumption.  A port
 *   starts its batches one after the other while the bytes of the ones before
 *   flow (linkmodel.c), so the starts cost time only when messages come faster
 *   than that: a deep pipeline of chunks below a few KiB, or a block per message
 *   to many chips.  (With 0.2 us, a fifth of the hop, as before, every
 *   multi-axis collective of a few MiB over a hundred chips or more was bound by
 *   its starts, 10-20% above the formula the default model must reach.)  YAML
 *   msg_cost_us, --msg-cost-us.
 * - Reduction rate (reduce_bw 0 = hbm_bw / 3): the VPU adds received bytes into
 *   the accumulator in HBM: it reads the accumulator and the received bytes and
 *   writes the sum, 3 HBM bytes per byte reduced; HBM, not the VPU's FLOP/s,
 *   binds (v5e: 6.1e12 FLOP/s is 1.5e12 f32 adds/s, 6e12 B/s of operands, far
 *   above 8.1e11 B/s).  YAML reduce_bw, --reduce-bw.
 */
#define DCN_LATENCY 10e-6
#define MSG_COST    0.05e-6
#define PCIE_BW     16e9

#include "tpu/chip.h"

#include <stdio.h>
#include <string.h>

#define GB  1e9
#define MiB (1024.0 * 1024.0)

static const tpu_chip_spec_t presets[] = {
    {
        .name = "v4",
        .bf16_flops = 2.75e14,             /* [S] */
        .int8_ops = 2.75e14,               /* [S] */
        .f32_flops = 2.75e14 / 3,          /* choice, see above */
        .vpu_flops = 1.4e13 * 2.75 / 4.59, /* choice: v5p's VPU scaled by bf16 peak */
        .hbm_bytes = 32 * GB,              /* [S] */
        .hbm_bw = 1.2e12,                  /* [S] */
        .vmem_bytes = 32 * MiB,            /* [P] 16 MiB per TensorCore */
        .mxu_dim = 128,                    /* [S] */
        .mxu_count = 4,                    /* [B] */
        .tensorcores = 2,                  /* [B] megacore */
        .ici_bw = 9e10,                    /* [S] */
        .ici_latency = 1e-6,               /* [S] */
        .ici_axes = 3,
        .max_pod = {16, 16, 16},    /* [S] */
        .host_dims = {2, 2, 1},     /* [B] */
        .dcn_bw = 6.25e9,           /* [B] */
        .dcn_latency = DCN_LATENCY, /* assumption, see above */
        .msg_cost = MSG_COST,       /* assumption, see above */
        .pcie_bw = PCIE_BW,         /* [S] */
        .wrap_rule = TPU_WRAP_RULE_CUBES,
    },
    {
        .name = "v5e",
        .bf16_flops = 1.97e14,
        .int8_ops = 3.94e14,
        .f32_flops = 1.97e14 / 3,
        .vpu_flops = 8 * 128 * 4 * 1.5e9, /* [S] (8,128) x 4 ALUs at 1.5 GHz */
        .hbm_bytes = 16 * GB,
        .hbm_bw = 8.1e11,
        .vmem_bytes = 128 * MiB, /* [S], [P] */
        .mxu_dim = 128,
        .mxu_count = 4,
        .tensorcores = 1,
        .ici_bw = 9e10,
        .ici_latency = 1e-6,
        .ici_axes = 2,
        .max_pod = {16, 16, 1},
        .host_dims = {4, 2, 1},
        .dcn_bw = 3.125e9,
        .dcn_latency = DCN_LATENCY, /* assumption, see above */
        .msg_cost = MSG_COST,       /* assumption, see above */
        .pcie_bw = PCIE_BW,         /* [S] */
        .wrap_rule = TPU_WRAP_RULE_FULL_AXIS,
    },
    {
        .name = "v5p",
        .bf16_flops = 4.59e14,
        .int8_ops = 9.18e14,
        .f32_flops = 4.59e14 / 3,
        .vpu_flops = 1.4e13, /* [S], [B] */
        .hbm_bytes = 96 * GB,
        .hbm_bw = 2.8e12,
        .vmem_bytes = 128 * MiB, /* [P] 64 MiB per TensorCore */
        .mxu_dim = 128,
        .mxu_count = 4,
        .tensorcores = 2,
        .ici_bw = 1.8e11,
        .ici_latency = 1e-6,
        .ici_axes = 3,
        .max_pod = {16, 20, 28},
        .host_dims = {2, 2, 1},
        .dcn_bw = 6.25e9,
        .dcn_latency = DCN_LATENCY, /* assumption, see above */
        .msg_cost = MSG_COST,       /* assumption, see above */
        .pcie_bw = PCIE_BW,         /* [S] */
        .wrap_rule = TPU_WRAP_RULE_CUBES,
    },
    {
        .name = "v6e",
        .bf16_flops = 9.20e14,
        .int8_ops = 1.84e15,
        .f32_flops = 9.20e14 / 3,
        .vpu_flops = 1.4e13 * 9.20 / 4.59,
        .hbm_bytes = 32 * GB,
        .hbm_bw = 1.6e12,
        .vmem_bytes = 128 * MiB, /* [P] */
        .mxu_dim = 256,          /* [S] Trillium */
        .mxu_count = 2,
        .tensorcores = 1,
        .ici_bw = 1.8e11,
        .ici_latency = 1e-6,
        .ici_axes = 2,
        .max_pod = {16, 16, 1},
        .host_dims = {4, 2, 1},
        .dcn_bw = 12.5e9,
        .dcn_latency = DCN_LATENCY, /* assumption, see above */
        .msg_cost = MSG_COST,       /* assumption, see above */
        .pcie_bw = PCIE_BW,         /* [S] */
        .wrap_rule = TPU_WRAP_RULE_FULL_AXIS,
    },
    {
        .name = "v7",
        .bf16_flops = 2.30e15, /* [F] */
        .int8_ops = 4.61e15,   /* [F] */
        .f32_flops = 2.30e15 / 3,
        .vpu_flops = 1.4e13 * 23.0 / 4.59,
        .hbm_bytes = 192 * GB,   /* [F] */
        .hbm_bw = 7.4e12,        /* [F] */
        .vmem_bytes = 128 * MiB, /* [P] TPU7x: 64 MiB per TensorCore */
        .mxu_dim = 256,          /* choice */
        .mxu_count = 4,
        .tensorcores = 2, /* [F] */
        .ici_bw = 1.8e11, /* [F] */
        .ici_latency = 1e-6,
        .ici_axes = 3,
        .max_pod = {16, 24, 24},    /* choice: 9,216 chips [F] as whole cubes */
        .host_dims = {2, 2, 1},     /* [F] 4 chips per host */
        .dcn_bw = 12.5e9,           /* choice */
        .dcn_latency = DCN_LATENCY, /* assumption, see above */
        .msg_cost = MSG_COST,       /* assumption, see above */
        .pcie_bw = PCIE_BW,         /* [S] */
        .wrap_rule = TPU_WRAP_RULE_CUBES,
    },
};

#define NPRESETS ((int)(sizeof(presets) / sizeof(presets[0])))

int tpu_chip_preset_count(void)
{
    return NPRESETS;
}

const tpu_chip_spec_t *tpu_chip_preset_at(int i)
{
    return (i >= 0 && i < NPRESETS) ? &presets[i] : NULL;
}

tpu_status_t tpu_chip_preset(const char *name, tpu_chip_spec_t *spec_p, tpu_err_t *err)
{
    int i;

    if (name != NULL) {
        if (strcmp(name, "v4p") == 0) {
            name = "v4";
        } else if (strcmp(name, "ironwood") == 0 || strcmp(name, "tpu7x") == 0) {
            name = "v7";
        }
        for (i = 0; i < NPRESETS; i++) {
            if (strcmp(presets[i].name, name) == 0) {
                *spec_p = presets[i];
                return TPU_OK;
            }
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "unknown chip '%s' (known: v4, v5e, v5p, v6e, v7)",
                       name != NULL ? name : "");
}

const char *tpu_chip_default_for_axes(int naxes)
{
    return naxes >= 3 ? "v5p" : "v5e";
}

int tpu_chip_per_host(const tpu_chip_spec_t *spec)
{
    return spec->host_dims[0] * spec->host_dims[1] * spec->host_dims[2];
}

double tpu_chip_ridge(const tpu_chip_spec_t *spec)
{
    return spec->bf16_flops / spec->hbm_bw;
}

tpu_status_t tpu_chip_check(const tpu_chip_spec_t *spec, tpu_err_t *err)
{
    const struct {
        const char *name;
        double value;
    } fields[] = {
        {"bf16_flops", spec->bf16_flops}, {"int8_ops", spec->int8_ops},
        {"f32_flops", spec->f32_flops},   {"vpu_flops", spec->vpu_flops},
        {"hbm_bytes", spec->hbm_bytes},   {"hbm_bw", spec->hbm_bw},
        {"vmem_bytes", spec->vmem_bytes}, {"mxu_dim", spec->mxu_dim},
        {"mxu_count", spec->mxu_count},   {"tensorcores", spec->tensorcores},
        {"ici_bw", spec->ici_bw},         {"dcn_bw", spec->dcn_bw},
    };
    size_t i;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (!(fields[i].value > 0)) {
            return tpu_err_set(err, TPU_ERR_CONFIG, "chip '%s': %s must be positive, got %g",
                               spec->name, fields[i].name, fields[i].value);
        }
    }
    if (spec->ici_latency < 0 || spec->dcn_latency < 0 || spec->msg_cost < 0 || spec->pcie_bw < 0 ||
        spec->nic_bw < 0 || spec->reduce_bw < 0) {
        return tpu_err_set(
            err, TPU_ERR_CONFIG,
            "chip '%s': latencies, msg_cost, pcie_bw, nic_bw and reduce_bw must be >= 0",
            spec->name);
    }
    if (spec->ici_axes < 1 || spec->ici_axes > TPU_MAX_AXES) {
        return tpu_err_set(err, TPU_ERR_CONFIG, "chip '%s': ici_axes must be 1 to 3, got %d",
                           spec->name, spec->ici_axes);
    }
    return TPU_OK;
}

void tpu_chip_link_model(const tpu_chip_spec_t *spec, tpu_link_model_t *link)
{
    int a;

    link->ici_bw = spec->ici_bw;
    link->ici_latency = spec->ici_latency;
    link->dcn_bw = spec->dcn_bw;
    link->dcn_latency = spec->dcn_latency;
    link->msg_cost = spec->msg_cost;
    link->pcie_bw = spec->pcie_bw;
    link->nic_bw = spec->nic_bw;
    link->reduce_bw = spec->reduce_bw > 0 ? spec->reduce_bw : spec->hbm_bw / 3;
    link->ici_efficiency = 1;
    link->launch = 0;
    link->faults = NULL;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        link->host_dims[a] = spec->host_dims[a] > 0 ? spec->host_dims[a] : 1;
    }
}
