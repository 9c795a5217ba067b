#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the device and qtest fuzzers (tests/fuzz/corpus/).
Seeds are small, valid command sequences taken from the specs' worked examples,
so the fuzzers start from inputs that reach deep into each model."""
import os
import struct
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")


def rec(kind, off, v, x=0):
    return struct.pack("<BHIB", kind, off, v & 0xffffffff, x)


def write(off, v):
    return rec(0, off, v)


def read(off):
    return rec(1, off, 0)


def step(n):
    return rec(2, 0, n)


def poke(addr, v):
    return rec(3, addr >> 4, v, addr & 15)


def save(name, fname, data):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)


# e1: DOT4, the 2x2x3 GEMM, the two-descriptor ring (e1-rtl-notes.md).
dot4 = write(0x00, 0x04030201) + write(0x04, 0xf807fa05) + write(0x14, 0xffffff00) + write(0x10, 4) + \
    write(0x0c, 1) + step(3) + read(0x08) + read(0x18) + read(0x1c)
save("device_e1", "dot4", dot4)
gemm = write(0x80, 0x040302ff) + write(0x84, 0x00000605) + write(0x88, 0x0a090807) + write(0x8c, 0x00000c0b) + \
    write(0x20, 0x00030202) + write(0x24, 0x00200800) + write(0x28, 0x00080203) + write(0x10, 8) + \
    write(0x0c, 1) + step(12) + read(0xa0) + read(0x50)
save("device_e1", "gemm", gemm)
ring = b""
for i, w in enumerate([0x80000004, 0x04030201, 0xf807fa05, 0xffffff00, 0xD0000108, 0x2000, 0x3000, 0]):
    ring += poke(0x1000 + 4 * i, w)
for i, w in enumerate([0x040302ff, 0x00000605, 0x0a090807, 0x00000c0b]):
    ring += poke(0x2000 + 4 * i, w)
ring += write(0x20, 0x00030202) + write(0x24, 0x00200800) + write(0x28, 0x00080203) + write(0x40, 0x1000) + \
    write(0x44, 2) + write(0x30, 1) + write(0x0c, 1) + step(60) + read(0x4c) + read(0x48) + write(0x0c, 2)
save("device_e1", "ring", ring)
sec = write(0x34, 0xc0000005) + write(0x38, 1) + write(0x30, 1 | (6 << 12)) + write(0x44, 1) + write(0x0c, 1) + \
    step(4) + read(0x4c) + read(0x50) + read(0x3c)
save("device_e1", "sec", sec)

# qtest: first byte selects the device (0 e1, 1 v0, 2 shell, 3 pccx).
qt = b"\x00" + b"""writel 0x10020000 0x04030201
writel 0x10020004 0xf807fa05
writel 0x10020014 0xffffff00
writel 0x10020010 4
writel 0x1002000c 1
clock_step 3
readl 0x10020008
readq 0x10020018
write 0x2000 16 0xff020304050600000708090a0b0c0000
read 0x2000 16
b64write 0x3000 4 AQIDBA==
b64read 0x3000 4
memset 0x4000 8 0x5a
clock_set 100
npu_regs
npu_reset
readb 0x10020000
bogus verb
"""
save("qtest", "e1_dot4", qt)
for i, dev in enumerate(["v0", "shell", "pccx"], 1):
    save("qtest", dev + "_basic", bytes([i]) + b"readl 0x%x\nnpu_regs\nclock_step 10\nnpu_reset\n" % (
        {1: 0x10020000, 2: 0x10030000, 3: 0x10040008}[i]))
print("seeds written under", os.path.normpath(root))


# ---- issue 8: seeds of the device-aware and file-format fuzzers ------------------------
import random

rng = random.Random(8)


def u8(v):
    return struct.pack("<B", v & 0xff)


def u16(v):
    return struct.pack("<H", v & 0xffff)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v & 0xffffffffffffffff)


def rand_bytes(n):
    return bytes(rng.randrange(256) for _ in range(n))


# generic register fuzzer (fuzz_device.c) seeds for v0, pccx and shell
V0 = {"ctrl": 0x008, "base_lo": 0x018, "len": 0x020, "bell": 0x02c, "status": 0x00c}
nop = [0] * 16
nop[15] = 7
v0s = b""
for i, w in enumerate([0x00020010, 4, 4, 4, 0x2000, 0, 0x2100, 0, 0x2200, 0, 16, 16, 16, 0, 0, 9]):
    v0s += poke(0x1000 + 4 * i, w)
for i, w in enumerate([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]):
    v0s += poke(0x1040 + 4 * i, w)
v0s += write(V0["base_lo"], 0x1000) + write(V0["len"], 8) + write(V0["ctrl"], 1) + write(V0["bell"], 2) + \
    step(4000) + read(V0["status"]) + read(0x05c) + write(V0["ctrl"], 3)
save("device_v0", "matmul_nop", v0s)
# pccx: INSTR_LO then INSTR_HI issues; MEMSET fmap 0 = (1,1,8), CVO EXP of 8 elements
memset_w = (0x3 << 60) | (0 << 58) | (0 << 52) | (1 << 36) | (1 << 20) | (8 << 4)
pcs = write(0x00, memset_w & 0xffffffff) + write(0x04, memset_w >> 32)
cvo_w = (0x4 << 60) | (0 << 56) | (0 << 39) | (16 << 22) | (8 << 6)
pcs += write(0x00, cvo_w & 0xffffffff) + write(0x04, cvo_w >> 32) + step(1000) + read(0x08) + read(0x74) + \
    write(0x00, 0) + write(0x04, 0x50000000) + step(10) + read(0x18) + write(0x08, 4) + write(0x0c, 2)
save("device_pccx", "memset_cvo", pcs)
# shell: a NOOP descriptor in a 64-byte ring, doorbell
shs = poke(0x3000, 0x00010000 | 0x00) + poke(0x3004, 5)
shs = b""
for i, w in enumerate([0x00000100 | 0x00, 5, 0, 0, 0, 0, 0, 0]):
    shs += poke(0x3000 + 4 * i, w)
shs += write(0x020, 0x3000) + write(0x028, 64) + write(0x030, 32) + write(0x040, 1) + step(200) + read(0x008) + \
    read(0x044) + write(0x00c, 1)
save("device_shell", "noop", shs)

# v0_ring (fuzz_v0_ring.c decoding)
def v0_hdr(ring_sel, h1, mask, n, fault=b"\x00\x00", window=b""):
    return u8(ring_sel) + u8(h1) + u8(mask) + window + fault + u8(n - 1)


def v0_addr(slot16):
    return u16(slot16)


def v0_matmul(M, N, K, a, b, c, relu=0):
    return u8(2 if relu else 1) + u8(0) + v0_addr(a) + v0_addr(b) + v0_addr(c) + u16(M) + u16(N) + u16(K) + \
        u8(0) + u8(0) + u8(0)


def v0_simple(sel):
    return u8(sel) + u8(0) + v0_addr(0) + v0_addr(0) + v0_addr(0)


def v0_conv(h, w, cin, cout, k, p, a, b, c):
    return u8(3) + u8(0) + v0_addr(a) + v0_addr(b) + v0_addr(c) + u16(h) + u16(w) + u16(cin) + u16(cout) + u8(k) + \
        u8(p) + u8(0) + u8(0) + u8(0)


def v0_relu(M, N, a, c):
    return u8(5) + u8(0) + v0_addr(a) + v0_addr(0) + v0_addr(c) + u16(M) + u16(N) + u8(0) + u8(0)


def v0_pool(h, w, ch, p, a, c):
    return u8(6) + u8(0) + v0_addr(a) + v0_addr(0) + v0_addr(c) + u16(h) + u16(w) + u16(ch) + u8(p) + u8(0) + u8(0)


data = rand_bytes(4096)
save("v0_ring", "matmul", v0_hdr(3, 0, 0x1f, 2) + v0_matmul(4, 4, 4, 0, 0x10, 0x20) + v0_matmul(8, 3, 5, 0x40, 0x60,
                                                                                            0x80, 1) + data)
save("v0_ring", "mixed_fallback", v0_hdr(4, 3, 0x1f, 6) + v0_simple(0) + v0_relu(4, 20, 0, 0x20) + v0_simple(8) +
     v0_pool(6, 6, 4, 0, 0x40, 0x80) + v0_simple(7) + v0_conv(5, 5, 3, 4, 1, 0x04, 0x100, 0x140, 0x180) + data)
save("v0_ring", "bus_error", v0_hdr(3, 0, 0x1f, 2, fault=b"\x03\x05") + v0_matmul(4, 4, 4, 0, 0x10, 0x20) +
     v0_matmul(4, 4, 4, 0, 0x10, 0x20) + data)
save("v0_ring", "hang", v0_hdr(3, 0, 0x1f, 2, fault=b"\x33\x02") + v0_matmul(4, 4, 4, 0, 0x10, 0x20) +
     v0_simple(0) + data)
save("v0_ring", "window_overflow", v0_hdr(2, 4 | 8, 0x1f, 2, window=u16(0) + u16(8)) + v0_matmul(4, 4, 4, 0, 0x10,
                                                                                                  0x20) + data)

# e1_ring (fuzz_e1_ring.c decoding): cfg, base, stride; h; fault; descriptors
def e1_desc(sel, w0, w1, w2, w3):
    return u8(sel) + u32(w0) + w1 + w2 + u32(w3)


def e1_a(off):  # arena offset (word aligned)
    return u16(off & 0x3ffc)


gemm_cfg, gemm_base, gemm_stride = 0x00030202, 0x00200800, 0x00080203
ring = u32(gemm_cfg) + u32(gemm_base) + u32(gemm_stride) + u8(0 | (1 << 3)) + b"\x00\x00"
ring += e1_desc(0, 0x80000004, e1_a(0x000), e1_a(0x004), 0xffffff00)  # DOT4 (OP_A/OP_B words as given)
ring += e1_desc(0, 0xD0000108, e1_a(0x8000), e1_a(0x9000), 0)  # GEMM_S8 stream 16 B + writeback
ring += b"\xff\x02\x03\x04\x05\x06\x00\x00\x07\x08\x09\x0a\x0b\x0c\x00\x00" * 64
save("e1_ring", "worked_ring", ring)
ring2 = u32(e1_gemm := 0x0000000c) + u32(0x00002000) + u32(0) + u8(5 | (3 << 3)) + b"\x03\x01"
ring2 += e1_desc(2 | (1 << 2) | (2 << 5), 0x8000000b, e1_a(0x8000), e1_a(0x9000), 0)
ring2 += e1_desc(0, 0x80000000, e1_a(0), e1_a(0), 0)
ring2 += e1_desc(1, 0x0000000d, e1_a(0), e1_a(0), 0)
ring2 += e1_desc(0, 0x80000002, e1_a(0), e1_a(0), 0) + rand_bytes(512)
save("e1_ring", "vrelu_fault_noowner", ring2)
ring3 = u32(gemm_cfg) + u32(gemm_base) + u32(gemm_stride) + u8(2 | (1 << 3)) + b"\x23\x00"
ring3 += e1_desc(0, 0xD0000108, e1_a(0x8000), e1_a(0x9000), 0) + e1_desc(0, 0x80000001, e1_a(0), e1_a(0), 0)
ring3 += rand_bytes(256)
save("e1_ring", "hang", ring3)


# pccx_queue (fuzz_pccx_queue.c decoding)
def pq_memset(cache, idx, a, b, c):
    return u8(0 | (cache << 7)) + u8(a) + u8(b) + u8(c) + u8(idx)


def pq_memcpy(to_host, dst, src, aux, shape):
    x = (2 if to_host else 1) | (shape << 2)
    return u8(1) + u8(x) + u16(dst) + u16(src) + u8(aux)


def pq_gemv(gemm, dst, src, flags, size_ptr, shape_ptr, lanes=0):
    y = size_ptr | (shape_ptr << 3)
    return u8(3 if gemm else 2) + u8(flags | (lanes << 6)) + u8(y) + u16(dst) + u16(src)


def pq_cvo(func, src, dst, length, flags=0):
    return u8(4) + u8(func | (flags << 3)) + u8(length) + u16(src) + u16(dst)


pq = u8(0) + u16(0x800) + u16(0x400) + b"\x00\x00"
prog = [pq_memset(0, 1, 1, 1, 16), pq_memset(1, 2, 8, 16, 0), pq_memcpy(0, 10, 0, 0, 1),
        pq_gemv(0, 100, 10, 0x20, 2, 1), pq_cvo(0, 100, 200, 8, 2), pq_cvo(5, 200, 300, 8),
        pq_cvo(6, 200, 400, 8, 1), pq_memcpy(1, 0, 200, 4, 1), pq_gemv(1, 120, 10, 0x18, 2, 1)]
bf16_ones = b"\x80\x3f" * 64
save("pccx_queue", "gemv_softmax", pq + u8(len(prog)) + b"".join(prog) + bf16_ones + rand_bytes(1024))
prog2 = [pq_memset(0, 3, 2, 2, 8), pq_memcpy(0, 0, 0, 1, 3), pq_cvo(9, 0, 10, 4), pq_cvo(1, 0, 10, 0),
         pq_memcpy(1, 0, 0, 0xff, 3), b"\x07" + u64(0x5000000000000001), pq_cvo(2, 0, 30, 16)]
save("pccx_queue", "faults", u8(0x40) + u16(0x100) + u16(0x100) + b"\x03\x01" + u8(3) + u8(len(prog2)) +
     b"".join(prog2) + rand_bytes(512))
prog3 = [pq_memset(0, 1, 1, 1, 8)] + [pq_cvo(0, 0, 8, 8)] * 40
save("pccx_queue", "overflow", u8(0) + u16(0x100) + u16(0x100) + b"\x00\x00" + u8(0x80 | 20) +
     b"".join(prog3 * 7) + rand_bytes(64))
save("pccx_queue", "hang", u8(0) + u16(0x800) + u16(0x400) + b"\x33\x00" + u8(4) +
     b"".join([pq_memset(0, 1, 1, 1, 16), pq_memcpy(0, 10, 0, 0, 1), pq_cvo(0, 10, 20, 16),
               pq_memcpy(1, 0, 20, 0, 1)]) + bf16_ones)

# asm: first byte 0 v0 text, 1 pccx text, 2 shell text; | 0x80 binary
save("asm", "v0_text", b"\x00" + b"""# ring
matmul_s8 m=16 n=16 k=16 a=0x80000000 sa=16 b=0x80001000 sb=16 c=0x80002000 sc=64 flags=signed tag=1
relu m=2 n=32 a=0x1000 sa=32 c=0x2000 sc=32 tag=2
maxpool_s8 h=4 w=4 c=8 a=0 sa=32 c_addr=0 sc=16
nop tag=3
barrier
fallback tag=9
op=0x77 tag=4
""")
save("asm", "pccx_text", b"\x01" + b"""gemv   dest_reg=768 src_addr=400 flags=accm size_ptr_addr=2 shape_ptr_addr=9 parallel_lane=4
gemm   dest_reg=512 src_addr=300 flags=w_scale size_ptr_addr=1 shape_ptr_addr=3 parallel_lane=4
memcpy from_device=host to_device=npu dest_addr=100 src_addr=0 aux_addr=0 shape_ptr_addr=3 async=0
memset dest_cache=fmap_shape dest_addr=3 a_value=1 b_value=1 c_value=9
cvo    cvo_func=reduce_sum src_addr=768 dst_addr=896 length=64 flags=sub_emax|accm async=1 ; comment
.word  0x5000000000000000
""")
save("asm", "shell_text", b"\x02" + b"""DMA_COPY src=0x1000 dst=0x2000 bytes=64 tag=1
DMA_STRIDED src=0x1000 dst=0x2000 row_bytes=32 rows=4 src_stride=2 dst_stride=1
GEMM dtype=int8 layout=row m=4 n=4 k=4 a=0x1000 b=0x2000 c=0x3000
VEC_OP op=relu dtype=fp16 src=0x1000 dst=0x2000 bytes=64
SOFTMAX dtype=fp16 src=0x1000 dst=0x2000 row_bytes=32 rows=2
EVENT_SIGNAL id=3 irq=1
EVENT_WAIT id=3
NOOP tag=5
""")
save("asm", "v0_bin", b"\x80" + rand_bytes(128))
save("asm", "pccx_bin", b"\x81" + u64(0x5000000000000000) + u64(memset_w) + u64(cvo_w) + rand_bytes(16))
save("asm", "shell_bin", b"\x82" + bytes([0x01, 0, 1, 0]) + rand_bytes(28) + bytes([0x10, 0, 2, 0]) + rand_bytes(60))

# llm_model: tiny llama2.c checkpoints (shared and separate classifier)
def checkpoint(dim, hidden, layers, heads, kv, vocab, seq, shared=True):
    hs = dim // heads
    kvd = dim * kv // heads
    n = vocab * dim + layers * (dim + dim * dim + 2 * kvd * dim + dim * dim + dim + 3 * hidden * dim) + dim + \
        seq * hs
    if not shared:
        n += vocab * dim
    hdr = struct.pack("<7i", dim, hidden, layers, heads, kv, vocab if shared else -vocab, seq)
    return hdr + struct.pack("<%df" % n, *[rng.uniform(-0.5, 0.5) for _ in range(n)])


save("llm_model", "tiny_shared", checkpoint(8, 16, 1, 2, 1, 16, 4))
save("llm_model", "tiny_separate", checkpoint(8, 12, 2, 2, 2, 8, 3, shared=False))
save("llm_model", "header_only", struct.pack("<7i", 8, 16, 1, 2, 1, 16, 4))


# llm_tokenizer: 2 bytes (vocab - 1), then the file
def tokenizer(pieces, maxlen):
    out = struct.pack("<i", maxlen)
    for i, p in enumerate(pieces):
        out += struct.pack("<fi", float(-i), len(p)) + p
    return out


pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % i for i in range(8)] + \
    [b" ", b"a", b"b", b"ab", b" a", b"\xc3\xa9", b"Once", b" upon"]
save("llm_tokenizer", "small", u16(len(pieces) - 1) + tokenizer(pieces, 8))
save("llm_tokenizer", "truncated", u16(len(pieces) - 1) + tokenizer(pieces, 8)[:-3])

# e1_module: JSON records
save("e1_module", "module", b'{"module":"m","tensors":{"x":[[1,2,3],[4,5,6]],"b":[100,-100]},"ops":['
     b'{"name":"mm","op":"matmul","lhs":"x","rhs":[[1,0],[0,1],[1,1]]},'
     b'{"name":"q","op":"qkv_projection","input":[[1,2]],"packed_weight":[[1,0,2,0,3,0],[0,1,0,2,0,100]]},'
     b'{"name":"ba","op":"bias_add","input":"q.v","bias":"b"},'
     b'{"name":"sm","op":"attention_softmax","logits":[[[[0,-1,-2,-128]]]],"mask":[[[[true,true,true,false]]]]},'
     b'{"name":"g4","op":"matmul","precision":"int4","lhs":[[7,-8]],"rhs":[[-8],[7]]}]}')
save("e1_module", "record", b'{"name":"r","op":"matmul","lhs":[[1,2],[3,4]],"rhs":[[5],[6]]}')
save("e1_module", "silu", b'{"ops":[{"name":"a","op":"silu","input":[[1,-2,3]]},'
     b'{"name":"b","op":"rope","input":[[1,2]],"cos":[1],"sin":[1],"scale_shift":4}]}')


# onnx: hand-encoded protobuf (ModelProto with Add/Relu/MatMul, and a TensorProto)
def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def fld(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def s(num, text):
    return fld(num, 2, text.encode() if isinstance(text, str) else text)


def vinfo(name, dims, elem=1):
    shape = b"".join(fld(1, 2, fld(1, 0, d)) for d in dims)
    return s(1, name) + fld(2, 2, fld(1, 2, fld(1, 0, elem) + fld(2, 2, shape)))


def node(op, ins, outs, name):
    return b"".join(s(1, i) for i in ins) + b"".join(s(2, o) for o in outs) + s(3, name) + s(4, op)


def tensor(name, dims, vals):
    return b"".join(fld(1, 0, d) for d in dims) + fld(2, 0, 1) + s(8, name) + \
        fld(9, 2, struct.pack("<%df" % len(vals), *vals))


graph = fld(1, 2, node("MatMul", ["x", "w"], ["y"], "mm")) + fld(1, 2, node("Add", ["y", "b"], ["z"], "add")) + \
    fld(1, 2, node("Relu", ["z"], ["out"], "relu")) + s(2, "g") + \
    fld(5, 2, tensor("w", [4, 3], [rng.uniform(-1, 1) for _ in range(12)])) + \
    fld(5, 2, tensor("b", [3], [0.5, -0.5, 0.25])) + fld(11, 2, vinfo("x", [2, 4])) + fld(12, 2, vinfo("out", [2, 3]))
model = fld(1, 0, 7) + fld(8, 2, s(1, "") + fld(2, 0, 13)) + fld(7, 2, graph)
save("onnx", "matmul_add_relu", b"\x00" + model)
save("onnx", "tensor", b"\x01" + tensor("t", [2, 2], [1.0, 2.0, 3.0, 4.0]))
save("onnx", "truncated", b"\x00" + model[:len(model) // 2])
print("issue-8 seeds written")


# shell_ring (fuzz_shell_ring.c): fault(2) irq_en(1), descriptors, then as many data bytes
# as the rest (the harness takes the second half of the input as arena data)
def sh_copy(src, dst, n):
    return u8(0) + u16(src) + u16(dst) + u16(n)


def sh_gemm(dt, m, n, k, a, b, c):
    return u8(3) + u8(dt) + u8(0) + u8(m - 1) + u8(n - 1) + u8(k - 1) + u16(a) + u16(b) + u16(c)


def sh_vec(op, dt, src, dst, n):
    return u8(4) + u8(op) + u8(dt) + u16(src) + u16(dst) + u16(n)


def sh_softmax(dt, src, dst, rb2, rows):
    return u8(5) + u8(dt) + u16(src) + u16(dst) + u8(rb2) + u8(rows)


def sh_gather(count, src_list, local, entries, scatter=False):
    out = u8(2 | (0x80 if scatter else 0)) + u8(count) + u8(0) + u16(src_list) + u16(local)
    for a, n in entries:
        out += u16(a) + u8(n)
    return out


def shell_seed(body, fault=b"\x00\x00"):
    head = fault + u8(7) + body
    return head + rand_bytes(len(head) + 8)


save("shell_ring", "mixed", shell_seed(sh_copy(0, 0x100, 256) + sh_gemm(0, 4, 4, 8, 0x200, 0x210, 0x220) +
                                      u8(6) + u8(1) + u8(6 | 0x80) + u8(1) + sh_vec(0, 1, 0x300, 0x340, 128) +
                                      sh_softmax(1, 0x400, 0x440, 16, 2) + u8(7)))
save("shell_ring", "gather_scatter", shell_seed(sh_gather(3, 0x500, 0x600, [(0x10, 20), (0x30, 8), (0x50, 40)]) +
                                               sh_gather(2, 0x520, 0x600, [(0x700, 16), (0x710, 16)], True)))
save("shell_ring", "bad_and_fault", shell_seed(sh_copy(0, 0x100, 512) + u8(8) + u8(7), fault=b"\x13\x02"))
save("shell_ring", "wait_timeout", shell_seed(u8(6 | 0x80) + u8(3) + u8(7)))
print("shell seeds written")
