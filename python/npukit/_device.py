# SPDX-License-Identifier: MIT
"""Register-level scripting of npukit's devices.

Device: a device behind one of npukit's ports (include/npukit/npu.h): the in-process
model ("sim", default), a qtest server ("qtest:PATH", "qtest-spawn:NPU") or UIO.
QtestDevice: the same interface as a client of QEMU's qtest text protocol, over the Unix
socket of `npu qtest --socket PATH` or of a QEMU started with `-qtest unix:PATH`.

Offsets given to read32/write32 are inside the device's MMIO window; addresses given to
read/write are guest physical addresses.
"""

import base64
import json
import math
import os
import socket
import time

import numpy as np

from . import _npukit


def _opts_str(options):
    if options is None:
        return None
    if isinstance(options, str):
        return options or None
    return ",".join("%s=%s" % (k, ("1" if v else "0") if isinstance(v, bool) else v) for k, v in options.items()) or None


class _Common:
    """What both kinds of device share: numpy guest-memory access and context management."""

    def read_array(self, addr, dtype, shape):
        """Guest memory at addr as a new numpy array of dtype and shape (C order)."""
        a = np.empty(shape, dtype=dtype)
        if a.nbytes:
            self._read_into(addr, a)
        return a

    def write_array(self, addr, array):
        """Write a numpy array's bytes (C order) to guest memory at addr."""
        a = np.ascontiguousarray(array)
        if a.nbytes:
            self.write(addr, a)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Device(_Common):
    """Device(name, options=None, port=None): npukit's device `name` ("e1", "v0", "shell",
    "pccx") with the model's options (a dict or "k=v,..."), behind `port` (default the
    in-process model)."""

    def __init__(self, device, options=None, port=None):
        self._p = _npukit.Port(device, port, _opts_str(options))
        info = self._p.info()
        self.device = info["device"]
        self.port_kind = info["kind"]
        self.hz = info["hz"]

    def close(self):
        self._p.close()

    def read32(self, offset):
        return self._p.read32(offset)

    def write32(self, offset, value):
        self._p.write32(offset, value)

    def write64(self, offset, value):
        self._p.write64(offset, value)

    def read(self, addr, length):
        """Guest memory [addr, addr + length) as bytes."""
        return self._p.mem_read(addr, length)

    def write(self, addr, data):
        """Write bytes or any contiguous buffer (a numpy array) to guest memory."""
        self._p.mem_write(addr, data)

    def _read_into(self, addr, a):
        self._p.mem_read_into(addr, a)

    def clock_step(self, cycles):
        """Let `cycles` device cycles pass; returns the cycles elapsed since open."""
        return self._p.clock_step(cycles)

    def irq(self, line=0):
        """Level of interrupt line `line` (True: raised)."""
        return self._p.irq(line)

    def reset(self):
        """Device reset: registers to their reset values, the device idle (guest memory kept)."""
        self._p.reset()

    def alloc(self, size, align=64):
        """A guest buffer from the port's allocator: its guest physical address."""
        return self._p.alloc(size, align)

    def free(self, addr):
        self._p.free(addr)

    @property
    def cycles(self):
        return self._p.info()["cycles"]

    @property
    def mmio_count(self):
        return self._p.info()["mmio_count"]


# PCI configuration mechanism #1 (the I/O ports a PC's host bridge decodes)
_CFG_ADDR, _CFG_DATA = 0xCF8, 0xCFC
_PCI_VENDOR_QEMU = 0x1234  # npu vp's vendor ID (docs/vp.md)
# npu vp's clock window (BAR2, docs/vp.md)
_CLK_MODE, _CLK_STEP_LO, _CLK_STEP_HI, _CLK_CYCLES_LO, _CLK_CYCLES_HI, _CLK_KHZ = 0x08, 0x10, 0x14, 0x18, 0x1C, 0x24


