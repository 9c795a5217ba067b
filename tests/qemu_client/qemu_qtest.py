# SPDX-License-Identifier: MIT
"""A client for `npu-qemu` that follows QEMU's Python qtest client contract.

Debian packages neither QEMU's python/qemu tree nor libqtest, so this module
re-implements, from QEMU's documented behaviour, the two pieces of
python/qemu/machine (QEMU 7.2) that a qtest user relies on:

* QEMUQtestProtocol: one qtest socket; cmd() sends the request plus "\\n" and
  returns exactly ONE line read from the socket (QEMU's client reads one line
  per request, so any unsolicited line would desynchronise it).
* QEMUQtestMachine: binds the qtest socket and the QMP monitor socket as
  servers, launches the binary with QEMUMachine's base arguments
  (-display none -vga none -chardev socket,id=mon,path=QMP
  -mon chardev=mon,mode=control [-machine M] -qtest unix:path=QT -accel qtest),
  accepts QMP, reads the greeting, negotiates with qmp_capabilities, accepts
  the qtest connection; shutdown() sends QMP 'quit' and waits for exit code 0.

Written here, not copied; the line protocol and the argv are QEMU's.
"""

import json
import os
import socket
import subprocess


class QEMUQtestProtocol:
    def __init__(self, address, server=False):
        self._address = address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sockfile = None
        if server:
            self._sock.bind(address)
            self._sock.listen(1)

    def connect(self):
        self._sock.connect(self._address)
        self._sockfile = self._sock.makefile(mode="r")

    def accept(self):
        self._sock, _ = self._sock.accept()
        self._sockfile = self._sock.makefile(mode="r")

    def cmd(self, qtest_cmd):
        self._sock.sendall((qtest_cmd + "\n").encode("utf-8"))
        return self._sockfile.readline()

    def close(self):
        self._sock.close()
        if self._sockfile:
            self._sockfile.close()
            self._sockfile = None

    def settimeout(self, timeout):
        self._sock.settimeout(timeout)


class QMPClient:
    """The server side of QEMU's QMP socket, as QEMUMonitorProtocol(server=True)."""

    def __init__(self, path):
        self._listen = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listen.bind(path)
        self._listen.listen(1)
        self._sock = None
        self._file = None
        self.events = []

    def accept(self, timeout=15.0):
        self._listen.settimeout(timeout)
        self._sock, _ = self._listen.accept()
        self._sock.settimeout(timeout)
        self._listen.close()
        self._file = self._sock.makefile(mode="r")
        return self._read()

    def _read(self):
        line = self._file.readline()
        if not line:
            raise EOFError("QMP connection closed")
        return json.loads(line)

    def cmd(self, name, args=None, cmd_id=None):
        req = {"execute": name}
        if args is not None:
            req["arguments"] = args
        if cmd_id is not None:
            req["id"] = cmd_id
        self._sock.sendall(json.dumps(req).encode("utf-8"))
        while True:
            msg = self._read()
            if "event" in msg:
                self.events.append(msg)
                continue
            return msg

    def send_raw(self, text):
        self._sock.sendall(text.encode("utf-8"))
        return self._read()

    def read_event(self):
        if self.events:
            return self.events.pop(0)
        return self._read()

    def close(self):
        if self._file:
            self._file.close()
        if self._sock:
            self._sock.close()


class QEMUQtestMachine:
    def __init__(self, binary, args=(), machine=None, sock_dir="."):
        name = "npu-qemu-%d" % os.getpid()
        self._binary = binary
        self._args = list(args)
        self._machine = machine
        self._qmp_path = os.path.join(sock_dir, name + "-monitor.sock")
        self._qtest_path = os.path.join(sock_dir, name + "-qtest.sock")
        self._proc = None
        self._qtest = None
        self.qmp = None
        self.greeting = None

    def _base_args(self):
        args = ["-display", "none", "-vga", "none",
                "-chardev", "socket,id=mon,path=%s" % self._qmp_path,
                "-mon", "chardev=mon,mode=control"]
        if self._machine is not None:
            args += ["-machine", self._machine]
        args += ["-qtest", "unix:path=%s" % self._qtest_path, "-accel", "qtest"]
        return args

    def launch(self):
        for p in (self._qmp_path, self._qtest_path):
            if os.path.exists(p):
                os.unlink(p)
        self.qmp = QMPClient(self._qmp_path)
        self._qtest = QEMUQtestProtocol(self._qtest_path, server=True)
        self._proc = subprocess.Popen([self._binary] + self._base_args() + self._args)
        self.greeting = self.qmp.accept()
        reply = self.qmp.cmd("qmp_capabilities")
        assert reply == {"return": {}}, reply
        self._qtest.settimeout(15.0)
        self._qtest.accept()
        self._qtest.settimeout(15.0)

    def qtest(self, cmd):
        return self._qtest.cmd(cmd)

    def shutdown(self):
        reply = self.qmp.cmd("quit")
        assert reply == {"return": {}}, reply
        event = self.qmp.read_event()
        assert event["event"] == "SHUTDOWN", event
        code = self._proc.wait(timeout=15)
        self._qtest.close()
        self.qmp.close()
        for p in (self._qmp_path, self._qtest_path):
            if os.path.exists(p):
                os.unlink(p)
        return code
