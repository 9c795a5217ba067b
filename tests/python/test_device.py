# SPDX-License-Identifier: MIT
"""npukit.Device and npukit.QtestDevice: the worked descriptor-ring example of
../shared/spec/e1-rtl-notes.md ("Worked examples (from the RTL)") driven from Python,
on the in-process e1 model, over `npu qtest --socket` and through a real QEMU's qtest server
(e1 served to it by `npu vp`); expectations are the notes'."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
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


QEMU = shutil.which("qemu-system-x86_64")


@unittest.skipUnless(os.environ.get("NPU"), "NPU (the npu binary) not set")
class QemuQtestTest(unittest.TestCase):
    """The same worked example through a real QEMU's own qtest server: stock qemu-system-x86_64
    (.ci/packages: qemu-system-x86) started with -qtest, npukit's e1 served to it as a PCI
    function by `npu vp` (x-pci-proxy-dev, docs/vp.md); the script finds the function, maps
    its BARs and drives e1's registers at the BAR address, guest RAM (QEMU's, shared with the
    server) through qtest's b64read/b64write, the clock through npu vp's clock window, the IRQ
    line through the function's STATUS register, the reset through QMP system_reset. -S: no
    guest code runs (Debian's QEMU has no qtest accelerator), the script alone programs the bus."""

    def start(self, d):
        if not QEMU:
            self.skipTest("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        log = open(os.path.join(d, "vp.log"), "w+")
        self.addCleanup(log.close)
        srv = subprocess.Popen([os.environ["NPU"], "vp", "--device", "e1", "--fd", str(a.fileno())],
                               pass_fds=[a.fileno()], stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop, srv)
        qlog = open(os.path.join(d, "qemu.log"), "w+")
        self.addCleanup(qlog.close)
        qtest, qmp = os.path.join(d, "qtest.sock"), os.path.join(d, "qmp.sock")
        # QEMU and the server run without the sanitizer runtime the interpreter may have preloaded
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
        qemu = subprocess.Popen([QEMU, "-machine", "pc,memory-backend=mem", "-S",
                                 "-object", "memory-backend-memfd,id=mem,size=128M,share=on", "-m", "128M",
                                 "-nodefaults", "-no-user-config", "-display", "none",
                                 "-qtest", "unix:%s,server=on,wait=off" % qtest,
                                 "-qmp", "unix:%s,server=on,wait=off" % qmp,
                                 "-device", "x-pci-proxy-dev,id=npu0,fd=%d" % b.fileno()],
                                pass_fds=[b.fileno()], stdout=qlog, stderr=subprocess.STDOUT, env=env)
        self.addCleanup(self.stop, qemu)
        deadline = time.monotonic() + 60
        while not (os.path.exists(qtest) and os.path.exists(qmp)):
            if qemu.poll() is not None:
                qlog.seek(0)
                self.skipTest("QEMU cannot start: exit %d: %s" % (qemu.returncode, qlog.read().strip()[-400:]))
            if srv.poll() is not None:
                log.seek(0)
                self.fail("npu vp exited %d: %s" % (srv.returncode, log.read()))
            self.assertLess(time.monotonic(), deadline, "QEMU opened no qtest socket in 60 s")
            time.sleep(0.05)
        self.qtest = qtest
        return npukit.QtestDevice(qtest, device="e1", pci=True, qmp=qmp)

    @staticmethod
    def stop(p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def test_worked_ring_qemu(self):
        with tempfile.TemporaryDirectory() as d:
            with self.start(d) as dev:
                self.assertFalse(dev.npukit_server)  # QEMU's qtest, not npukit's
                self.assertEqual(dev.base, 0xE0000000)
                self.assertEqual(dev.hz, npukit.Device("e1").hz)
                # a register round trip through the BAR: what the in-process model reads back
                ref = npukit.Device("e1")
                for d_ in (dev, ref):
                    d_.write32(GEMM_STRIDE, 0x00080203)
                self.assertEqual(dev.read32(GEMM_STRIDE), ref.read32(GEMM_STRIDE))
                self.assertEqual(dev.read32(GEMM_STRIDE), 0x00080203)
                t0 = dev.clock_step(0)
                self.assertEqual(dev.clock_step(1000) - t0, 1000)  # exact cycles (stepped clock window)
                # guest RAM round trip: QEMU's RAM is the device's memory
                dev.write(0x5000, b"npukit\x00\xff")
                self.assertEqual(dev.read(0x5000, 8), b"npukit\x00\xff")
                worked_ring(self, dev)
            # a second client: a device this QEMU does not have is named
            with self.assertRaisesRegex(npukit.NoSuchFile, r"no PCI function 1234:4e02 \(npu vp's v0\)"):
                npukit.QtestDevice(self.qtest, device="v0", pci=True)


if __name__ == "__main__":
    unittest.main()