class QtestDevice(_Common):
    """A qtest client: QtestDevice(socket_path, device=None, base=None, hz=None, pci=False).

    With npukit's server (`npu qtest --device D --socket PATH`) the device, its MMIO base and
    clock come from the server (npukit's `npu_info` command). With a QEMU (which has no
    npu_info) give the device name (its MMIO base and clock from npukit's device table) or
    base= and hz= explicitly. clock_step takes device cycles as Device's does; the protocol's
    clock is in ns (clock_step_ns).

    pci=True: the device is an npukit device that `npu vp` serves to this QEMU as an
    x-pci-proxy-dev PCI function (docs/vp.md). The client finds the function on bus 0 (vendor
    0x1234, the device's ID), places BAR0 (the registers) at `bar` and BAR2 (npu vp's clock
    window) after it, enables memory decoding and puts the clock window in stepped mode; then
    read32/write32 go through QEMU to BAR0, clock_step steps the device by exact cycles (STEP),
    the return of clock_step counts its cycles, and irq() is the function's INTx level
    (configuration STATUS.INTERRUPT: QEMU 7.2's proxy does not deliver INTx under TCG or
    qtest). qmp: the QEMU's QMP socket (-qmp unix:PATH,server=on,wait=off), for reset()."""

    def __init__(self, socket_path, device=None, base=None, hz=None, qom_path="/machine/npu", timeout=10.0, pci=False,
                 bar=0xE0000000, qmp=None):
        self._sock = None
        self._qmp_path = qmp
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(os.fspath(socket_path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if time.monotonic() > deadline:
                    raise _npukit.NoSuchFile("qtest socket '%s': no server listening" % socket_path)
                time.sleep(0.02)
        self._sock = s
        self._buf = b""
        self._irq = {}
        self.ns = 0
        self.npukit_server = False
        try:
            self._attach(device, base, hz, qom_path, pci, bar)
        except BaseException:
            self.close()
            raise

    def _attach(self, device, base, hz, qom_path, pci, bar):
        ok, info = self._cmd("npu_info", may_fail=True)
        fields = {}
        if ok:
            self.npukit_server = True
            fields = dict(kv.split("=", 1) for kv in info.split() if "=" in kv)
            self.ns = int(fields.get("ns", "0"))
        row = _npukit.device_info(device or fields.get("device", "")) if (device or fields) else None
        self.device = device or fields.get("device")
        if base is None:
            if "mmio" in fields:
                base = int(fields["mmio"].split("+")[0], 16)
            elif row:
                base = row["mmio_base"]
            else:
                raise _npukit.InvalidArgument("qtest server without npu_info (a QEMU): give device= or base=")
        if hz is None:
            hz = int(fields["hz"]) if "hz" in fields else row["hz"] if row else None
        if not hz:
            raise _npukit.InvalidArgument("qtest server without npu_info (a QEMU): give device= or hz=")
        self.pci = None
        if pci:
            if self.npukit_server or not device:
                raise _npukit.InvalidArgument("pci=True is for a QEMU serving an npukit device through npu vp: "
                                              "give device=")
            self._pci_setup(row, bar)
            return
        self.base, self.hz = base, hz
        self._cmd("irq_intercept_in %s" % qom_path)

    # ---- PCI (pci=True) ----
    def _cfg_read(self, off, size=4):
        self._cmd("outl 0x%x 0x%x" % (_CFG_ADDR, 0x80000000 | self._bdf << 8 | (off & 0xFC)))
        v = int(self._cmd("in%s 0x%x" % ({1: "b", 2: "w", 4: "l"}[size], _CFG_DATA + (off & 3)))[1], 16)
        return v

    def _cfg_write(self, off, value, size=4):
        self._cmd("outl 0x%x 0x%x" % (_CFG_ADDR, 0x80000000 | self._bdf << 8 | (off & 0xFC)))
        self._cmd("out%s 0x%x 0x%x" % ({1: "b", 2: "w", 4: "l"}[size], _CFG_DATA + (off & 3), value))

    def _pci_setup(self, row, bar):
        want = _PCI_VENDOR_QEMU | row["pci_device"] << 16
        for slot in range(32):
            self._bdf = slot << 3
            if self._cfg_read(0) == want:
                break
        else:
            raise _npukit.NoSuchFile("no PCI function %04x:%04x (npu vp's %s) on bus 0 of this QEMU" %
                                     (_PCI_VENDOR_QEMU, row["pci_device"], row["name"]))
        self.pci = "00:%02x.0" % (self._bdf >> 3)
        sizes = []
        for b in (0, 2):  # size the BARs as firmware does
            self._cfg_write(0x10 + 4 * b, 0xFFFFFFFF)
            sizes.append((~(self._cfg_read(0x10 + 4 * b) & 0xFFFFFFF0) & 0xFFFFFFFF) + 1)
        self.base, self.clock_base = bar, bar + max(sizes[0], sizes[1])
        self._cfg_write(0x10, self.base)
        self._cfg_write(0x18, self.clock_base)
        self._cfg_write(0x04, 0x0006, 2)  # COMMAND: memory space, bus master
        self._clk_write(_CLK_MODE, 1)  # stepped: the device advances only through STEP
        self.hz = self._clk_read(_CLK_KHZ) * 1000
        self._cycles0 = self._clk_cycles()

    def _clk_read(self, off):
        return int(self._cmd("readl 0x%x" % (self.clock_base + off))[1], 16)

    def _clk_write(self, off, v):
        self._cmd("writel 0x%x 0x%x" % (self.clock_base + off, v))

    def _clk_cycles(self):
        lo = self._clk_read(_CLK_CYCLES_LO)  # latches CYCLES_HI
        return self._clk_read(_CLK_CYCLES_HI) << 32 | lo

    # ---- protocol ----
    def _line(self):
        while b"\n" not in self._buf:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise _npukit.Fail("qtest server closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def _cmd(self, req, may_fail=False):
        if self._sock is None:
            raise ValueError("the device is closed")
        self._sock.sendall(req.encode() + b"\n")
        while True:
            line = self._line()
            if line.startswith("IRQ "):  # asynchronous: "IRQ raise N" / "IRQ lower N"
                _, what, n = line.split()
                self._irq[int(n)] = what == "raise"
                continue
            if line == "OK" or line.startswith("OK "):
                return True, line[3:]
            if may_fail:
                return False, line
            raise _npukit.Fail("qtest: '%s' refused: %s" % (req.split(" ")[0], line))

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # ---- the Device interface ----
    def read32(self, offset):
        return int(self._cmd("readl 0x%x" % (self.base + offset))[1], 16)

    def write32(self, offset, value):
        if not 0 <= value <= 0xffffffff:
            raise OverflowError("write32: value 0x%x does not fit 32 bits" % value)
        self._cmd("writel 0x%x 0x%x" % (self.base + offset, value))

    def write64(self, offset, value):
        self._cmd("writeq 0x%x 0x%x" % (self.base + offset, value))

    def read(self, addr, length):
        if length == 0:
            return b""
        return base64.b64decode(self._cmd("b64read 0x%x 0x%x" % (addr, length))[1])

    def write(self, addr, data):
        b = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        if len(b) == 0:
            return
        self._cmd("b64write 0x%x 0x%x %s" % (addr, len(b), base64.b64encode(bytes(b)).decode()))

    def _read_into(self, addr, a):
        a.reshape(-1).view(np.uint8)[:] = np.frombuffer(self.read(addr, a.nbytes), dtype=np.uint8)

    def clock_step_ns(self, ns):
        self.ns = int(self._cmd("clock_step %d" % ns)[1])
        return self.ns

    def clock_step(self, cycles):
        """Let at least `cycles` device cycles pass (whole ns); returns the cycles elapsed
        since the server started (its clock in ns converted at the device clock). With
        pci=True: exactly `cycles` device cycles (npu vp's STEP); returns the cycles since
        this client attached."""
        if self.pci:
            while cycles > 0:
                n = min(cycles, 0xFFFFFFFF)
                self._clk_write(_CLK_STEP_LO, n)
                self._clk_write(_CLK_STEP_HI, 0)  # the write of STEP_HI steps
                cycles -= n
            return self._clk_cycles() - self._cycles0
        self.clock_step_ns(max(1, math.ceil(cycles * 1e9 / self.hz)))
        return self.ns * self.hz // 1000000000

    def irq(self, line=0):
        if self.pci:
            if line != 0:
                raise _npukit.InvalidArgument("a PCI function has one interrupt line (INTx), not %d" % line)
            return bool(self._cfg_read(0x06, 2) & 0x8)  # STATUS.INTERRUPT
        return self._irq.get(line, False)

    def reset(self):
        """Registers to their reset values, guest memory kept: npukit's npu_reset; with a QEMU,
        QMP's system_reset when the client has its QMP socket (qmp=), after which a pci=True
        client maps its BARs again (the reset clears them)."""
        if self._qmp_path:
            self._qmp_reset()
            if self.pci:
                self._pci_setup(_npukit.device_info(self.device), self.base)
            return
        ok, why = self._cmd("npu_reset", may_fail=True)
        if not ok:
            raise _npukit.NotImplemented("qtest server refused npu_reset (%s): a QEMU resets through QMP system_reset "
                                         "(give QtestDevice its QMP socket, qmp=PATH)" % why)

    def _qmp_reset(self):
        """system_reset over QMP; returns once QEMU reports the RESET event (the reset is done)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as q:
            q.settimeout(30)
            q.connect(os.fspath(self._qmp_path))
            f = q.makefile("rwb")

            events = set()

            def reply(event=None):
                while event not in events:
                    line = f.readline()
                    if not line:
                        raise _npukit.Fail("QMP: QEMU closed the connection")
                    msg = json.loads(line)
                    if "error" in msg:
                        raise _npukit.Fail("QMP: %s" % msg["error"].get("desc", msg["error"]))
                    if "event" in msg:  # may come before or after the command's return
                        events.add(msg["event"])
                    elif event is None and "return" in msg:
                        return

            f.readline()  # the greeting
            for cmd in ("qmp_capabilities", "system_reset"):
                f.write(json.dumps({"execute": cmd}).encode() + b"\n")
                f.flush()
                reply()
            reply("RESET")
