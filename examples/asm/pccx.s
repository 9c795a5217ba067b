# SPDX-License-Identifier: MIT
# The pccx instruction test vector of pccx-isa.md in npukit's text form (docs/guide.md,
# "The assembler syntax"): one instruction per line, `mnemonic key=value ...`, `#` comments,
# `.word 0x...` for a raw 64-bit word.
#   npu asm --device pccx examples/asm/pccx.s -o $O/pccx.bin
#   npu disasm --device pccx $O/pccx.bin            (gives these lines back)
memset dest_cache=fmap_shape dest_addr=3 a_value=1 b_value=1 c_value=9
memset dest_cache=fmap_shape dest_addr=9 a_value=4 b_value=4 c_value=4
memcpy from_device=host to_device=npu dest_addr=100 src_addr=0 aux_addr=0 shape_ptr_addr=3 async=0
gemm dest_reg=512 src_addr=300 flags=w_scale size_ptr_addr=1 shape_ptr_addr=3 parallel_lane=4
gemv dest_reg=768 src_addr=400 flags=accm size_ptr_addr=2 shape_ptr_addr=9 parallel_lane=4
cvo cvo_func=reduce_sum src_addr=768 dst_addr=896 length=64 flags=0 async=0
memcpy from_device=npu to_device=host dest_addr=0 src_addr=896 aux_addr=0 shape_ptr_addr=3 async=0
