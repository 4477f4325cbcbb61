/*
 * The walk of the pod file's YAML node tree (config_walk.c): errors at a node's
 * position, typed values, and a mapping checked against its key table.  Private to
 * launch/config.
 */
#ifndef APP_LAUNCH_CONFIG_WALK_H
#define APP_LAUNCH_CONFIG_WALK_H

#include "tpu/status.h"
#include "tpu/topo.h"

#include "config_schema.h"
#include "config_yaml.h"

#include <stddef.h>

#include <yaml.h>

typedef struct load_ctx {
    yaml_document_t *doc;
    const char *name; /* the path, for messages */
    tpu_err_t *err;
} load_ctx_t;

/* The handler of a key the generic code does not fill: 'obj' is the struct being filled. */
typedef tpu_status_t (*pair_fn_t)(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                                  const yaml_node_t *val, void *obj);

/*
 * Record an error whose message is formatted from 'fmt', kept whole so that
 * tpu_err_set() can shorten a long echoed value and keep the reason.
 */
tpu_status_t app_config_report(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
    TPU_PRINTF(3, 4);
/* Record TPU_ERR_CONFIG at the position of 'node': "name:line:col: <fmt>". */
tpu_status_t app_config_fail_at(load_ctx_t *c, const yaml_node_t *node, const char *fmt, ...)
    TPU_PRINTF(3, 4);
/* "name:line:col" of 'node' into 'out'. */
void app_config_mark(const load_ctx_t *c, const yaml_node_t *node, char *out, size_t len);

/* The node at 'index' of the document. */
const yaml_node_t *app_config_node_at(load_ctx_t *c, int index);
/* The text of a scalar node (NULL for a list or a mapping). */
const char *app_config_text_of(const yaml_node_t *n);
/* How a node that is not what was expected is named in a message: "a list", ... */
const char *app_config_kind_name(const yaml_node_t *n);
/* Is 'n' YAML's null: an empty or '~'/'null' plain scalar? */
int app_config_is_null(const yaml_node_t *n);

/*
 * The text of the scalar 'val' of key 'key' into '*text_p'.  'what' names the
 * expected value for the message when 'val' is a list, a mapping or null.
 */
tpu_status_t app_config_get_text(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                 const char *what, const char **text_p);
/* The same for a number: a plain scalar, so that "2" (a string in YAML) is refused. */
tpu_status_t app_config_get_plain(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                  const char *what, const char **text_p);
/* A string value that fits a APP_CONFIG_STR field. */
tpu_status_t app_config_get_string(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                   const char *what, char out[APP_CONFIG_STR]);
/*
 * A number of kind 'kind' (KIND_NUMBER, KIND_BYTES or KIND_MICROS): plain
 * decimal in strtod syntax (no hex, inf or nan), or for KIND_BYTES a size.
 */
tpu_status_t app_config_get_number(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                   field_kind_t kind, double *out_p);
/* A whole number in [1, 'max']. */
tpu_status_t app_config_get_count(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                                  int *out_p);
/* A whole number from 0 to 'max' (a chip id, a coordinate, a host index). */
tpu_status_t app_config_get_index(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                                  int *out_p);

/*
 * Walk the mapping 'map' whose keys must come from 'fields': each key known and
 * named once; values of the generic kinds are stored into 'obj', the others go
 * to 'fn'.  'what' names the mapping in messages ("the file", "'chip'").
 */
tpu_status_t app_config_walk_map(load_ctx_t *c, const yaml_node_t *map, const char *what,
                                 const field_t *fields, pair_fn_t fn, void *obj);

#endif
