/*
 * The sections of the pod file that are more than a key table (see config_yaml.c):
 * 'chip:' (a preset, or a custom chip from a base preset and the fields it
 * overrides), 'mesh:' (a string or a mapping, checked by the library's mesh
 * grammar) and 'faults:' (a list of faults, each with the keys its kind takes).
 */
#include "config_sections.h"

#include "tpu/chip.h"
#include "tpu/fault.h"
#include "tpu/mesh.h"

#include "config_walk.h"

#include <stdio.h>
#include <string.h>

/* The keys of a custom chip that set_field() does not fill: base, name, wrap_rule. */
static tpu_status_t chip_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                              const yaml_node_t *val, void *obj)
{
    tpu_chip_spec_t *spec = obj;
    const char *s;
    tpu_status_t status;

    (void)key;
    if (strcmp(f->key, "base") == 0) {
        return TPU_OK; /* read before the walk */
    }
    if (strcmp(f->key, "name") == 0) {
        status = app_config_get_text(c, f->key, val, "a display name", &s);
        if (status != TPU_OK) {
            return status;
        }
        if (strlen(s) >= sizeof(spec->name)) {
            return app_config_fail_at(c, val, "'name' is too long (at most %d characters)",
                                      (int)sizeof(spec->name) - 1);
        }
        memcpy(spec->name, s, strlen(s) + 1);
        return TPU_OK;
    }
    status = app_config_get_text(c, f->key, val, "cubes or full_axis", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (strcmp(s, "cubes") == 0) {
        spec->wrap_rule = TPU_WRAP_RULE_CUBES;
    } else if (strcmp(s, "full_axis") == 0) {
        spec->wrap_rule = TPU_WRAP_RULE_FULL_AXIS;
    } else {
        return app_config_fail_at(c, val, "'wrap_rule' takes cubes or full_axis, got '%s'", s);
    }
    return TPU_OK;
}

/* 'chip:': a preset name, or a mapping with 'base:' and the fields it overrides. */
tpu_status_t app_config_parse_chip(load_ctx_t *c, const yaml_node_t *key, const yaml_node_t *val,
                                   app_config_t *cfg)
{
    const yaml_node_t *base = NULL;
    yaml_node_pair_t *p;
    tpu_chip_spec_t spec;
    tpu_err_t e = {0};
    const char *s;
    tpu_status_t status;

    if (val->type != YAML_MAPPING_NODE) {
        status = app_config_get_string(
            c, "chip", val, "a preset name (v4, v5e, v5p, v6e, v7) or a mapping", cfg->chip);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu_chip_preset(cfg->chip, &spec, &e) != TPU_OK) {
            return app_config_fail_at(c, val, "%s", e.msg);
        }
        cfg->chip_custom = 0;
        return TPU_OK;
    }
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top && base == NULL; p++) {
        const char *k = app_config_text_of(app_config_node_at(c, p->key));

        if (k != NULL && strcmp(k, "base") == 0) {
            base = app_config_node_at(c, p->value);
        }
    }
    if (base == NULL) {
        return app_config_fail_at(
            c, key,
            "a custom 'chip' needs 'base:', the preset its other fields start from "
            "(v4, v5e, v5p, v6e, v7)");
    }
    status = app_config_get_text(c, "base", base, "a preset name (v4, v5e, v5p, v6e, v7)", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu_chip_preset(s, &spec, &e) != TPU_OK) {
        return app_config_fail_at(c, base, "%s", e.msg);
    }
    snprintf(spec.name, sizeof(spec.name), "%.20s-custom", s);
    status = app_config_walk_map(c, val, "'chip'", app_config_chip_fields, chip_pair, &spec);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu_chip_check(&spec, &e) != TPU_OK) {
        return app_config_fail_at(c, key, "%s", e.msg);
    }
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
        const char *k = app_config_text_of(app_config_node_at(c, p->key));

        if (k != NULL && strcmp(k, "host_dims") == 0) {
            app_config_mark(c, app_config_node_at(c, p->value), cfg->host_dims_at,
                            sizeof(cfg->host_dims_at));
        }
    }
    cfg->custom = spec;
    cfg->chip_custom = 1;
    cfg->chip[0] = '\0';
    return TPU_OK;
}

/*
 * 'mesh:': a string "data=4,model=4" or a mapping {data: 4, model: 4}, kept in file
 * order.  Both are checked by the library's mesh grammar (tpu_mesh_parse), its
 * message at the position of the string, or of the key that breaks it: the
 * mapping is written as the same string, and each axis is checked as it is added.
 */
