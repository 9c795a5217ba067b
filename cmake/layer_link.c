// SPDX-License-Identifier: MIT
/* The layer link check (CMakeLists.txt, layer_link_<layer>): linked with every
 * object of one layer's library and only the layers below it. */
int main(void) { return 0; }
