/* The help texts, generated from the command table (see help.h). */
#include "help.h"

#include <string.h>

/* The column the help lines start at, after "  --name ARG". */
#define COL 30
/* Lines are folded before this column. */
#define WIDTH 100

/* Print 'text' from column 'col', folded at WIDTH; 'at' is the column the cursor is at. */
static void fold(FILE *out, const char *text, int col, int at)
{
    const char *p = text;

    while (*p != '\0') {
        size_t word = strcspn(p, " ");

        if (at > col && at + 1 + (int)word > WIDTH) {
            fprintf(out, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', out);
            at++;
        }
        if (at < col) {
            fprintf(out, "%*s", col - at, "");
            at = col;
        }
        fprintf(out, "%.*s", (int)word, p);
        at += (int)word;
        p += word;
        while (*p == ' ') {
            p++;
        }
    }
    fputc('\n', out);
}

/* One flag: "  --name ARG   help (default D)", then its accepted values. */
static void flag_line(FILE *out, const app_opt_t *o)
{
    char head[96], line[512];
    int at;

    at = snprintf(head, sizeof(head), "  --%s%s%s%s%c%s", o->name, o->arg != NULL ? " " : "",
                  o->arg != NULL ? o->arg : "", APP_OPT_SHORT_OF(o->flags) != 0 ? " (-" : "",
                  APP_OPT_SHORT_OF(o->flags), APP_OPT_SHORT_OF(o->flags) != 0 ? ")" : "");
    fputs(head, out);
    if (at >= COL - 1) {
        fprintf(out, "\n");
        at = 0;
    }
    snprintf(line, sizeof(line), "%s%s%s%s", o->help, o->def != NULL ? " (default " : "",
             o->def != NULL ? o->def : "", o->def != NULL ? ")" : "");
    fold(out, line, COL, at);
    switch (o->type) {
    case APP_OPT_INT:
    case APP_OPT_DBL:
        snprintf(line, sizeof(line), "values: %.15g to %.15g", o->lo, o->hi);
        break;
    case APP_OPT_I64:
        snprintf(line, sizeof(line), "values: a whole number, %.15g or more", o->lo);
        break;
    case APP_OPT_LIST:
        snprintf(line, sizeof(line), "values: repeatable, at most %d", o->max);
        break;
    case APP_OPT_KV:
        snprintf(line, sizeof(line),
                 "values: NAME=VALUE[,...], VALUE from %.15g to %.15g; repeatable, at most %d "
                 "entries",
                 o->lo, o->hi, o->max);
        break;
    default:
        if (o->valid == NULL) {
            return;
        }
        snprintf(line, sizeof(line), "values: %s", o->valid);
    }
    fold(out, line, COL, 0);
}

static void set_lines(FILE *out, app_opt_set_t set)
{
    int k;

    for (k = 0; k < set.n; k++) {
        flag_line(out, &set.rows[k]);
    }
}

void app_help_commands(FILE *out)
{
    int i;

    fprintf(out, "usage: tpuemu COMMAND [options]         (tpuemu help COMMAND: its options)\n"
                 "       mpirun -n CHIPS tpuemu [run] [options]\n"
                 "       tpuemu --version\n\n");
    fold(out,
         "tpuemu emulates a TPU pod on an MPI cluster: every rank is one chip, the collectives "
         "move real bytes, and every one is timed on the pod's link model.",
         0, 0);
    fprintf(out, "\ncommands:\n");
    for (i = 0; i < app_ncommands; i++) {
        fprintf(out, "  %-12s", app_commands[i].name);
        fold(out, app_commands[i].summary, 15, 14);
    }
}

void app_help_command(FILE *out, const app_cmd_t *cmd)
{
    static const struct {
        unsigned groups;
        const char *title;
    } parts[] = {
        {APP_G_COLL, "The collective"},
        {APP_G_CHIP | APP_G_POD | APP_G_HOST | APP_G_FAULT, "Pod options"},
        {APP_G_JSON | APP_G_CSV | APP_G_REPORT | APP_G_MEASURED | APP_G_QUIET | APP_G_WATCH |
             APP_G_INJECT | APP_G_HELP,
         "Output and run options"},
    };
    size_t p;
    int g;

    fprintf(out, "usage: tpuemu %s %s\n\n", cmd->name, cmd->synopsis);
    fold(out, cmd->about, 0, 0);
    if (cmd->operand.arg != NULL) {
        fprintf(out, "\n  %-27s the %s\n", cmd->operand.arg, cmd->operand.what);
    }
    if (cmd->own.n > 0) {
        fprintf(out, "\nOptions of %s:\n", cmd->name);
        set_lines(out, cmd->own);
    }
    for (p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
        if ((cmd->shared & parts[p].groups) == 0) {
            continue;
        }
        fprintf(out, "\n%s:\n", parts[p].title);
        for (g = 0; g < APP_G_COUNT; g++) {
            if (cmd->shared & parts[p].groups & (1u << g)) {
                set_lines(out, app_commands_shared(1u << g));
            }
        }
    }
    fprintf(out, "\nExamples:\n  %s\n  %s\n", cmd->examples[0], cmd->examples[1]);
}
