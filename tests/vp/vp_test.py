#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The virtual platform's tests (docs/vp.md), label `vp`.

Usage: vp_test.py NPU SHARED SRC CASE

Guest cases boot a Linux guest with `npu vp run` (stock QEMU, Debian's kernel) and
run a workload inside it over the UIO port (uio_pci_generic on the proxied PCI
function), then run the same workload on the host's sim port and compare: outputs
byte for byte (SHA-256 of the output files, the printed logits or text) and the
device's own cycle counters. They exit 77 (ctest SKIP) naming what is missing when
QEMU, the kernel or its modules are not installed.

  boot        the guest sees the functions (IDs, class, BAR0, uio binding), a register
              read through BAR0 returns the device's ID, the command's status comes back
  v0_e1       e1 and v0 in one VM: the LeNet on v0, the e1 example module on e1
  shell       the LeNet on shell
  pccx        16 stories260K tokens on pccx
  resnet      a compiled ResNet-50 .npkb on v0 (slow under TCG)
  proto       no guest: malformed messages to `npu vp` get a precise error (any host)
"""

import hashlib
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

NPU, SHARED, SRC, CASE = sys.argv[1:5]
SKIP = 77
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


def check(cond, what):
    if not cond:
        fail(what)
    return cond


def skip(reason):
    print("SKIP:", reason, flush=True)
    sys.exit(SKIP)


def finish():
    if failures:
        print("%d failure(s) in vp case %s" % (len(failures), CASE))
        sys.exit(1)
    print("vp case %s: ok" % CASE)
    sys.exit(0)


# ---- guest prerequisites -------------------------------------------------------------
def preflight():
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
    try:
        out = subprocess.run([qemu, "-device", "help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        skip("qemu-system-x86_64 -device help failed: %s" % e)
    if "x-pci-proxy-dev" not in out:
        skip("this QEMU has no x-pci-proxy-dev device (multi-process QEMU; Debian 12's qemu-system-x86 7.2 has it)")
    kernels = sorted(k for k in os.listdir("/boot") if k.startswith("vmlinuz-")) if os.path.isdir("/boot") else []
    if not kernels:
        skip("no guest kernel: no /boot/vmlinuz-* (apt-get install linux-image-amd64)")
    for k in kernels:
        if not os.access("/boot/" + k, os.R_OK):
            skip("/boot/%s is not readable" % k)
    ver = sorted(kernels, key=lambda k: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", k)])[-1][8:]
    uio = "/lib/modules/%s/kernel/drivers/uio/uio_pci_generic.ko" % ver
    if not os.path.exists(uio):
        skip("the kernel's modules are missing: %s (linux-image-%s)" % (uio, ver))
    if not os.access("/bin/busybox", os.X_OK):
        skip("/bin/busybox is missing (apt-get install busybox-static)")


def vp_run(devices, script, adds=(), timeout=300, extra=()):
    """Run script in a guest; returns (exit status, console text without '\\r', seconds)."""
    cmd = [NPU, "vp", "run", "--timeout", str(timeout)]
    for d in devices:
        cmd += ["--device", d]
    for a in adds:
        cmd += ["--add", a]
    cmd += list(extra)
    cmd += ["--", script]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout + 60)
    dt = time.monotonic() - t0
    out = p.stdout.replace("\r", "")
    sys.stdout.write(out)
    sys.stdout.write(p.stderr)
    return p.returncode, out + p.stderr, dt


def host(args, check_rc=True):
    p = subprocess.run([NPU] + args, capture_output=True, text=True, errors="replace", timeout=900)
    if check_rc and p.returncode != 0:
        fail("host npu %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stdout + p.stderr


def block(text, name):
    """The lines between '@@NAME' and '@@end NAME' of the guest's console."""
    m = re.search(r"^@@%s\n(.*?)^@@end %s$" % (name, name), text, re.S | re.M)
    return m.group(1) if m else None


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def grab(pattern, text, what):
    m = re.findall(pattern, text, re.M)
    if not m:
        fail("no %s in the output" % what)
        return None
    return m


LENET = os.path.join(SHARED, "models", "cifar10-lenet-int8")
STORIES = os.path.join(SHARED, "models", "stories260K")


def lenet_guest_script(dev):
    return ("echo @@lenet-%s; npu run lenet/model.onnx --device %s --input lenet/test_data_set_0/input_0.pb "
            "--report --output-dir /tmp/o-%s --port $(npu-vp-port %s) 2>&1; echo rc=$?; "
            "sha256sum /tmp/o-%s/*; echo @@end lenet-%s; " % (dev, dev, dev, dev, dev, dev))


def lenet_compare(dev, out, work):
    g = block(out, "lenet-" + dev)
    if not check(g is not None, "%s: no LeNet block in the guest's console" % dev):
        return
    check("rc=0" in g, "%s: the LeNet run failed in the guest" % dev)
    hdir = os.path.join(work, "h-" + dev)
    h = host(["run", os.path.join(LENET, "model.onnx"), "--device", dev, "--input",
              os.path.join(LENET, "test_data_set_0", "input_0.pb"), "--report", "--output-dir", hdir])
    hs = sha(os.path.join(hdir, "output_0.pb"))
    check(hs in g, "%s: the guest's output_0.pb differs from the host's (sha256 %s)" % (dev, hs))
    rows_h = re.findall(r"^  row \d+: .*$", h, re.M)
    rows_g = re.findall(r"^  row \d+: .*$", g, re.M)
    check(rows_h and rows_h == rows_g, "%s: logits differ: host %s guest %s" % (dev, rows_h, rows_g))
    # every per-node device figure that the device counters give (MACs, bytes) and the PERF busy cycles
    for pat, what in ((r"busy (\d+) cycles \(PERF counter\)", "PERF busy cycles"),
                      (r"^  device MACs\s+(\d+)", "device MACs")):
        hv, gv = re.findall(pat, h, re.M), re.findall(pat, g, re.M)
        if dev == "shell" and what == "PERF busy cycles":
            continue
        check(hv and hv == gv, "%s: %s differ: host %s guest %s" % (dev, what, hv, gv))
        if hv:
            print("%s %s: host %s guest %s" % (dev, what, hv[0], gv[0] if gv else "-"))


# ---- cases ---------------------------------------------------------------------------
def case_boot(work):
    preflight()
    script = ("echo @@pci; for d in /sys/bus/pci/devices/*; do "
              "echo $(cat $d/vendor) $(cat $d/device) $(cat $d/class) $(basename $(readlink $d/driver) 2>/dev/null); "
              "done; echo @@end pci; "
              "echo @@id; d=$(grep -l 0x4e02 /sys/bus/pci/devices/*/device); d=${d%/device}; "
              "bar=$(head -1 $d/resource | cut -d' ' -f1); devmem $bar 32; echo @@end id; "
              "ls /dev/uio0 && npu-vp-port v0 && exit 42")
    rc, out, dt = vp_run(["v0"], script, timeout=120)
    check(rc == 42, "the guest command's exit status 42 came back as %d" % rc)
    pci = block(out, "pci") or ""
    check(re.search(r"^0x1234 0x4e02 0x120000 uio_pci_generic$", pci, re.M),
          "the guest does not see v0 as 0x1234:0x4e02 class 0x120000 bound to uio_pci_generic:\n" + pci)
    ident = (block(out, "id") or "").strip()
    # v0's register at offset 0 (its ID) read through BAR0 with busybox devmem, against the model's reset value
    regs = subprocess.run([NPU, "qtest", "--device", "v0"], input="npu_regs\n", capture_output=True, text=True,
                          timeout=60).stdout.split()
    first = regs[1].split("=") if len(regs) > 1 and "=" in regs[1] else ["?", "?"]
    check(ident.lower() == first[1].lower(),
          "BAR0 offset 0 read %r in the guest; the v0 model's first register %s is %s" % (ident, first[0], first[1]))
    check("uio:/dev/uio0,mem=/dev/mem" in out, "npu-vp-port v0 did not print the UIO port spec")
    print("boot and command: %.1f s (host wall clock, npu vp run start to exit)" % dt)


def case_v0_e1(work):
    preflight()
    script = lenet_guest_script("v0") + (
        "echo @@e1; npu lower --device e1 e1-module.json --port $(npu-vp-port e1) 2>/dev/null; echo rc=$?; echo @@end e1")
    rc, out, dt = vp_run(["v0", "e1"], script, adds=["%s:/root/lenet" % LENET,
                                                    "%s/examples/e1-module.json:/root/" % SRC])
    check(rc == 0, "vp run exit %d" % rc)
    lenet_compare("v0", out, work)
    g = block(out, "e1") or ""
    check("rc=0" in g, "e1: npu lower failed in the guest")
    h = host(["lower", "--device", "e1", os.path.join(SRC, "examples", "e1-module.json")])
    hj = [l for l in h.splitlines() if l.startswith("{")]
    gj = [l for l in g.splitlines() if l.startswith("{")]
    # the result record names the port; everything else (outputs, cycles, counters) is the same
    norm = lambda ls: [l.replace('"port":"uio"', '"port":"sim"') for l in ls]
    check(hj and norm(gj) == hj, "e1: the lowering result differs:\nhost  %s\nguest %s" % (hj, gj))
    print("v0+e1 guest: %.1f s" % dt)


def case_shell(work):
    preflight()
    rc, out, dt = vp_run(["shell"], lenet_guest_script("shell"), adds=["%s:/root/lenet" % LENET])
    check(rc == 0, "vp run exit %d" % rc)
    lenet_compare("shell", out, work)
    print("shell guest: %.1f s" % dt)


def case_pccx(work):
    preflight()
    script = ("echo @@llm; npu llm --model st/stories260K.bin --tokenizer st/tok512.bin --device pccx --steps 16 "
              "--report --port $(npu-vp-port pccx) 2>&1; echo rc=$?; echo @@end llm")
    rc, out, dt = vp_run(["pccx"], script, adds=["%s:/root/st" % STORIES])
    check(rc == 0, "vp run exit %d" % rc)
    g = block(out, "llm") or ""
    check("rc=0" in g, "pccx: npu llm failed in the guest")
    h = host(["llm", "--model", os.path.join(STORIES, "stories260K.bin"), "--tokenizer",
              os.path.join(STORIES, "tok512.bin"), "--device", "pccx", "--steps", "16", "--report"])
    text = lambda s: [l for l in s.splitlines() if l.startswith("Once upon")]
    check(text(h) and text(h) == text(g), "pccx: the generated text differs: host %s guest %s" % (text(h), text(g)))
    # instructions, MACs and engine cycles per opcode, from the device's counters
    rows = lambda s: re.findall(r"^  (GEMV|GEMM|MEMCPY|MEMSET|CVO)\s+npu\s+(\d+)\s+(\d+)\s+(\d+)", s, re.M)
    hr, gr = rows(h), rows(g)
    for a, b in zip(hr, gr):
        print("pccx %-6s count %s/%s cycles %s/%s MACs %s/%s (host/guest)" % (a[0], a[1], b[1], a[2], b[2], a[3], b[3]))
    check(hr and [(r[0], r[1], r[3]) for r in hr] == [(r[0], r[1], r[3]) for r in gr],
          "pccx: instruction counts or MACs differ: host %s guest %s" % (hr, gr))
    check(hr == gr, "pccx: engine cycles differ: host %s guest %s" % (hr, gr))
    print("pccx guest: %.1f s" % dt)


def case_resnet(work):
    preflight()
    skip("not yet")


# ---- protocol robustness (no guest) --------------------------------------------------
HDR = struct.Struct("<iiQ")


def msg(cmd, payload=b"", size=None):
    return HDR.pack(cmd, 0, len(payload) if size is None else size) + payload


def server(extra=()):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    p = subprocess.Popen([NPU, "vp", "--device", "v0", "--fd", str(b.fileno())] + list(extra),
                         pass_fds=[b.fileno()], stderr=subprocess.PIPE, text=True)
    b.close()
    return a, p


def ret(sock):
    data = b""
    while len(data) < 24:
        chunk = sock.recv(24 - len(data))
        if not chunk:
            raise EOFError("server closed")
        data += chunk
    cmd, _, size = HDR.unpack(data[:16])
    assert cmd == 1 and size == 8, (cmd, size)
    return struct.unpack("<Q", data[16:])[0]


def cfg_read(sock, addr, ln):
    sock.sendall(msg(3, struct.pack("<IIi", addr, 0, ln)))
    return ret(sock)


def cfg_write(sock, addr, val, ln):
    sock.sendall(msg(2, struct.pack("<IIi", addr, val, ln)))
    return ret(sock)


def bar(sock, write, addr, val=0, size=4):
    sock.sendall(msg(4 if write else 5, struct.pack("<QQIB3x", addr, val, size, 1)))
    return ret(sock)


def expect_error(name, data, want, fds=(), extra=(), close=True, wait=15):
    s, p = server(extra)
    try:
        if fds:
            s.sendmsg([data[:16]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
            s.sendall(data[16:])
        else:
            s.sendall(data)
        if close:
            s.shutdown(socket.SHUT_WR)
        rc = p.wait(timeout=wait)
        err = p.stderr.read()
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        fail("%s: the server hung (no exit within %d s)" % (name, wait))
        return
    finally:
        s.close()
    check(rc == 1 and re.search(want, err), "%s: exit %d, stderr %r; expected exit 1 and /%s/" % (name, rc, err, want))
    print("%s: %s" % (name, err.strip()))


def case_proto(work):
    # a well-behaved conversation first: what QEMU's proxy does at realize and what a driver does
    s, p = server()
    check(cfg_read(s, 0, 4) == 0x4e021234, "vendor/device ID")
    check(cfg_read(s, 8, 4) >> 8 == 0x120000, "class code 0x120000")
    check(cfg_read(s, 0x2c, 4) == 0x4e021234, "subsystem IDs")
    check(cfg_read(s, 0x3d, 1) == 1, "interrupt pin A")
    check(cfg_read(s, 0x40, 4) == 1000000, "dword 0x40: the clock in kHz (v0: 1 GHz)")
    cfg_write(s, 0x10, 0xFFFFFFFF, 4)
    check(cfg_read(s, 0x10, 4) == 0xFFFFF000, "BAR0 sizing: 4 KiB 32-bit memory BAR")
    for i in range(1, 6):
        cfg_write(s, 0x10 + 4 * i, 0xFFFFFFFF, 4)
        check(cfg_read(s, 0x10 + 4 * i, 4) == 0, "BAR%d is not implemented (reads 0 after sizing)" % i)
    cfg_write(s, 0x10, 0xFEB00000, 4)
    cfg_write(s, 4, 0x0406, 2)  # memory, bus master, INTX_DISABLE
    check(cfg_read(s, 4, 2) == 0x0406, "COMMAND keeps INTX_DISABLE (uio_pci_generic's test)")
    check(cfg_read(s, 6, 2) & 8 == 0, "STATUS.INTERRUPT clear while no line is raised")
    v0_id = bar(s, False, 0xFEB00000)
    check(v0_id == 0x4E505530, "v0's ID register ('0UPN', docs/v0.md) through BAR0: 0x%x" % v0_id)
    check(bar(s, False, 0xFEB00000 + 0x800) == bar(s, False, 0xFEB00000 + 0x800), "BAR reads are stable")
    # refused accesses are answered (all ones) and reported; the connection goes on
    check(bar(s, False, 0xFEC00000) == 0xFFFFFFFF, "a read outside BAR0 reads all ones")
    check(cfg_read(s, 0x100, 4) == 0xFFFFFFFF, "a config read beyond 256 bytes reads all ones")
    check(cfg_read(s, 1, 4) == 0xFFFFFFFF, "an unaligned config read reads all ones")
    s.sendall(msg(7))
    check(ret(s) == 0, "DEVICE_RESET is answered")
    check(cfg_read(s, 4, 2) == 0 and cfg_read(s, 0x10, 4) == 0, "DEVICE_RESET clears COMMAND and BAR0")
    s.close()
    rc = p.wait(timeout=15)
    err = p.stderr.read()
    check(rc == 0, "the server exits 0 when the peer closes (exit %d, %s)" % (rc, err))
    check("outside BAR0" in err and "outside the 256-byte config space" in err and "not naturally aligned" in err,
          "refused accesses are reported on stderr: %r" % err)

    # malformed messages: a precise error, exit 1, never a hang or a crash
    bar_pl = struct.pack("<QQIB3x", 0, 0, 4, 1)
    expect_error("unknown command", msg(42, b"x" * 8), r"message #1: unknown command 42 \(payload 8 bytes")
    expect_error("negative command", msg(-1), r"unknown command -1")
    expect_error("RET from the peer", msg(1, b"\0" * 8), r"message #1: unexpected RET")
    expect_error("short payload", msg(5, bar_pl[:12]), r"\(BAR_READ\): payload of 12 bytes, expected 24 \(short payload\)")
    expect_error("oversized payload", msg(3, b"", size=1 << 40), r"\(PCI_CFGREAD\): payload of 1099511627776 bytes, expected 12")
    expect_error("payload on a command without one", msg(7, b"\0" * 4), r"\(DEVICE_RESET\): payload of 4 bytes, expected 0")
    expect_error("truncated header", msg(5, bar_pl)[:9], r"the stream ended after 9 of 16 header bytes")
    expect_error("truncated payload", msg(5, bar_pl)[:30], r"\(BAR_READ\): the stream ended after 14 of 24 payload bytes")
    expect_error("SYNC_SYSMEM without fds", msg(0, b"\0" * 192), r"\(SYNC_SYSMEM\): 0 file descriptors, expected 1\.\.8")
    r, w = os.pipe()
    expect_error("SET_IRQFD with one fd", msg(6), r"\(SET_IRQFD\): 1 file descriptors, expected 2", fds=[r])
    sysmem = struct.pack("<8Q8Q8q", *([0] * 8), *([1 << 20] + [0] * 7), *([0] * 8))
    expect_error("SYNC_SYSMEM with an fd that cannot be mapped", msg(0, sysmem), r"guest RAM region 0 .*cannot map it",
                 fds=[r])
    expect_error("fds on a BAR access", msg(5, bar_pl), r"\(BAR_READ\): 1 file descriptors, expected none", fds=[r])
    os.close(r)
    os.close(w)
    # a peer that stalls in the middle of a message: the server gives up after 5 s
    expect_error("stalled message", msg(5, bar_pl)[:20], r"message #1 \(BAR_READ\): only 4 of 24 payload bytes arrived within 5000 ms",
                 close=False, wait=20)
    # guest RAM through a memfd: a v0 register write and DMA-visible memory
    s, p = server()
    fd = os.memfd_create("ram")
    os.ftruncate(fd, 1 << 20)
    s.sendmsg([msg(0, struct.pack("<8Q8Q8q", *([0x100000] + [0] * 7), *([1 << 20] + [0] * 7), *([0] * 8)))],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
    check(cfg_read(s, 0, 2) == 0x1234, "the server answers after SYNC_SYSMEM")
    s.close()
    os.close(fd)
    check(p.wait(timeout=15) == 0, "clean exit after a memory map")


def main():
    work = tempfile.mkdtemp(prefix="vp-test-")
    try:
        {"boot": case_boot, "v0_e1": case_v0_e1, "shell": case_shell, "pccx": case_pccx,
         "resnet": case_resnet, "proto": case_proto}[CASE](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


main()
