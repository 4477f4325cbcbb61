/* The sections of the pod file that are more than a key table (config_sections.c).  Private
 * to launch/config. */
#ifndef APP_LAUNCH_CONFIG_SECTIONS_H
#define APP_LAUNCH_CONFIG_SECTIONS_H

#include "config_walk.h"
#include "config_yaml.h"

/* 'chip:': a preset name, or a mapping with 'base:' and the fields it overrides. */
tpu_status_t app_config_parse_chip(load_ctx_t *c, const yaml_node_t *key, const yaml_node_t *val,
                                   app_config_t *cfg);
/* 'mesh:': a string "data=4,model=4" or a mapping {data: 4, model: 4}, kept in file order. */
tpu_status_t app_config_parse_mesh(load_ctx_t *c, const yaml_node_t *val, app_config_t *cfg);
/* 'faults:': a list of mappings, each a fault with its 'kind' and the keys it takes. */
tpu_status_t app_config_parse_faults(load_ctx_t *c, const yaml_node_t *val, app_config_t *cfg);

#endif
