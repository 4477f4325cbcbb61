/*
 * The schema of the pod file (see config_yaml.c): one key table per mapping - the
 * top level, an item of 'faults:', a custom 'chip:' and 'links:' - with each key's
 * type and, for the generic kinds, the field its value fills.
 */
#include "config_schema.h"

#include "tpu/chip.h"
#include "tpu/topo.h"

#include "config_yaml.h"

#include <stddef.h>

/* Upper bound for counts without a natural one (mxu_dim, tensorcores, ...). */
#define MAX_COUNT 1000000

/* The top level fills a root_state_t, not a struct the offsets could name: all KIND_OTHER. */
const field_t app_config_root_fields[] = {
    {"chip", KIND_OTHER, 0, 0},   {"topology", KIND_OTHER, 0, 0},
    {"wrap", KIND_OTHER, 0, 0},   {"slices", KIND_OTHER, 0, TPU_MAX_SLICES},
    {"mesh", KIND_OTHER, 0, 0},   {"links", KIND_OTHER, 0, 0},
    {"faults", KIND_OTHER, 0, 0}, {NULL, KIND_OTHER, 0, 0},
};

/* One item of 'faults:'; which keys a kind takes is tpu_fault_key_use()'s. */
const field_t app_config_fault_fields[] = {
    {"kind", KIND_OTHER, 0, 0}, {"chip", KIND_OTHER, 0, 0},   {"dir", KIND_OTHER, 0, 0},
    {"both", KIND_OTHER, 0, 0}, {"factor", KIND_OTHER, 0, 0}, {"host", KIND_OTHER, 0, 0},
    {NULL, KIND_OTHER, 0, 0},
};

const field_t app_config_chip_fields[] = {
    {"base", KIND_OTHER, 0, 0},
    {"name", KIND_OTHER, 0, 0},
    {"bf16_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, bf16_flops), 0},
    {"int8_ops", KIND_NUMBER, offsetof(tpu_chip_spec_t, int8_ops), 0},
    {"f32_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, f32_flops), 0},
    {"vpu_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, vpu_flops), 0},
    {"hbm_bytes", KIND_BYTES, offsetof(tpu_chip_spec_t, hbm_bytes), 0},
    {"hbm_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, hbm_bw), 0},
    {"vmem_bytes", KIND_BYTES, offsetof(tpu_chip_spec_t, vmem_bytes), 0},
    {"mxu_dim", KIND_COUNT, offsetof(tpu_chip_spec_t, mxu_dim), MAX_COUNT},
    {"mxu_count", KIND_COUNT, offsetof(tpu_chip_spec_t, mxu_count), MAX_COUNT},
    {"tensorcores", KIND_COUNT, offsetof(tpu_chip_spec_t, tensorcores), MAX_COUNT},
    {"ici_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, ici_bw), 0},
    {"ici_latency_us", KIND_MICROS, offsetof(tpu_chip_spec_t, ici_latency), 0},
    {"ici_axes", KIND_COUNT, offsetof(tpu_chip_spec_t, ici_axes), TPU_MAX_AXES},
    {"max_pod", KIND_DIMS, offsetof(tpu_chip_spec_t, max_pod), TPU_MAX_DIM},
    {"host_dims", KIND_DIMS, offsetof(tpu_chip_spec_t, host_dims), TPU_MAX_DIM},
    {"dcn_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, dcn_bw), 0},
    {"dcn_latency_us", KIND_MICROS, offsetof(tpu_chip_spec_t, dcn_latency), 0},
    {"msg_cost_us", KIND_MICROS, offsetof(tpu_chip_spec_t, msg_cost), 0},
    {"pcie_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, pcie_bw), 0},
    {"nic_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, nic_bw), 0},
    {"reduce_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, reduce_bw), 0},
    {"wrap_rule", KIND_OTHER, 0, 0},
    {NULL, KIND_OTHER, 0, 0},
};

const field_t app_config_link_fields[] = {
    {"ici_bandwidth", KIND_NUMBER, offsetof(app_config_t, ici_bw), 0},
    {"ici_latency_us", KIND_MICROS, offsetof(app_config_t, ici_latency), 0},
    {"dcn_bandwidth", KIND_NUMBER, offsetof(app_config_t, dcn_bw), 0},
    {"dcn_latency_us", KIND_MICROS, offsetof(app_config_t, dcn_latency), 0},
    {NULL, KIND_OTHER, 0, 0},
};
