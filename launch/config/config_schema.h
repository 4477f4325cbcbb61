/*
 * The schema of the pod file (config_schema.c): the keys of each mapping, their
 * types and where their values go.  Private to launch/config.
 */
#ifndef APP_LAUNCH_CONFIG_SCHEMA_H
#define APP_LAUNCH_CONFIG_SCHEMA_H

#include <stddef.h>

typedef enum {
    KIND_NUMBER, /* double > 0 */
    KIND_BYTES,  /* double > 0, or a size with a K, M or G suffix */
    KIND_MICROS, /* double >= 0 given in microseconds, stored in seconds */
    KIND_COUNT,  /* int in [1, max] */
    KIND_DIMS,   /* int[TPU_MAX_AXES] from a list of 1 to 3 entries in [1, max]; the rest 1 */
    KIND_OTHER   /* handled by the caller */
} field_kind_t;

/* One key of a mapping: its name, its type and where its value goes. */
typedef struct field {
    const char *key;
    field_kind_t kind;
    size_t offset; /* into the struct the mapping fills (not for KIND_OTHER) */
    long max;      /* KIND_COUNT and KIND_DIMS */
} field_t;

/* The top level (all KIND_OTHER: root_pair() in config_yaml.c takes every key). */
extern const field_t app_config_root_fields[];
/* One item of 'faults:', a custom 'chip:', 'links:'. */
extern const field_t app_config_fault_fields[];
extern const field_t app_config_chip_fields[];
extern const field_t app_config_link_fields[];

#endif
