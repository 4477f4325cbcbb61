/*
 * The pod description in YAML (see config_yaml.h): reading the file, libyaml's
 * document, and the top level.  The key tables are
 * config_schema.c's, the walk of the node tree config_walk.c's, the 'chip:',
 * 'mesh:' and 'faults:' sections config_sections.c's.
 *
 * The file is read whole and handed to libyaml's document API, which builds the
 * node tree of the one document the file must hold.  The tree is then walked
 * against three key tables (the top level, a custom 'chip:' and 'links:'), so
 * the schema lives in one place per mapping.  The walk is strict:
 *
 *   - every key must be in the table (an unknown key gets the closest known one,
 *     within an edit distance of 2, as a suggestion) and appear once;
 *   - every value must have its type: a number is a plain (unquoted) scalar in C
 *     strtod syntax, a byte count also takes K, M, G suffixes (app_parse_size, units.c),
 *     a count is a positive whole number, a string is any scalar, and a list or
 *     a mapping where a scalar belongs is an error; null values are errors;
 *   - topology, wrap and mesh strings are checked here already, so that their
 *     errors carry the file position.
 *
 * Every error is TPU_ERR_CONFIG (TPU_ERR_NO_MEMORY when libyaml or the reader
 * runs out of memory) with one message "name:line:col: what is wrong", where
 * line and col are 1-based and point at the key or the value at fault; control
 * characters echoed from the file are escaped as \xNN and a long value is cut
 * (tpu_err_set), so the message stays one line and keeps its reason.  'cfg' is written only when
 * the whole file is good.
 *
 * Aliases are allowed (libyaml shares the node); the walk never descends more
 * than four levels (top, faults, a fault, its chip coordinates), so no document
 * makes it expensive.
 */
#include "config_yaml.h"

#include "tpu/topo.h"

#include "alloc.h"
#include "config_schema.h"
#include "config_sections.h"
#include "config_walk.h"
#include "file.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

/* A config file is a few hundred bytes; anything past this is not one. */
#define MAX_FILE_BYTES (1u << 20)
/* Deepest nesting of flow collections ([ ] and { }) a file may have; a config needs 3. */
#define MAX_FLOW_DEPTH 64

/* What the top level keeps for the checks that need two keys. */
typedef struct root_state {
    app_config_t *cfg;
    const yaml_node_t *topology; /* the value nodes, when the file names them */
    const yaml_node_t *wrap;
    int naxes;
} root_state_t;

static tpu_status_t root_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                              const yaml_node_t *val, void *obj)
{
    root_state_t *st = obj;
    app_config_t *cfg = st->cfg;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], is_auto;
    tpu_err_t e = {0};
    tpu_status_t status;

    if (strcmp(f->key, "chip") == 0) {
        app_config_mark(c, val, cfg->chip_at, sizeof(cfg->chip_at));
        return app_config_parse_chip(c, key, val, cfg);
    }
    if (strcmp(f->key, "topology") == 0) {
        status = app_config_get_string(c, f->key, val, "a shape such as 4x4", cfg->topology);
        if (status == TPU_OK &&
            tpu_topo_parse_shape(cfg->topology, dims, &st->naxes, &e) != TPU_OK) {
            status = app_config_fail_at(c, val, "%s", e.msg);
        }
        st->topology = val;
        app_config_mark(c, val, cfg->topology_at, sizeof(cfg->topology_at));
        return status;
    }
    if (strcmp(f->key, "wrap") == 0) {
        status =
            app_config_get_string(c, f->key, val, "auto, all, none or axes such as x,z", cfg->wrap);
        if (status == TPU_OK &&
            tpu_topo_parse_wrap(cfg->wrap, TPU_MAX_AXES, wrap, &is_auto, &e) != TPU_OK) {
            status = app_config_fail_at(c, val, "%s", e.msg);
        }
        st->wrap = val;
        app_config_mark(c, val, cfg->wrap_at, sizeof(cfg->wrap_at));
        return status;
    }
    if (strcmp(f->key, "slices") == 0) {
        return app_config_get_count(c, f->key, val, f->max, &cfg->slices);
    }
    if (strcmp(f->key, "mesh") == 0) {
        return app_config_parse_mesh(c, val, cfg);
    }
    if (strcmp(f->key, "faults") == 0) {
        return app_config_parse_faults(c, val, cfg);
    }
    return app_config_walk_map(c, val, "'links'", app_config_link_fields, NULL, cfg);
}

