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
  fault       a bus fault injected on v0's DMA: a precise error in the guest, the device works after
  resnet      a compiled ResNet-50 .npkb on v0 over the kmd port (the kernel driver, kmod/): outputs,
              PERF busy cycles and the device cycles of --report equal the host's (UIO when the
              driver cannot be built; slow under TCG)
  proto       no guest: malformed messages to `npu vp` get a precise error (any host)
"""

import hashlib
import os
import re
import shutil
import signal
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


FIRST = {}  # seconds from start to the guest command's first console line (marker @@start)


def vp_run(devices, script, adds=(), timeout=300, extra=()):
    """Run script in a guest; returns (exit status, console text without '\\r', seconds)."""
    cmd = [NPU, "vp", "run", "--timeout", str(timeout)]
    for d in devices:
        cmd += ["--device", d]
    for a in adds:
        cmd += ["--add", a]
    cmd += list(extra)
    cmd += ["--", "echo @@start; " + script]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    lines = []
    for line in p.stdout:  # streamed: the time of the first line of the command
        if line.startswith("@@start") and "first" not in FIRST:
            FIRST["first"] = time.monotonic() - t0
        lines.append(line)
    try:
        err = p.stderr.read()
        p.wait(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        err = "(timed out)"
    dt = time.monotonic() - t0
    out = "".join(lines).replace("\r", "")
    sys.stdout.write(out)
    sys.stdout.write(err)
    return p.returncode, out + err, dt


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
              "echo @@clock; bar2=$(sed -n 3p $d/resource | cut -d' ' -f1); devmem $((bar2)) 32; "
              "devmem $((bar2 + 8)) 32 1; c0=$(devmem $((bar2 + 0x18)) 32); devmem $((bar2 + 0x10)) 32 5000; "
              "devmem $((bar2 + 0x14)) 32 0; c1=$(devmem $((bar2 + 0x18)) 32); echo step=$((c1 - c0)); "
              "devmem $((bar2 + 8)) 32 0; echo @@end clock; "
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
    clock = block(out, "clock") or ""
    check(clock.startswith("0x4B435056") and "step=5000" in clock,
          "the clock window (BAR2) through devmem: ID and a 5000-cycle STEP expected, got %r" % clock)
    print("npu vp run start to the guest command's first line: %.1f s; to exit: %.1f s (host wall clock)" %
          (FIRST.get("first", -1), dt))


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


def device_events(path, dev):
    """The device's engine events of a Chrome trace: (engine, name, cycles, args without start_cycle), in order."""
    import json
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    pids = [e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
            and e.get("args", {}).get("name") == dev]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    out = []
    for e in ev:
        if e.get("ph") == "X" and pids and e.get("pid") == pids[0]:
            a = dict(e.get("args", {}))
            a.pop("start_cycle", None)
            out.append((names.get((e["pid"], e.get("tid")), "?"), e.get("name"), sorted(a.items())))
    return out


def case_shell(work):
    preflight()
    gtrace, htrace = os.path.join(work, "guest.json"), os.path.join(work, "host.json")
    grep, hrep = os.path.join(work, "guest-report.json"), os.path.join(work, "host-report.json")
    rc, out, dt = vp_run(["shell"], lenet_guest_script("shell"), adds=["%s:/root/lenet" % LENET],
                         extra=["--trace", gtrace, "--report-json", grep])
    check(rc == 0, "vp run exit %d" % rc)
    lenet_compare("shell", out, work)
    # the shell's run report has no device counter line: compare every engine event of the device's
    # own trace (the server's --trace and the host's --trace): descriptor by descriptor, engine and cycles
    host(["run", os.path.join(LENET, "model.onnx"), "--device", "shell", "--input",
          os.path.join(LENET, "test_data_set_0", "input_0.pb"), "--trace", htrace, "--report-json", hrep])
    he, ge = device_events(htrace, "shell"), device_events(gtrace, "shell")
    check(he and he == ge, "shell: the device's engine events differ (%d host, %d guest)%s" % (
        len(he), len(ge), "".join("\n  host %s\n  guest %s" % (a, b) for a, b in zip(he, ge) if a != b)[:3000]))
    # the server's session report (npu vp run --report-json): the device's energy of the same
    # descriptors as the host's run (arithmetic, DRAM; registers and idle time differ: the guest
    # driver polls over uio, and the session spans the whole guest)
    import json
    with open(grep) as f:
        ge_uj = json.load(f)["energy_breakdown_uj"]
    with open(hrep) as f:
        he_uj = json.load(f)["performance"]["energy_breakdown_uj"]
    for k in ("compute", "dram"):
        check(abs(ge_uj[k] - he_uj[k]) <= 1e-9 * max(1.0, he_uj[k]),
              "shell: the server's %s energy %r differs from the host run's %r" % (k, ge_uj[k], he_uj[k]))
    cyc = lambda evs: sum(dict(a).get("cycles", 0) for _, _, a in evs)
    print("shell engine events: host %d (%d cycles) guest %d (%d cycles)" % (len(he), cyc(he), len(ge), cyc(ge)))
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