tpu_status_t app_config_parse_mesh(load_ctx_t *c, const yaml_node_t *val, app_config_t *cfg)
{
    char mesh[APP_CONFIG_STR] = {0}; /* whole: cfg->mesh gets all of it */
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES], naxes;
    yaml_node_pair_t *p, *q;
    tpu_err_t e = {0};
    size_t used = 0;
    tpu_status_t status;

    if (val->type != YAML_MAPPING_NODE) {
        status = app_config_get_string(c, "mesh", val, "a mesh such as data=4,model=4", mesh);
        if (status == TPU_OK && tpu_mesh_parse(mesh, names, sizes, &naxes, &e) != TPU_OK) {
            status = app_config_fail_at(c, val, "%s", e.msg);
        }
        if (status == TPU_OK) {
            memcpy(cfg->mesh, mesh, sizeof(mesh));
        }
        return status;
    }
    if (val->data.mapping.pairs.start == val->data.mapping.pairs.top) {
        return app_config_fail_at(c, val,
                                  "'mesh' is an empty mapping (expected axes such as data: 4)");
    }
    mesh[0] = '\0';
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = app_config_node_at(c, p->key);
        const char *k = app_config_text_of(key);
        int n;

        /* A key that is not one word cannot be written as the string's name=size. */
        if (k == NULL || k[0] == '\0' || strcspn(k, "=,") != key->data.scalar.length) {
            return app_config_fail_at(c, key,
                                      "mesh axis names are words such as data or model, not %s%s%s",
                                      k == NULL ? app_config_kind_name(key) : "'",
                                      k == NULL ? "" : k, k == NULL ? "" : "'");
        }
        for (q = val->data.mapping.pairs.start; q < p; q++) {
            if (strcmp(app_config_text_of(app_config_node_at(c, q->key)), k) == 0) {
                return app_config_fail_at(c, key,
                                          "duplicate key '%s' in 'mesh' (first at line %zu)", k,
                                          app_config_node_at(c, q->key)->start_mark.line + 1);
            }
        }
        status = app_config_get_count(c, k, app_config_node_at(c, p->value), TPU_MAX_CHIPS, &n);
        if (status != TPU_OK) {
            return status;
        }
        used +=
            (size_t)snprintf(mesh + used, sizeof(mesh) - used, "%s%s=%d", used ? "," : "", k, n);
        if (used >= sizeof(mesh)) {
            return app_config_fail_at(c, val,
                                      "'mesh' is too long (at most %d characters as a string)",
                                      APP_CONFIG_STR - 1);
        }
        if (tpu_mesh_parse(mesh, names, sizes, &naxes, &e) != TPU_OK) {
            return app_config_fail_at(c, key, "%s", e.msg);
        }
    }
    memcpy(cfg->mesh, mesh, sizeof(mesh));
    return TPU_OK;
}

/* A fault item: the fault and the keys seen. */
typedef struct fault_state {
    tpu_fault_t f;
    unsigned seen; /* bit i: app_config_fault_fields[i] */
} fault_state_t;