static tpu_status_t parse_root(load_ctx_t *c, const yaml_node_t *root, app_config_t *cfg)
{
    root_state_t st = {cfg, NULL, NULL, 0};
    int wrap[TPU_MAX_AXES], is_auto;
    tpu_err_t e = {0};
    tpu_status_t status;

    if (root->type != YAML_MAPPING_NODE) {
        return app_config_fail_at(c, root,
                                  "a config is a mapping of keys such as 'chip: v5e', not %s",
                                  app_config_kind_name(root));
    }
    status = app_config_walk_map(c, root, "the file", app_config_root_fields, root_pair, &st);
    if (status != TPU_OK) {
        return status;
    }
    /* A wrap the file's own topology lacks an axis for. */
    if (st.topology != NULL && st.wrap != NULL &&
        tpu_topo_parse_wrap(cfg->wrap, st.naxes, wrap, &is_auto, &e) != TPU_OK) {
        return app_config_fail_at(c, st.wrap, "%s (topology %s)", e.msg, cfg->topology);
    }
    return TPU_OK;
}

/* The line and column of byte 'offset' of 'text', counted as libyaml counts marks. */
static yaml_mark_t mark_of_offset(const char *text, size_t len, size_t offset)
{
    yaml_mark_t mark = {0, 0, 0};
    size_t i;

    for (i = 0; i < offset && i < len; i++) {
        unsigned char ch = (unsigned char)text[i];

        if (ch == '\n' || (ch == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
            mark.line++;
            mark.column = 0;
        } else if ((ch & 0xc0) != 0x80 && ch != '\r') {
            mark.column++;
        }
    }
    mark.index = offset;
    return mark;
}

/* The error for a document libyaml refused: its problem text at its position. */
static tpu_status_t yaml_error(const yaml_parser_t *parser, const char *text, size_t len,
                               const char *name, tpu_err_t *err)
{
    yaml_mark_t mark = parser->problem_mark;
    const char *problem = parser->problem != NULL ? parser->problem : "unknown problem";
    char extra[96] = "";

    /* libyaml fails some allocations (a tag, an anchor, a scalar's copy) without
     * setting an error or a problem: that is memory too, not malformed text. */
    if (parser->error == YAML_MEMORY_ERROR ||
        (parser->error == YAML_NO_ERROR && parser->problem == NULL)) {
        return app_config_report(err, TPU_ERR_NO_MEMORY, "%s: out of memory while parsing YAML",
                                 name);
    }
    if (parser->error == YAML_READER_ERROR) {
        /* The reader gives a byte offset, not a mark. */
        mark = mark_of_offset(text, len, parser->problem_offset);
        if (parser->problem_value != -1) {
            snprintf(extra, sizeof(extra), " (byte 0x%02x)", (unsigned)parser->problem_value);
        }
    } else if (parser->context != NULL) {
        snprintf(extra, sizeof(extra), " (%s at %zu:%zu)", parser->context,
                 parser->context_mark.line + 1, parser->context_mark.column + 1);
    }
    return app_config_report(err, TPU_ERR_CONFIG, "%s:%zu:%zu: malformed YAML: %s%s", name,
                             mark.line + 1, mark.column + 1, problem, extra);
}

/*
 * The offset of the first '[' or '{' that opens a flow collection deeper than
 * MAX_FLOW_DEPTH, or 'len' when there is none.  libyaml's scanner does work in
 * proportion to the flow depth for every token, so a file nested 500,000 deep
 * would take minutes: this linear pass refuses it first.  Quoted scalars and
 * comments are skipped; brackets inside a plain scalar count, which can only
 * refuse a file with 64 of them, not accept a deep one.
 */
static size_t too_deep(const char *text, size_t len)
{
    size_t i, depth = 0;
    char quote = 0;
    int comment = 0;

    for (i = 0; i < len; i++) {
        char ch = text[i];

        if (comment) {
            comment = ch != '\n' && ch != '\r';
        } else if (quote == '\'') {
            quote = ch == '\'' ? (i + 1 < len && text[i + 1] == '\'' ? (i++, quote) : 0) : quote;
        } else if (quote == '"') {
            if (ch == '\\') {
                i++;
            } else if (ch == '"') {
                quote = 0;
            }
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' ||
                                 text[i - 1] == '\n' || text[i - 1] == '\r')) {
            comment = 1;
        } else if (ch == '[' || ch == '{') {
            if (++depth > MAX_FLOW_DEPTH) {
                return i;
            }
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return len;
}

void app_config_init(app_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->ici_bw = -1;
    cfg->ici_latency = -1;
    cfg->dcn_bw = -1;
    cfg->dcn_latency = -1;
}

tpu_status_t app_config_load_string(const char *text, size_t len, const char *name,
                                    app_config_t *cfg, tpu_err_t *err)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    const yaml_node_t *root;
    app_config_t tmp;
    load_ctx_t c;
    size_t deep;
    tpu_status_t status;

    if (name == NULL) {
        name = "<config>";
    }
    if (text == NULL) {
        text = "";
        len = 0;
    }
    if (!yaml_parser_initialize(&parser)) {
        status = app_config_report(err, TPU_ERR_NO_MEMORY, "%s: out of memory for the YAML parser",
                                   name);
        goto out;
    }
    deep = too_deep(text, len);
    if (deep < len) {
        yaml_mark_t m = mark_of_offset(text, len, deep);

        status = app_config_report(
            err, TPU_ERR_CONFIG,
            "%s:%zu:%zu: lists and mappings nested deeper than %d levels (a config "
            "nests at most 3)",
            name, m.line + 1, m.column + 1, MAX_FLOW_DEPTH);
        goto out_delete_parser;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        status = yaml_error(&parser, text, len, name, err);
        goto out_delete_parser;
    }
    root = yaml_document_get_root_node(&doc);
    if (root == NULL || app_config_is_null(root)) {
        status = app_config_report(
            err, TPU_ERR_CONFIG,
            "%s:%zu:%zu: the file is empty (expected a mapping such as 'chip: v5e')", name,
            root ? root->start_mark.line + 1 : 1, root ? root->start_mark.column + 1 : 1);
        goto out_delete_doc;
    }
    if (!yaml_parser_load(&parser, &extra)) {
        status = yaml_error(&parser, text, len, name, err);
        goto out_delete_doc;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        status = app_config_report(err, TPU_ERR_CONFIG,
                                   "%s:%zu:%zu: a second YAML document (a config file holds one)",
                                   name, extra.start_mark.line + 1, extra.start_mark.column + 1);
        goto out_delete_extra;
    }
    tmp = *cfg;
    c.doc = &doc;
    c.name = name;
    c.err = err;
    status = parse_root(&c, root, &tmp);
    if (status == TPU_OK) {
        *cfg = tmp;
    }
out_delete_extra:
    yaml_document_delete(&extra);
out_delete_doc:
    yaml_document_delete(&doc);
out_delete_parser:
    yaml_parser_delete(&parser);
out:
    return status;
}

tpu_status_t app_config_load(const char *path, app_config_t *cfg, tpu_err_t *err)
{
    struct stat st;
    size_t len = 0, cap = 0;
    char *buf = NULL;
    char why[128];
    FILE *f;
    tpu_status_t status;

    memset(&st, 0, sizeof(st));
    if (path == NULL) {
        status = app_config_report(err, TPU_ERR_INVALID, "no config file named");
        goto out;
    }
    if (path[0] == '\0') {
        status = app_config_report(err, TPU_ERR_CONFIG,
                                   "--config got an empty file name; give a YAML file");
        goto out;
    }
    /* Opened without blocking, so that a FIFO cannot stall the open (common/file.c). */
    f = tpu__fopen_regular(path, why, sizeof(why));
    if (f == NULL) {
        status = app_config_report(err, TPU_ERR_CONFIG, "%s: %s%s", path, why,
                                   strncmp(why, "not a", 5) == 0 ? "; give a YAML file" : "");
        goto out;
    }
    if (fstat(fileno(f), &st) == 0 && st.st_size > MAX_FILE_BYTES) {
        status =
            app_config_report(err, TPU_ERR_CONFIG, "%s: larger than %u bytes; not a config file",
                              path, MAX_FILE_BYTES);
        fclose(f);
        goto out;
    }
    for (;;) {
        size_t n;

        if (len == cap) {
            char *grown;

            if (cap > MAX_FILE_BYTES) {
                break;
            }
            cap = cap ? 2 * cap : 4096;
            grown = tpu__realloc(buf, cap);
            if (grown == NULL) {
                status = app_config_report(err, TPU_ERR_NO_MEMORY,
                                           "%s: out of memory reading the file", path);
                goto out_free;
            }
            buf = grown;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (ferror(f)) {
        status =
            app_config_report(err, TPU_ERR_CONFIG, "%s: cannot read: %s", path, strerror(errno));
        goto out_free;
    }
    if (len > MAX_FILE_BYTES) {
        status =
            app_config_report(err, TPU_ERR_CONFIG, "%s: larger than %u bytes; not a config file",
                              path, MAX_FILE_BYTES);
        goto out_free;
    }
    status = app_config_load_string(buf, len, path, cfg, err);
out_free:
    tpu__free(buf);
    fclose(f);
out:
    return status;
}
