/*
 * The option parser of every command: a command's flags are typed rows
 * (app_opt_t), and one pass over argv fills a app_opts_t from them, with one
 * message naming the flag for any bad value.  The rows themselves are in
 * commands.def; the help text is generated from the same rows (help.c).
 * Private to launch/.
 */
#ifndef APP_OPT_H
#define APP_OPT_H

#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

/* The type of a flag's value. */
typedef enum app_opt_type {
    APP_OPT_FLAG, /* --NAME: sets an int to 1; takes no value */
    APP_OPT_STR,  /* --NAME TEXT: a non-empty string (checked later by its user) */
    APP_OPT_INT,  /* a whole number from lo to hi, into an int */
    APP_OPT_I64,  /* a whole number of at least lo, into an int64_t */
    APP_OPT_SIZE, /* bytes such as 4096, 64K, 16M or 1G, from 1 byte to 1P; kept as text */
    APP_OPT_DBL,  /* a finite number from lo to hi, into a double (-1: not given) */
    APP_OPT_LIST, /* a string that may be given several times: appended to a list */
    APP_OPT_KV    /* NAME=VALUE[,...], repeatable: into an app_kv_t; values from lo to hi */
} app_opt_type_t;

/* Row flags. */
#define APP_OPT_DEFAULT 1u /* store 'def' into the field before parsing */
#define APP_OPT_AGREE   2u /* the ranks of a job compare it at start (changes their calls) */
#define APP_OPT_KV_INT  4u /* APP_OPT_KV: the values are whole numbers */
/* The row's one-letter form (-b for --min-bytes, as nccl-tests spells it), in the top byte. */
#define APP_OPT_SHORT(c)     ((unsigned)(unsigned char)(c) << 24)
#define APP_OPT_SHORT_OF(fl) ((char)((fl) >> 24))

/* One flag of a command. */
typedef struct app_opt {
    const char *name;    /* without the dashes: "topology" */
    app_opt_type_t type; /* the value's type */
    size_t off;          /* where the value goes in app_opts_t */
    size_t aux;          /* LIST: the offset of the int count; INT: of an int set to 1
                            when the flag is given (0: none) */
    int max;             /* LIST, KV: the list's capacity (KV: entries) */
    double lo, hi;       /* INT, I64, DBL, KV: the valid range */
    const char *arg;     /* the value's name in the help: "SHAPE" (NULL: FLAG) */
    const char *def;     /* the default as the help shows it (NULL: none) */
    const char *valid;   /* what a valid value looks like (empty values, KV errors) */
    const char *help;    /* one line of help */
    unsigned flags;      /* APP_OPT_* */
} app_opt_t;

/* A set of rows: a command's own, or a group of the shared ones. */
typedef struct app_opt_set {
    const app_opt_t *rows;
    int n;
} app_opt_set_t;

/* What a command takes besides flags: an operand such as the module file. */
typedef struct app_operand {
    const char *arg;  /* "MODULE.hlo"; NULL: no operand */
    const char *what; /* "module file": for messages */
    size_t off;       /* where the text goes in app_opts_t */
} app_operand_t;

/*
 * Parse argv[from..argc) against the rows of 'sets' into 'opts' (a app_opts_t,
 * passed as bytes).  'cmd' and 'hint' name the command in messages ("model",
 * "model --op"; "model --op matmul": see tpuemu HINT --help).  Fills only the
 * fields of the rows given (the caller zeroes the struct and calls
 * app_opt_defaults() first).  "-h" is --help.  A flag unknown to the rows gets
 * "did you mean" when one is near.  Prints nothing.
 */
tpu_status_t app_opt_parse(int argc, char **argv, int from, const app_opt_set_t *sets, int nsets,
                           const app_operand_t *operand, const char *cmd, const char *hint,
                           void *opts, tpu_err_t *err);
/* Free what the rows' values own in 'opts' (the KV lists). */
void app_opt_free(const app_opt_set_t *sets, int nsets, void *opts);
/* Store each row's default (rows flagged APP_OPT_DEFAULT) into 'opts'. */
void app_opt_defaults(const app_opt_set_t *sets, int nsets, void *opts);
/* The value of row 'o' in 'opts' as text ("10", "0.005", the string; NULL: not given),
 * for comparing across ranks; lists are joined with ';' into 'buf'. */
const char *app_opt_value(const app_opt_t *o, const void *opts, char *buf, size_t len);

/* A finite number in C syntax from 'lo' to 'hi', for '--NAME V'; one message naming
 * the flag otherwise.  Every number flag reads through it. */
tpu_status_t app_parse_number(const char *name, const char *v, double lo, double hi, double *out,
                              tpu_err_t *err);

/* A parsed APP_OPT_KV list: names (owned) and values. */
typedef struct app_kv {
    int n;
    int cap;
    char **names;
    double *values;   /* !APP_OPT_KV_INT */
    int64_t *ivalues; /* APP_OPT_KV_INT */
} app_kv_t;

/*
 * Split one value of KV row 'o' ("A=1,B=2") and append it to 'list'; 'list' NULL:
 * only check it.  Frees nothing on error ('list' stays valid for app_kv_fini()).
 */
tpu_status_t app_kv_parse(const app_opt_t *o, const char *text, app_kv_t *list, tpu_err_t *err);
void app_kv_fini(app_kv_t *list);

/* The word of 'words' (n of them) nearest to 'word' in edits, when it is near enough
 * to be a typo of it (at most 2 edits, fewer than its length); else NULL. */
const char *app_opt_nearest(const char *word, const char *const *words, int n);

#endif /* APP_OPT_H */
