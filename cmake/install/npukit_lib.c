// SPDX-License-Identifier: MIT
/* The shared library's own translation unit (cmake/install/install.cmake):
 * the layers come in whole from their archives; this file only anchors the
 * target, which CMake wants to have a source. */
#include "npukit/npu.h"

typedef int npk_shared_library_anchor;
