# SPDX-License-Identifier: MIT
"""npu-qemu driven as QEMU by a client that follows QEMU's Python qtest module
(qemu_qtest.py: one reply line per request, QEMUQtestMachine's argv and QMP
handshake). Usage: test_python_client.py BUILD_DIR

Expected values are the specs' worked examples, worked out by hand:
* e1 DOT4_S8 (e1-rtl-notes.md): lanes 1,2,3,4 . 5,-6,7,-8 = -18, plus ACC -256
  = -274 = 0xfffffeee, RESULT_HI 0xffffffff, done after 3 cycles, CTRL = 2.
* v0 MATMUL_S8 (v0 contract): [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]
  as int32, with irq_on_complete: IRQ_STATUS.done and interrupt line 0 high.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qemu_qtest import QEMUQtestMachine  # noqa: E402

BUILD = sys.argv[1]
BINARY = os.path.join(BUILD, "npu-qemu")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def expect(vm, cmd, want):
    got = vm.qtest(cmd)
    check(got == want + "\n", "%r -> %r, expected %r" % (cmd, got, want))
    return got


def e1_dot4():
    vm = QEMUQtestMachine(BINARY, machine="npu-e1")
    vm.launch()
    g = vm.greeting
    check("QMP" in g and "version" in g["QMP"] and "capabilities" in g["QMP"], "QMP greeting %r" % g)
    check(vm.qmp.cmd("query-status", cmd_id=7) ==
          {"return": {"status": "running", "singlestep": False, "running": True}, "id": 7}, "query-status")
    unknown = vm.qmp.cmd("no-such-command")
    check(unknown.get("error", {}).get("class") == "CommandNotFound", "unknown QMP command %r" % unknown)
    expect(vm, "endianness", "OK little")
    expect(vm, "writel 0x10020000 0x04030201", "OK")
    expect(vm, "writel 0x10020004 0xf807fa05", "OK")
    expect(vm, "writel 0x10020014 0xffffff00", "OK")
    expect(vm, "writel 0x10020010 4", "OK")
    expect(vm, "writel 0x1002000c 1", "OK")
    expect(vm, "clock_step 2", "OK 2")
    expect(vm, "readl 0x10020008", "OK 0x0000000000000000")
    # The done IRQ rises here; without irq_intercept_* no line is sent, so the
    # one-line-per-request client stays in step.
    expect(vm, "clock_step 1", "OK 3")
    expect(vm, "readl 0x10020008", "OK 0x00000000fffffeee")
    expect(vm, "readl 0x10020018", "OK 0x00000000ffffffff")
    expect(vm, "readl 0x1002000c", "OK 0x0000000000000002")
    expect(vm, "inb 0", "OK 0x00ff")
    info = vm.qtest("npu_info")
    check(" irq=0x1 " in info, "npu_info shows line 0 high: %r" % info)
    # system_reset over QMP resets the device: RESULT and CTRL back to 0, line low.
    check(vm.qmp.cmd("system_reset") == {"return": {}}, "system_reset")
    ev = vm.qmp.read_event()
    check(ev.get("event") == "RESET", "RESET event %r" % ev)
    expect(vm, "readl 0x10020008", "OK 0x0000000000000000")
    expect(vm, "readl 0x1002000c", "OK 0x0000000000000000")
    info = vm.qtest("npu_info")
    check(" irq=0x0 " in info, "npu_info after reset: %r" % info)
    check(vm.shutdown() == 0, "exit code 0 after quit")


def le32(*words):
    return "0x" + "".join(w.to_bytes(4, "little").hex() for w in words)


def v0_matmul_irq():
    vm = QEMUQtestMachine(BINARY, machine="npu-v0")
    vm.launch()
    base, a, b, c = 0x80000000, 0x80001000, 0x80002000, 0x80003000
    expect(vm, "write 0x%x 2 0x0102" % a, "OK")
    expect(vm, "write 0x%x 2 0x0304" % (a + 16), "OK")
    expect(vm, "write 0x%x 2 0x0506" % b, "OK")
    expect(vm, "write 0x%x 2 0x0708" % (b + 16), "OK")
    # MATMUL_S8 (0x10), flags irq_on_complete|signed_input, M=N=K=2, strides 16, tag 0x1234
    desc = le32(0x00030010, 2, 2, 2, a, 0, b, 0, c, 0, 16, 16, 16, 0, 0, 0x1234)
    expect(vm, "write 0x%x 64 %s" % (base, desc), "OK")
    expect(vm, "writel 0x10020018 0x%x" % base, "OK")   # DESC_BASE_LO
    expect(vm, "writel 0x1002001c 0", "OK")             # DESC_BASE_HI
    expect(vm, "writel 0x10020020 2", "OK")             # DESC_RING_LEN
    expect(vm, "writel 0x10020014 1", "OK")             # IRQ_MASK.done
    expect(vm, "writel 0x10020008 5", "OK")             # CTRL enable|irq_enable
    expect(vm, "writel 0x1002002c 1", "OK")             # DOORBELL: head 1
    step = vm.qtest("clock_step")                       # until the device is idle
    check(step.startswith("OK ") and int(step.split()[1]) > 0, "clock_step -> %r" % step)
    expect(vm, "read 0x%x 8" % c, "OK 0x1300000016000000")
    expect(vm, "read 0x%x 8" % (c + 16), "OK 0x2b00000032000000")
    expect(vm, "readl 0x10020010", "OK 0x0000000000000001")   # IRQ_STATUS.done
    expect(vm, "readl 0x1002005c", "OK 0x0000000000001234")   # COMPLETION_TAG
    info = vm.qtest("npu_info")
    check(" irq=0x1 " in info, "npu_info shows line 0 high: %r" % info)
    expect(vm, "writel 0x10020010 1", "OK")                   # W1C done: line 0 drops
    info = vm.qtest("npu_info")
    check(" irq=0x0 " in info, "npu_info after W1C: %r" % info)
    check(vm.shutdown() == 0, "exit code 0 after quit")


e1_dot4()
v0_matmul_irq()
print("python qtest client: %s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