def case_fault(work):
    preflight()
    # one bus error on the 100th device read beat in the DMA window (guest-physical addresses):
    # the first LeNet run fails naming it, the second (same device, no reset by hand) is right
    script = ("for i in 1 2; do echo @@run$i; npu run lenet/model.onnx --device v0 --input "
              "lenet/test_data_set_0/input_0.pb --port $(npu-vp-port v0) 2>&1; echo rc=$?; echo @@end run$i; done")
    rc, out, dt = vp_run(["v0"], script, adds=["%s:/root/lenet" % LENET],
                         extra=["--fault", "read@0x1c000000+0x4000000#100=error*1"])
    check(rc == 0, "vp run exit %d" % rc)
    r1, r2 = block(out, "run1") or "", block(out, "run2") or ""
    check("rc=1" in r1 and re.search(r"bus response error at address 0x1c[0-9a-f]{6} \(err_code 0x06, bus_error\)", r1),
          "the faulted run must fail naming the bus error: %r" % r1)
    check("rc=0" in r2 and "predicted classes: 3 0 8 0" in r2, "the run after the fault must succeed: %r" % r2)
    print("fault guest: %.1f s" % dt)


def case_resnet(work):
    """ResNet-50 compiled for v0 (npu exec of the .npkb) in the guest over the kmd port: the kernel
    driver (kmod/) with its carve-out at the package's arena, jobs through its SUBMIT/WAIT and the
    device's clock stepped as the sim port steps the model; without kernel headers to build the
    driver, over the UIO port (unmodified) as before."""
    preflight()
    r50 = os.path.join(SHARED, "models", "imagenet-resnet50-synthetic-int8")
    inp = os.path.join(r50, "test_data_set_0", "input_0.pb")
    npkb = os.path.join(work, "r50.npkb")
    t0 = time.monotonic()
    host(["compile", "--device", "v0", os.path.join(r50, "model.onnx"), "-o", npkb])
    h = host(["exec", npkb, "--input", "images=" + inp, "--report", "--output-dir", os.path.join(work, "h")])
    print("host: compile and exec %.1f s" % (time.monotonic() - t0))
    mod = os.path.join(work, "mod")
    b = subprocess.run([os.path.join(SRC, "scripts", "kmod.sh"), "build", mod], capture_output=True, text=True)
    ko = os.path.join(mod, "npukit.ko")
    kmd = b.returncode == 0 and os.path.exists(ko)
    # the compiled plan's arena sits at 0x80004000: the guest kernel gets mem=2G, so RAM from 2 GiB to
    # 2.25 GiB is free (the UIO port's /dev/mem window; the kmd driver's carve-out, minus the 128 KiB
    # QEMU's firmware reserves at the top of low RAM)
    run = ("time npu exec r50.npkb --input images=input_0.pb --report --output-dir /tmp/o --port %s 2>&1; "
           "echo rc=$?; sha256sum /tmp/o/*")
    extra = ["--mem", "2304M", "--dma", "256M"]
    adds = [npkb + ":/root/", inp + ":/root/"]
    if kmd:
        script = ("rmmod npukit; insmod /root/npukit.ko carveout_base=0x80000000 carveout_size=0x0ffe0000; "
                  "echo @@r50; " + run % "kmd:/dev/npu0,carveout" + "; echo jobs=$(cat /sys/class/misc/npu0/jobs); "
                  "echo @@end r50")
        extra += ["--module", ko]
        adds.append(ko + ":/root/npukit.ko")
    else:
        print("resnet: the kernel driver does not build here (%s): over the UIO port" %
              (b.stdout + b.stderr).strip().splitlines()[-1:])
        script = "echo @@r50; " + run % "$(npu-vp-port v0)" + "; echo @@end r50"
    rc, out, dt = vp_run(["v0"], script, adds=adds, timeout=600, extra=extra)
    check(rc == 0, "vp run exit %d" % rc)
    g = block(out, "r50") or ""
    check("rc=0" in g, "resnet: npu exec failed in the guest")
    want = sha(os.path.join(r50, "test_data_set_0", "output_0.pb"))
    check(sha(os.path.join(work, "h", "output_0.pb")) == want, "resnet: the host's output is not the expected one")
    check(want in g, "resnet: the guest's output_0.pb is not the expected output (sha256 %s)" % want)
    hv = re.findall(r"busy (\d+) cycles \(PERF counter\)", h)
    gv = re.findall(r"busy (\d+) cycles \(PERF counter\)", g)
    check(hv and hv == gv, "resnet: PERF busy cycles differ: host %s guest %s" % (hv, gv))
    print("resnet v0 PERF busy cycles: host %s guest %s; guest run %.1f s" % (hv, gv, dt))
    if kmd:
        hc = re.findall(r"total device cycles\s+(\d+)", h)
        gc = re.findall(r"total device cycles\s+(\d+)", g)
        check(hc and hc == gc, "resnet: device cycles differ: host %s guest %s" % (hc, gc))
        jobs = re.findall(r"^jobs=(\d+)", g, re.M)
        check(jobs and int(jobs[0]) > 0, "resnet: no job went through the kernel (%s)" % jobs)
        print("resnet v0 over kmd: device cycles host %s guest %s, %s kernel jobs" % (hc, gc, jobs))


