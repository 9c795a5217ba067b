/* PLACEHOLDER: the qtest port backend is being written. */
#include "port.h"

int npk_port_open_qtest(npk_port *p, const char *target, const char *opts) {
    (void)p;
    (void)opts;
    return npk_err(NPK_EUNSUPPORTED, "port '%s': the qtest port is not available in this build yet", target);
}
