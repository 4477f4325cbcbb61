/*
 * The help is generated from the command table: every row's flags (its own and
 * each shared group it takes) appear as an option line "  --NAME" in its --help,
 * with its two examples; no flag a command refuses appears (info takes no
 * --fault); 'tpuemu help' lists every command.  Prints what is missing; exit 1
 * then.
 */
#define _POSIX_C_SOURCE 200809L
#include "commands.h"
#include "help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad;

/* Does 'text' hold the option line of '--name'? */
static int has_option(const char *text, const char *name)
{
    char line[96];
    size_t len;
    const char *p = text;

    len = (size_t)snprintf(line, sizeof(line), "\n  --%s", name);
    while ((p = strstr(p, line)) != NULL) {
        if (p[len] == ' ' || p[len] == '\n') {
            return 1;
        }
        p += len;
    }
    return 0;
}

static char *help_of(const app_cmd_t *cmd)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    if (f == NULL) {
        exit(2);
    }
    if (cmd != NULL) {
        app_help_command(f, cmd);
    } else {
        app_help_commands(f);
    }
    fclose(f);
    return text;
}

int main(void)
{
    char *top = help_of(NULL), *text;
    int i, g, k, flags = 0;

    for (i = 0; i < app_ncommands; i++) {
        const app_cmd_t *c = &app_commands[i];
        app_opt_set_t sets[APP_G_COUNT + 1];
        int n;

        if (strstr(top, c->name) == NULL) {
            printf("'tpuemu help' does not list %s\n", c->name);
            bad = 1;
        }
        text = help_of(c);
        n = app_commands_sets(c, sets);
        for (g = 0; g < n; g++) {
            for (k = 0; k < sets[g].n; k++) {
                flags++;
                if (!has_option(text, sets[g].rows[k].name)) {
                    printf("tpuemu %s --help does not list --%s\n", c->name, sets[g].rows[k].name);
                    bad = 1;
                }
            }
        }
        if (strstr(text, c->examples[0]) == NULL || strstr(text, c->examples[1]) == NULL) {
            printf("tpuemu %s --help lacks its examples\n", c->name);
            bad = 1;
        }
        if (strcmp(c->name, "info") == 0 && has_option(text, "fault")) {
            printf("tpuemu info --help lists --fault, which info refuses\n");
            bad = 1;
        }
        free(text);
    }
    free(top);
    printf("%d commands, %d flag rows checked: %s\n", app_ncommands, flags, bad ? "FAIL" : "ok");
    return bad;
}
