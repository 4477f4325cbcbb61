/*
 * Chip generations: the constants the timing model is built from.
 *
 * tpu_chip_spec_t is a plain value struct.  The presets (v4, v5e, v5p, v6e, v7)
 * come from a table in emulator/chip_presets.c where every figure carries its
 * source; a custom chip starts from a preset (or zeros) and overrides fields,
 * for example from a YAML file.
 */
#ifndef TPU_CHIP_H
#define TPU_CHIP_H

#include "tpu/link.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_CHIP_NAME_LEN 32

typedef struct tpu_chip_spec {
    char name[TPU_CHIP_NAME_LEN]; /* "v5e" */
    double bf16_flops;            /* peak bf16 FLOP/s of the chip (all TensorCores) */
    double int8_ops;              /* peak int8 OP/s */
    double f32_flops;             /* f32 matmul FLOP/s (multi-pass bf16 on the MXU) */
    double vpu_flops;             /* VPU elementwise f32 FLOP/s */
    double hbm_bytes;             /* HBM capacity */
    double hbm_bw;                /* HBM bytes/s */
    double vmem_bytes;            /* VMEM capacity per chip */
    int mxu_dim;                  /* systolic array edge: 128 or 256 */
    int mxu_count;                /* MXUs per TensorCore */
    int tensorcores;              /* TensorCores per chip */
    double ici_bw;                /* ICI bytes/s per link, bidirectional, as published */
    double ici_latency;           /* seconds per hop */
    int ici_axes;                 /* 2 or 3 */
    int max_pod[TPU_MAX_AXES];    /* largest pod shape */
    int host_dims[TPU_MAX_AXES];  /* the block of chips one TPU host drives */
    double dcn_bw;                /* DCN egress bytes/s per chip */
    double dcn_latency;           /* seconds per DCN transfer, chip to chip */
    double msg_cost;              /* seconds the DMA engine takes to start one message */
    double pcie_bw;               /* chip <-> host bytes/s, each direction */
    double nic_bw;                /* host NIC bytes/s each direction; 0: chips x dcn_bw */
    double reduce_bw;             /* bytes/s the VPU reduces received data; 0: hbm_bw / 3 */
    tpu_wrap_rule_t wrap_rule;    /* how --wrap auto decides */
} tpu_chip_spec_t;

/* The number of presets, and preset 'i' (0 <= i < count). */
TPU_API int tpu_chip_preset_count(void);
TPU_API const tpu_chip_spec_t *tpu_chip_preset_at(int i);

/*
 * Copy the preset called 'name' ("v4", "v5e", "v5p", "v6e", "v7"; "v4p" and
 * "ironwood" are accepted as aliases) into '*spec_p'.
 * @return TPU_OK, or TPU_ERR_INVALID with a message listing the known chips.
 */
TPU_API tpu_status_t tpu_chip_preset(const char *name, tpu_chip_spec_t *spec_p, tpu_err_t *err);

/* The chip the CLI picks when none is named: v5e for 1- and 2-axis shapes, v5p for 3. */
TPU_API const char *tpu_chip_default_for_axes(int naxes);

/* Chips per TPU host (the product of host_dims). */
TPU_API int tpu_chip_per_host(const tpu_chip_spec_t *spec);

/* Ridge point: peak bf16 FLOP/s over HBM bytes/s (about 240 on v5e). */
TPU_API double tpu_chip_ridge(const tpu_chip_spec_t *spec);

/* The link model of a chip: its ICI and DCN bandwidths and latencies and its host. */
TPU_API void tpu_chip_link_model(const tpu_chip_spec_t *spec, tpu_link_model_t *link);

/* Check that every field a model needs is positive; names the first bad one. */
TPU_API tpu_status_t tpu_chip_check(const tpu_chip_spec_t *spec, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_CHIP_H */
