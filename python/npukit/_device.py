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


class QtestDevice(_Common):
    """A qtest client: QtestDevice(socket_path, device=None, base=None, hz=None).

    With npukit's server (`npu qtest --device D --socket PATH`) the device, its MMIO base and
    clock come from the server (npukit's `npu_info` command). With a QEMU (which has no
    npu_info) give the device name (its MMIO base and clock from npukit's device table) or
    base= and hz= explicitly. clock_step takes device cycles as Device's does; the protocol's
    clock is in ns (clock_step_ns)."""

    def __init__(self, socket_path, device=None, base=None, hz=None, qom_path="/machine/npu", timeout=10.0):
        self._sock = None
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
        self.base, self.hz = base, hz
        self._cmd("irq_intercept_in %s" % qom_path)

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
        since the server started (its clock in ns converted at the device clock)."""
        self.clock_step_ns(max(1, math.ceil(cycles * 1e9 / self.hz)))
        return self.ns * self.hz // 1000000000

    def irq(self, line=0):
        return self._irq.get(line, False)

    def reset(self):
        ok, why = self._cmd("npu_reset", may_fail=True)
        if not ok:
            raise _npukit.NotImplemented("qtest server refused npu_reset (%s): a QEMU resets through QMP system_reset" % why)
