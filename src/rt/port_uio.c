/* PLACEHOLDER: the UIO port backend is being written. */
#include "port.h"

int npk_port_open_uio(npk_port *p, const char *target) {
    (void)p;
    return npk_err(NPK_EUNSUPPORTED, "port 'uio:%s': the UIO port is not available in this build yet", target);
}
