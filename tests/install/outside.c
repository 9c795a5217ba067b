// SPDX-License-Identifier: MIT
/* A program outside npukit, built against an installed tree (tests/install_outside.cmaketest):
 * a 2x3 by 3x2 int8 GEMM tile on the simulated e1 through the installed headers and library,
 * checked against the product computed here. Prints "outside: ok <version>". */
#include <npukit/e1.h>
#include <npukit/npu.h>

#include <stdio.h>

int main(void) {
    const int8_t A[2 * 3] = {1, -2, 3, 4, 5, -6}, B[3 * 2] = {7, 8, -9, 10, 11, 12};
    int32_t C[2 * 2], want[2 * 2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int32_t s = 0;
            for (int k = 0; k < 3; k++) s += A[i * 3 + k] * B[k * 2 + j];
            want[i * 2 + j] = s;
        }
    npk_port *port;
    npk_e1 *e;
    if (npk_port_open(&port, "sim", "e1", NULL) || npk_e1_open(&e, port)) {
        fprintf(stderr, "outside: %s\n", npk_errmsg());
        return 1;
    }
    int rc = npk_e1_gemm_tile(e, 0, 2, 2, 3, A, B, C);
    npk_e1_close(e);
    npk_port_close(port);
    if (rc) {
        fprintf(stderr, "outside: %s\n", npk_errmsg());
        return 1;
    }
    for (int i = 0; i < 4; i++)
        if (C[i] != want[i]) {
            fprintf(stderr, "outside: C[%d] = %d, expected %d\n", i, (int)C[i], (int)want[i]);
            return 1;
        }
    printf("outside: ok %s\n", npk_version());
    return 0;
}
