# SPDX-License-Identifier: MIT
# LLM decode: bench_llm finds the model under the shared directory.
set_source_files_properties(${CMAKE_SOURCE_DIR}/bench/bench_llm.c PROPERTIES
  COMPILE_DEFINITIONS "NPUKIT_SHARED_DIR=\"${NPUKIT_SHARED_DIR}\"")
