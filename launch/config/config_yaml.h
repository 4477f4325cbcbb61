/*
 * The pod description a job starts from: what a YAML file (--config) sets, before
 * the command-line flags override it.  Private to launch/.
 *
 * Fields that the file does not set keep the "unset" value given below, so the
 * command line can tell a value the user chose from a default.
 */
#ifndef APP_LAUNCH_CONFIG_YAML_H
#define APP_LAUNCH_CONFIG_YAML_H

#include "tpu/chip.h"
#include "tpu/fault.h"
#include "tpu/status.h"

#include <stddef.h>

#define APP_CONFIG_STR 128

typedef struct app_config {
    char chip[APP_CONFIG_STR];     /* preset name ("v5e"); "" when unset */
    int chip_custom;               /* 1 when 'custom' holds a chip described field by field */
    tpu_chip_spec_t custom;        /* the custom chip: its base preset plus the fields set */
    char topology[APP_CONFIG_STR]; /* "4x4"; "" when unset */
    char wrap[APP_CONFIG_STR];     /* "auto", "all", "none", "x,z"; "" when unset */
    int slices;                    /* 0 when unset */
    char mesh[APP_CONFIG_STR];     /* "data=4,model=4"; "" when unset */
    double ici_bw;                 /* bytes/s per link, bidirectional; < 0 when unset */
    double ici_latency;            /* seconds per hop; < 0 when unset */
    double dcn_bw;                 /* bytes/s per chip; < 0 when unset */
    double dcn_latency;            /* seconds; < 0 when unset */
    /* Where the file sets chip, topology and wrap ("pod.yaml:3:11"; "" when unset), so
     * that a pod the flags cannot build from them is reported at the file's line. */
    char chip_at[APP_CONFIG_STR + 32], topology_at[APP_CONFIG_STR + 32],
        wrap_at[APP_CONFIG_STR + 32];
    char host_dims_at[APP_CONFIG_STR + 32]; /* where a custom chip sets host_dims */
    /* 'faults:', a list of mappings (kind, chip, dir, both, factor, host), in file
     * order, each with where it starts in the file. */
    tpu_fault_t faults[TPU_MAX_FAULTS];
    int nfaults;
    char fault_at[TPU_MAX_FAULTS][APP_CONFIG_STR + 32];
} app_config_t;

/* Set every field of 'cfg' to its unset value. */
void app_config_init(app_config_t *cfg);

/*
 * Parse the YAML file at 'path' into 'cfg' (fields the file does not name are left
 * as they are).  Strict: an unknown key, a value of the wrong type, a duplicate
 * key, a malformed document or an unreadable file is TPU_ERR_CONFIG with a
 * message "path:line:col: ..." that names the key or the problem.
 */
tpu_status_t app_config_load(const char *path, app_config_t *cfg, tpu_err_t *err);

/* The same from a string held in memory; 'name' stands for the path in messages. */
tpu_status_t app_config_load_string(const char *text, size_t len, const char *name,
                                    app_config_t *cfg, tpu_err_t *err);

#endif /* APP_LAUNCH_CONFIG_YAML_H */
