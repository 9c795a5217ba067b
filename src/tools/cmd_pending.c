/* Commands whose implementation is in progress. Each is moved to its own
 * cmd_*.c file when it lands; until then it fails with a clear message. */
#include "cli.h"

/* (unused when every command has landed) */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int pending(const char *name, int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("%s: this command is not available in this build yet", name);
}