# ---- protocol robustness (no guest) --------------------------------------------------
HDR = struct.Struct("<iiQ")


def msg(cmd, payload=b"", size=None):
    return HDR.pack(cmd, 0, len(payload) if size is None else size) + payload


def server(extra=(), device="v0"):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    p = subprocess.Popen([NPU, "vp", "--device", device, "--fd", str(b.fileno())] + list(extra),
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
    cfg_write(s, 0x18, 0xFFFFFFFF, 4)
    check(cfg_read(s, 0x18, 4) == 0xFFFFF000, "BAR2 sizing: the 4 KiB clock window")
    for i in (1, 3, 4, 5):
        cfg_write(s, 0x10 + 4 * i, 0xFFFFFFFF, 4)
        check(cfg_read(s, 0x10 + 4 * i, 4) == 0, "BAR%d is not implemented (reads 0 after sizing)" % i)
    cfg_write(s, 0x10, 0xFEB00000, 4)
    cfg_write(s, 0x18, 0xFEB01000, 4)
    cfg_write(s, 4, 0x0406, 2)  # memory, bus master, INTX_DISABLE
    check(cfg_read(s, 4, 2) == 0x0406, "COMMAND keeps INTX_DISABLE (uio_pci_generic's test)")
    check(cfg_read(s, 6, 2) & 8 == 0, "STATUS.INTERRUPT clear while no line is raised")
    v0_id = bar(s, False, 0xFEB00000)
    check(v0_id == 0x4E505530, "v0's ID register ('0UPN', docs/v0.md) through BAR0: 0x%x" % v0_id)
    check(bar(s, False, 0xFEB00000 + 0x800) == bar(s, False, 0xFEB00000 + 0x800), "BAR reads are stable")
    # the clock window: stepped mode advances the device exactly by STEP cycles
    clk = 0xFEB01000
    check(bar(s, False, clk) == 0x4B435056, "clock window ID 'VPCK'")
    check(bar(s, False, clk + 0x24) == 1000000, "clock window: the clock in kHz")
    check(bar(s, False, clk + 0x20) & 1 == 1, "clock window STATUS: the idle device reads idle")
    bar(s, True, clk + 8, 1)
    c0 = bar(s, False, clk + 0x18) | bar(s, False, clk + 0x1C) << 32
    bar(s, True, clk + 0x10, 12345)
    bar(s, True, clk + 0x14, 0)
    c1 = bar(s, False, clk + 0x18) | bar(s, False, clk + 0x1C) << 32
    check(c1 - c0 == 12345, "STEP of 12345 cycles moved the device clock by %d" % (c1 - c0))
    bar(s, True, clk + 0x10, 1000)
    bar(s, True, clk + 0x14, 1)  # over 2^32 cycles: refused, nothing stepped
    c2 = bar(s, False, clk + 0x18) | bar(s, False, clk + 0x1C) << 32
    check(c2 == c1, "a STEP_HI other than 0 steps nothing (%d -> %d)" % (c1, c2))
    bar(s, True, clk + 8, 0)
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
    case_proto_dma_intx()
    case_proto_responsive()


def case_proto_dma_intx():
    """Guest RAM from a memfd, a v0 MATMUL_S8 through it (the python qtest client's worked example:
    [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]), and INTx through an irqfd and its resample fd."""
    import mmap
    s, p = server()
    gpa, size = 0x80000000, 1 << 20
    fd = os.memfd_create("ram")
    os.ftruncate(fd, size)
    ram = mmap.mmap(fd, size)
    s.sendmsg([msg(0, struct.pack("<8Q8Q8q", *([gpa] + [0] * 7), *([size] + [0] * 7), *([0] * 8)))],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
    irq, res = os.eventfd(0, os.EFD_NONBLOCK), os.eventfd(0, os.EFD_NONBLOCK)
    s.sendmsg([msg(6)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("2i", irq, res))])
    cfg_write(s, 0x10, 0xFEB00000, 4)
    cfg_write(s, 4, 0x0006, 2)
    a, b, c = 0x1000, 0x2000, 0x3000
    ram[a:a + 2], ram[a + 16:a + 18], ram[b:b + 2], ram[b + 16:b + 18] = b"\1\2", b"\3\4", b"\5\6", b"\7\x08"
    desc = struct.pack("<16I", 0x00030010, 2, 2, 2, gpa + a, 0, gpa + b, 0, gpa + c, 0, 16, 16, 16, 0, 0, 0x1234)
    ram[0:64] = desc
    r = lambda off: bar(s, False, 0xFEB00000 + off)
    w = lambda off, v: bar(s, True, 0xFEB00000 + off, v)
    w(0x18, gpa), w(0x1C, 0), w(0x20, 2), w(0x14, 1), w(0x08, 5), w(0x2C, 1)
    check(r(0x10) == 1, "v0 IRQ_STATUS.done after the doorbell (the read ran the device)")
    check(r(0x5C) == 0x1234, "v0 COMPLETION_TAG")
    check(struct.unpack("<2i", ram[c:c + 8]) == (19, 22) and struct.unpack("<2i", ram[c + 16:c + 24]) == (43, 50),
          "the product landed in guest RAM (the memfd): %r" % ram[c:c + 24].hex())
    check(cfg_read(s, 6, 2) & 8 == 8, "STATUS.INTERRUPT set while v0's line is high")
    check(os.eventfd_read(irq) >= 1, "the irqfd was written when the line rose")
    os.eventfd_write(res, 1)  # the guest's EOI with the line still high: raised again
    check(cfg_read(s, 0, 2) == 0x1234, "server alive after the resample")
    try:
        again = os.eventfd_read(irq)
    except BlockingIOError:
        again = 0
    check(again >= 1, "the resample eventfd re-raises a line that is still high")
    cfg_write(s, 4, 0x0406, 2)  # INTX_DISABLE: no irqfd writes, STATUS.INTERRUPT still honest
    os.eventfd_write(res, 1)
    check(cfg_read(s, 6, 2) & 8 == 8, "STATUS.INTERRUPT stays set under INTX_DISABLE")
    try:
        masked = os.eventfd_read(irq)
    except BlockingIOError:
        masked = 0
    check(masked == 0, "no irqfd write while INTX_DISABLE is set")
    w(0x10, 1)  # W1C done: the line drops
    check(cfg_read(s, 6, 2) & 8 == 0, "STATUS.INTERRUPT clears with the line")
    s.close()
    check(p.wait(timeout=15) == 0, "clean exit after the DMA and INTx exchange (%s)" % p.stderr.read())
    ram.close()
    for f in (fd, irq, res):
        os.close(f)


def long_shell_ring(s, n=255):
    """A shell server's guest RAM (a 64 MiB memfd at 0), BAR0 and the clock window, and a ring of n
    GEMM v0.2 descriptors (docs/shell.md: opcode 0x10, SIZE 2, M N K at 32/36/40, packed LDx) of
    2048 x 1024 x 1024 INT8 = 2^31 MACs each (within max_macs), A 0x1000000, B 0x2000000, C 0x3000000:
    for 255, 535M cycles and about 20 s of host work in all. Returns (ram, fd, bar0, clk); the doorbell
    is the caller's."""
    import mmap
    size = 64 << 20
    fd = os.memfd_create("ram")
    os.ftruncate(fd, size)
    ram = mmap.mmap(fd, size)
    s.sendmsg([msg(0, struct.pack("<8Q8Q8q", *([0] * 8), *([size] + [0] * 7), *([0] * 8)))],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
    bar0, clk = 0xFEB00000, 0xFEB10000
    cfg_write(s, 0x10, bar0, 4)
    cfg_write(s, 0x18, clk, 4)
    cfg_write(s, 4, 0x0006, 2)
    d = bytearray(64)
    d[0], d[2] = 0x10, 2
    struct.pack_into("<QQQIII", d, 8, 0x1000000, 0x2000000, 0x3000000, 2048, 1024, 1024)
    ring = 0x100000
    ram[ring:ring + n * 64] = bytes(d) * n
    slots = 256
    while slots <= n:
        slots *= 2
    for off, v in ((0x20, ring), (0x24, 0), (0x28, 64 * slots), (0x30, n * 64)):
        bar(s, True, bar0 + off, v)
    return ram, fd, bar0, clk


def term_and_wait(p, what):
    """SIGTERM the server; it must exit 0 (a hang guard of 60 s, not a timing assertion). Returns seconds."""
    t1 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = None
    took = time.monotonic() - t1
    err = p.stderr.read()
    check(rc == 0, "%s: SIGTERM ends the server with exit 0 (exit %s after %.1f s, %r)" % (what, rc, took, err))
    return took


def case_proto_responsive():
    """Issue 32 point 3: long device work never stops `npu vp` from answering. With the shell ring of
    long_shell_ring running, a register read settles the device for at most --settle-ms plus the
    descriptor in flight, so it is answered while the ring is still busy; the device then runs on its
    own (the guest is quiet) and SIGTERM ends the server cleanly between two descriptors. In stepped
    mode a STEP of 2^32 - 1 cycles over a ring of 2040 such GEMMs (minutes of host work) is cut by
    SIGTERM the same way."""
    s, p = server(device="shell")
    ram, fd, bar0, clk = long_shell_ring(s)
    t0 = time.monotonic()
    bar(s, True, bar0 + 0x40, 1)  # DOORBELL
    descs = bar(s, False, bar0 + 0x60)  # PERF_DESCS: the read settles the device first
    t_read = time.monotonic() - t0
    busy = bar(s, False, clk + 0x20) & 1 == 0
    check(busy and descs < 255, "a register read during long work is answered while the ring is busy "
          "(PERF_DESCS %d of 255, clock STATUS %s)" % (descs, "busy" if busy else "idle"))
    time.sleep(0.5)  # the guest is quiet: the device runs on its own
    check(bar(s, False, clk + 0x20) & 1 == 0, "the ring is still running after 0.5 s")
    t_term = term_and_wait(p, "free-running")
    print("vp responsive (shell, 255 GEMMs of 2^31 MACs): read answered after %.2f s with %d descriptors done; "
          "exit %.2f s after SIGTERM" % (t_read, descs, t_term))
    s.close()
    ram.close()
    os.close(fd)

    s, p = server(device="shell")
    ram, fd, bar0, clk = long_shell_ring(s, 2040)
    bar(s, True, clk + 8, 1)  # MODE: stepped
    bar(s, True, bar0 + 0x40, 1)
    bar(s, True, clk + 0x10, 0xFFFFFFFF)
    s.sendall(msg(4, struct.pack("<QQIB3x", clk + 0x14, 0, 4, 1)))  # STEP_HI 0: steps 2^32 - 1 cycles; no wait for the reply
    time.sleep(0.5)
    t_term = term_and_wait(p, "a STEP of 2^32 - 1 cycles")
    print("vp responsive (stepped): exit %.2f s after SIGTERM in the middle of a STEP of 2^32 - 1 cycles" % t_term)
    s.close()
    ram.close()
    os.close(fd)


def main():
    work = tempfile.mkdtemp(prefix="vp-test-")
    try:
        {"boot": case_boot, "v0_e1": case_v0_e1, "shell": case_shell, "pccx": case_pccx,
         "resnet": case_resnet, "fault": case_fault, "proto": case_proto}[CASE](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


main()
