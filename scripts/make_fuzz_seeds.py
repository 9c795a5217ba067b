#!/usr/bin/env python3
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
