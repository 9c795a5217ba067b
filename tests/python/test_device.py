# SPDX-License-Identifier: MIT
"""npukit.Device and npukit.QtestDevice: the worked descriptor-ring example of
../shared/spec/e1-rtl-notes.md ("Worked examples (from the RTL)") driven from Python,
on the in-process e1 model and over `npu qtest --socket`; expectations are the notes'."""

import os
import subprocess
import tempfile
import unittest

import numpy as np

import npukit

# e1 registers (e1-rtl-notes.md / e1-npu.md register tables)
RESULT, CTRL, RESULT_HI = 0x08, 0x0C, 0x18
GEMM_CFG, GEMM_BASE, GEMM_STRIDE, CMD_PARAM = 0x20, 0x24, 0x28, 0x30
DESC_BASE, DESC_HEAD, DESC_TAIL, DESC_STATUS = 0x40, 0x44, 0x48, 0x4C
PERF_CYCLES, PERF_MACS, PERF_OPS, PERF_ERRORS = 0x50, 0x54, 0x58, 0x5C
DESC_BYTES_READ, DESC_BYTES_WRITTEN, DESC_READ_BEATS, DESC_WRITE_BEATS = 0x64, 0x68, 0x6C, 0x70
PERF_STALL_CYCLES, PERF_SCRATCH_BYTES = 0x74, 0x78
SCRATCH0 = 0x80
RING, SRC, DST = 0x1000, 0x2000, 0x3000


def worked_ring(t, dev):
    """The notes' ring: [DOT4, streamed GEMM with writeback] -> the listed registers and memory."""
    dev.write32(GEMM_CFG, 0x00030202)
    dev.write32(GEMM_BASE, 0x00200800)
    dev.write32(GEMM_STRIDE, 0x00080203)
    # A|B stream image: A = [[-1,2,3],[4,5,6]] at byte 0 (row stride 3), B = [[7,8],[9,10],[11,12]]
    # at byte 8 (row stride 2), as int8 with numpy
    img = np.zeros(16, dtype=np.int8)
    img[0:6] = np.array([[-1, 2, 3], [4, 5, 6]], dtype=np.int8).reshape(-1)
    img[8:14] = np.array([[7, 8], [9, 10], [11, 12]], dtype=np.int8).reshape(-1)
    dev.write_array(SRC, img)
    ring = np.array([0x80000004, 0x04030201, 0xF807FA05, 0xFFFFFF00, 0xD0000108, SRC, DST, 0], dtype="<u4")
    dev.write(RING, ring.tobytes())  # bytes this time
    dev.write32(DESC_BASE, RING)
    dev.write32(DESC_HEAD, 2)
    dev.write32(CMD_PARAM, 1)
    t.assertFalse(dev.irq())
    dev.write32(CTRL, 1)
    t.assertEqual(dev.read32(CTRL), 1)  # busy
    steps = 0
    while dev.read32(CTRL) == 1:
        dev.clock_step(1)
        steps += 1
        t.assertLess(steps, 10000, "the ring never completed")
    t.assertEqual(dev.read32(CTRL), 2)
    t.assertTrue(dev.irq())
    t.assertEqual(dev.read32(DESC_STATUS), 0x202)
    t.assertEqual(dev.read32(DESC_TAIL), 2)
    t.assertEqual(dev.read32(RESULT), 0xFFFFFEEE)
    t.assertEqual(dev.read32(RESULT_HI), 0xFFFFFFFF)
    c = dev.read_array(DST, "<i4", (2, 2))
    np.testing.assert_array_equal(c, [[44, 48], [139, 154]])
    # the same product computed independently
    np.testing.assert_array_equal(c, np.array([[-1, 2, 3], [4, 5, 6]]) @ np.array([[7, 8], [9, 10], [11, 12]]))
    t.assertEqual(dev.read(DST + 16, 4), b"\0\0\0\0")
    expect = {DESC_BYTES_READ: 48, DESC_READ_BEATS: 12, DESC_BYTES_WRITTEN: 16, DESC_WRITE_BEATS: 4, PERF_OPS: 2,
              PERF_CYCLES: 12, PERF_MACS: 12, PERF_STALL_CYCLES: 32, PERF_SCRATCH_BYTES: 72, PERF_ERRORS: 0}
    for off, v in expect.items():
        t.assertEqual(dev.read32(off), v, "register 0x%02x" % off)
    t.assertEqual(dev.read32(SCRATCH0), 0x040302FF)
    # reset: the notes' reset values (everything 0 but DESC_STATUS 0x1 and SEC_STATUS 0x400), IRQ low
    dev.reset()
    for off in range(0, 0x100, 4):
        t.assertEqual(dev.read32(off), {DESC_STATUS: 0x1, 0x3C: 0x400}.get(off, 0), "register 0x%02x after reset" % off)
    t.assertFalse(dev.irq())
    # guest memory survives the device reset
    np.testing.assert_array_equal(dev.read_array(DST, "<i4", (4,)), [44, 48, 139, 154])


class DeviceTest(unittest.TestCase):
    def test_worked_ring_sim(self):
        with npukit.Device("e1") as dev:
            self.assertEqual(dev.device, "e1")
            self.assertEqual(dev.port_kind, "sim")
            worked_ring(self, dev)
            self.assertGreater(dev.mmio_count, 40)

    def test_errors(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, "nope"):
            npukit.Device("nope")
        with self.assertRaisesRegex(npukit.Error, "bogus"):
            npukit.Device("e1", {"bogus": 1})
        dev = npukit.Device("v0", {"clock_mhz": 500})
        self.assertEqual(dev.hz, 500000000)
        with self.assertRaises(OverflowError):
            dev.write32(0, 1 << 32)
        dev.close()
        with self.assertRaises(ValueError):
            dev.read32(0)

    def test_alloc_numpy(self):
        with npukit.Device("v0") as dev:
            a = dev.alloc(4096)
            x = np.arange(1024, dtype=np.float32).reshape(32, 32)
            dev.write_array(a, x)
            np.testing.assert_array_equal(dev.read_array(a, np.float32, (32, 32)), x)
            dev.write_array(a, x.T)  # not contiguous: written in C order of the transpose
            np.testing.assert_array_equal(dev.read_array(a, np.float32, (32, 32)), x.T)
            dev.free(a)


@unittest.skipUnless(os.environ.get("NPU"), "NPU (the npu binary) not set")
class QtestDeviceTest(unittest.TestCase):
    def test_worked_ring_qtest(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "q.sock")
            srv = subprocess.Popen([os.environ["NPU"], "qtest", "--device", "e1", "--socket", sock],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                with npukit.QtestDevice(sock) as dev:
                    self.assertTrue(dev.npukit_server)
                    self.assertEqual(dev.device, "e1")
                    self.assertEqual(dev.base, 0x10020000)
                    worked_ring(self, dev)
            finally:
                srv.terminate()
                srv.wait(timeout=30)
        # the C port's qtest client gives the same interface through Device
        with tempfile.TemporaryDirectory() as d:
            dev = npukit.Device("e1", port="qtest-spawn:" + os.environ["NPU"])
            self.assertEqual(dev.port_kind, "qtest")
            worked_ring(self, dev)
            dev.close()


if __name__ == "__main__":
    unittest.main()