static tpu_status_t fault_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                               const yaml_node_t *val, void *obj)
{
    fault_state_t *st = obj;
    tpu_err_t e = {0};
    const char *s;
    tpu_status_t status;

    st->seen |= 1u << (f - app_config_fault_fields);
    if (strcmp(f->key, "kind") == 0) {
        return TPU_OK; /* read before the walk */
    }
    if (tpu_fault_key_use(st->f.kind, f->key) == 0) {
        return app_config_fail_at(c, key, "'%s' does not apply to a %s fault (%s)", f->key,
                                  tpu_fault_kind_name(st->f.kind), tpu_fault_usage(st->f.kind));
    }
    if (strcmp(f->key, "chip") == 0) {
        yaml_node_item_t *it;

        if (val->type != YAML_SEQUENCE_NODE) {
            st->f.ncoords = 0;
            return app_config_get_index(c, "chip", val, TPU_MAX_CHIPS - 1, &st->f.chip);
        }
        st->f.chip = -1;
        st->f.ncoords = 0;
        for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
            if (st->f.ncoords == TPU_MAX_AXES + 1) {
                return app_config_fail_at(c, app_config_node_at(c, *it),
                                          "'chip' has at most %d coordinates (the slice first)",
                                          TPU_MAX_AXES + 1);
            }
            status = app_config_get_index(c, "chip", app_config_node_at(c, *it), TPU_MAX_DIM,
                                          &st->f.coords[st->f.ncoords++]);
            if (status != TPU_OK) {
                return status;
            }
        }
        if (st->f.ncoords == 0) {
            return app_config_fail_at(c, val,
                                      "'chip' is an empty list (give an id such as 5 or "
                                      "coordinates such as [1, 2])");
        }
        return TPU_OK;
    }
    if (strcmp(f->key, "dir") == 0) {
        status = app_config_get_text(c, "dir", val, "a link direction such as +x", &s);
        if (status == TPU_OK && tpu_fault_dir_parse(s, &st->f.axis, &st->f.dir, &e) != TPU_OK) {
            status = app_config_fail_at(c, val, "'dir': %s", e.msg);
        }
        return status;
    }
    if (strcmp(f->key, "both") == 0) {
        status = app_config_get_plain(c, "both", val, "yes or no", &s);
        if (status != TPU_OK) {
            return status;
        }
        if (strcmp(s, "yes") == 0 || strcmp(s, "true") == 0) {
            st->f.both = 1;
        } else if (strcmp(s, "no") == 0 || strcmp(s, "false") == 0) {
            st->f.both = 0;
        } else {
            return app_config_fail_at(c, val, "'both' takes yes or no, got '%s'", s);
        }
        return TPU_OK;
    }
    if (strcmp(f->key, "factor") == 0) {
        status = app_config_get_number(c, "factor", val, KIND_NUMBER, &st->f.factor);
        if (status == TPU_OK && st->f.factor > 1) {
            status = app_config_fail_at(
                c, val, "'factor' must be above 0 and at most 1 (0.5: half the speed), got %s",
                app_config_text_of(val));
        }
        return status;
    }
    return app_config_get_index(c, "host", val, TPU_MAX_CHIPS - 1, &st->f.host);
}

/* 'faults:': a list of mappings, each a fault with its 'kind' and the keys it takes. */
tpu_status_t app_config_parse_faults(load_ctx_t *c, const yaml_node_t *val, app_config_t *cfg)
{
    yaml_node_item_t *it;
    tpu_status_t status;
    int n = 0, i;

    if (val->type != YAML_SEQUENCE_NODE) {
        return app_config_fail_at(
            c, val,
            "'faults' takes a list of faults such as - {kind: link-down, chip: 1, "
            "dir: +x}, not %s",
            app_config_is_null(val) ? "an empty value" : app_config_kind_name(val));
    }
    for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
        const yaml_node_t *item = app_config_node_at(c, *it), *kind = NULL;
        fault_state_t st;
        yaml_node_pair_t *p;
        tpu_err_t e = {0};
        const char *s;

        if (n == TPU_MAX_FAULTS) {
            return app_config_fail_at(c, item, "'faults' has more than %d items", TPU_MAX_FAULTS);
        }
        for (p = item->type == YAML_MAPPING_NODE ? item->data.mapping.pairs.start : NULL;
             p != NULL && p < item->data.mapping.pairs.top && kind == NULL; p++) {
            const char *k = app_config_text_of(app_config_node_at(c, p->key));

            if (k != NULL && strcmp(k, "kind") == 0) {
                kind = app_config_node_at(c, p->value);
            }
        }
        if (item->type == YAML_MAPPING_NODE && kind == NULL) {
            return app_config_fail_at(
                c, item, "a fault needs 'kind:' (slow-link, link-down, slow-chip or slow-nic)");
        }
        memset(&st, 0, sizeof(st));
        tpu_fault_init(&st.f, TPU_FAULT_SLOW_LINK);
        if (kind != NULL) {
            status = app_config_get_text(c, "kind", kind,
                                         "slow-link, link-down, slow-chip or slow-nic", &s);
            if (status == TPU_OK && tpu_fault_kind_parse(s, &st.f.kind, &e) != TPU_OK) {
                status = app_config_fail_at(c, kind, "%s", e.msg);
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        status = app_config_walk_map(c, item, "a fault", app_config_fault_fields, fault_pair, &st);
        if (status != TPU_OK) {
            return status;
        }
        for (i = 1; app_config_fault_fields[i].key != NULL; i++) {
            if (tpu_fault_key_use(st.f.kind, app_config_fault_fields[i].key) == 2 &&
                !((st.seen >> i) & 1)) {
                return app_config_fail_at(
                    c, item, "a %s fault needs '%s' (%s)", tpu_fault_kind_name(st.f.kind),
                    app_config_fault_fields[i].key, tpu_fault_usage(st.f.kind));
            }
        }
        cfg->faults[n] = st.f;
        app_config_mark(c, item, cfg->fault_at[n], sizeof(cfg->fault_at[n]));
        n++;
    }
    cfg->nfaults = n;
    return TPU_OK;
}
