/*
 * The command table (rows in commands.def) and its lookups: a command by name,
 * the shared flag groups, the row sets a command parses.
 */
#include "commands.h"

#include "cmd/bench.h"
#include "cmd/info.h"
#include "cmd/model.h"
#include "cmd/op.h"
#include "cmd/replay.h"
#include "cmd/run.h"
#include "cmd/train.h"
#include "desc.h"

#include <stddef.h>
#include <string.h>

/* Link constants given on the command line: bytes/s and microseconds. */
#define MIN_BW     1e3
#define MAX_BW     1e15
#define MAX_LAT_US 1e6

#define OFF(f) offsetof(app_opts_t, f)
#define FLAG(name, f, help)                                               \
    {                                                                     \
        name, APP_OPT_FLAG, OFF(f), 0, 0, 0, 0, NULL, NULL, NULL, help, 0 \
    }
#define STR(name, f, arg, def, valid, help, flags)                          \
    {                                                                       \
        name, APP_OPT_STR, OFF(f), 0, 0, 0, 0, arg, def, valid, help, flags \
    }
#define SIZE(name, f, def, help)                             \
    {                                                        \
        name, APP_OPT_SIZE, OFF(f), 0, 0, 0, 0, "SIZE", def, \
            "a size such as 4096, 64K, 16M or 1G", help, 0   \
    }
#define SIZE_F(name, f, def, help, flags)                      \
    {                                                          \
        name, APP_OPT_SIZE, OFF(f), 0, 0, 0, 0, "SIZE", def,   \
            "a size such as 4096, 64K, 16M or 1G", help, flags \
    }
#define INT(name, f, lo, hi, arg, def, valid, help, flags)                    \
    {                                                                         \
        name, APP_OPT_INT, OFF(f), 0, 0, lo, hi, arg, def, valid, help, flags \
    }
#define I64(name, f, lo, arg, def, valid, help, flags)                       \
    {                                                                        \
        name, APP_OPT_I64, OFF(f), 0, 0, lo, 0, arg, def, valid, help, flags \
    }
#define DBL(name, f, lo, hi, arg, def, valid, help, flags)                    \
    {                                                                         \
        name, APP_OPT_DBL, OFF(f), 0, 0, lo, hi, arg, def, valid, help, flags \
    }
#define LIST(name, f, count, max, arg, valid, help, flags)                               \
    {                                                                                    \
        name, APP_OPT_LIST, OFF(f), OFF(count), max, 0, 0, arg, NULL, valid, help, flags \
    }
#define KV(name, f, max, lo, hi, arg, bad, help, flags)                                 \
    {                                                                                   \
        name, APP_OPT_KV, OFF(f), 0, max, lo, (double)(hi), arg, NULL, bad, help, flags \
    }

#include "commands.def"

const int app_ncommands = (int)(sizeof(app_commands) / sizeof(app_commands[0]));

/* The shared groups, by bit (APP_G_*). */
static const app_opt_set_t groups[APP_G_COUNT] = {
    OWN(g_help),  OWN(g_chip),  OWN(g_pod),   OWN(g_host),   OWN(g_fault),
    OWN(g_coll),  OWN(g_json),  OWN(g_csv),   OWN(g_report), OWN(g_measured),
    OWN(g_quiet), OWN(g_watch), OWN(g_inject)};

const app_cmd_t *app_commands_find(const char *name)
{
    int i;

    for (i = 0; i < app_ncommands; i++) {
        if (strcmp(app_commands[i].name, name) == 0) {
            return &app_commands[i];
        }
    }
    return NULL;
}

app_opt_set_t app_commands_shared(unsigned group)
{
    int g;

    for (g = 0; g < APP_G_COUNT; g++) {
        if (group == 1u << g) {
            return groups[g];
        }
    }
    return (app_opt_set_t){NULL, 0};
}

int app_commands_sets(const app_cmd_t *cmd, app_opt_set_t sets[APP_G_COUNT + 1])
{
    int n = 0, g;

    if (cmd->own.n > 0) {
        sets[n++] = cmd->own;
    }
    for (g = 0; g < APP_G_COUNT; g++) {
        if (cmd->shared & (1u << g)) {
            sets[n++] = groups[g];
        }
    }
    return n;
}
