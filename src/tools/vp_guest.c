/* SPDX-License-Identifier: MIT */
/*
 * npu vp run's guest: Debian's kernel from /boot, and an initramfs built on
 * the spot as an uncompressed newc cpio archive (no cpio or gzip run): the
 * static busybox, /init, uio.ko and uio_pci_generic.ko from the kernel's
 * /lib/modules, the npu binary and every shared library ldd lists for it,
 * the --module and --add files (ELF programs among them with their libraries).
 */
#define _GNU_SOURCE
#include "vp_guest.h"

#include "npukit/error.h"
#include "npukit/sim.h"
#include "npukit/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUSYBOX "/bin/busybox"

typedef struct cpio {
    FILE *f;
    const char *path;
    uint32_t ino;
    uint64_t bytes;
    char **names; /* every path written (directories and files), to skip repeats */
    size_t n, cap;
} cpio;

static int seen(cpio *c, const char *name) {
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name)) return 1;
    return 0;
}

static int remember(cpio *c, const char *name) {
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        char **nn = realloc(c->names, nc * sizeof *nn);
        if (!nn) return npk_err(NPK_ENOMEM, "out of memory");
        c->names = nn;
        c->cap = nc;
    }
    if (!(c->names[c->n] = strdup(name))) return npk_err(NPK_ENOMEM, "out of memory");
    c->n++;
    return 0;
}

static int pad4(cpio *c) {
    static const char z[4] = {0};
    size_t k = (size_t)((4 - c->bytes % 4) % 4);
    if (k && fwrite(z, 1, k, c->f) != k) return npk_err(NPK_EIO, "writing %s: %s", c->path, strerror(errno));
    c->bytes += k;
    return 0;
}

/* name without the leading '/' */
static int header(cpio *c, const char *name, uint32_t mode, uint64_t size) {
    if (size > 0xffffffffu) return npk_err(NPK_EINVAL, "'%s' is too large for the initramfs (%" PRIu64 " bytes)", name, size);
    size_t nl = strlen(name) + 1;
    int k = fprintf(c->f, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08zX%08X", ++c->ino, mode, 0u, 0u,
                    (mode & 0040000) ? 2u : 1u, 0u, (uint32_t)size, 0u, 0u, 0u, 0u, nl, 0u);
    if (k != 110 || fwrite(name, 1, nl, c->f) != nl) return npk_err(NPK_EIO, "writing %s: %s", c->path, strerror(errno));
    c->bytes += 110 + nl;
    return pad4(c);
}

static int parent_dirs(cpio *c, const char *path);

static int add_dir(cpio *c, const char *path) {
    while (*path == '/') path++;
    if (!*path || seen(c, path)) return 0;
    int rc = parent_dirs(c, path);
    if (!rc) rc = header(c, path, 0040755, 0);
    if (!rc) rc = remember(c, path);
    return rc;
}

/* the directories above path (none for a name without '/') */
static int parent_dirs(cpio *c, const char *path) {
    char *d = strdup(path);
    if (!d) return npk_err(NPK_ENOMEM, "out of memory");
    char *slash = strrchr(d, '/');
    int rc = 0;
    if (slash) {
        *slash = 0;
        rc = add_dir(c, d);
    }
    free(d);
    return rc;
}

static int add_data(cpio *c, const char *dst, const void *data, size_t len, uint32_t mode) {
    while (*dst == '/') dst++;
    if (seen(c, dst)) return 0;
    int rc = parent_dirs(c, dst);
    if (!rc) rc = header(c, dst, 0100000 | mode, len);
    if (!rc && len && fwrite(data, 1, len, c->f) != len) rc = npk_err(NPK_EIO, "writing %s: %s", c->path, strerror(errno));
    c->bytes += len;
    if (!rc) rc = pad4(c);
    if (!rc) rc = remember(c, dst);
    return rc;
}

/* A host file (symlinks followed) at dst, keeping its permission bits. */
static int add_file(cpio *c, const char *dst, const char *src) {
    while (*dst == '/') dst++;
    if (seen(c, dst)) return 0;
    FILE *in = fopen(src, "rb");
    if (!in) return npk_err(NPK_EIO, "cannot open '%s': %s", src, strerror(errno));
    struct stat st;
    if (fstat(fileno(in), &st) || !S_ISREG(st.st_mode)) {
        fclose(in);
        return npk_err(NPK_EINVAL, "'%s' is not a regular file", src);
    }
    int rc = parent_dirs(c, dst);
    if (!rc) rc = header(c, dst, 0100000 | (st.st_mode & 07777), (uint64_t)st.st_size);
    char buf[1 << 16];
    uint64_t left = (uint64_t)st.st_size;
    while (!rc && left) {
        size_t n = fread(buf, 1, sizeof buf < left ? sizeof buf : (size_t)left, in);
        if (!n) {
            rc = npk_err(NPK_EIO, "reading '%s': %s", src, ferror(in) ? strerror(errno) : "the file shrank");
            break;
        }
        if (fwrite(buf, 1, n, c->f) != n) rc = npk_err(NPK_EIO, "writing %s: %s", c->path, strerror(errno));
        c->bytes += n;
        left -= n;
    }
    fclose(in);
    if (!rc) rc = pad4(c);
    if (!rc) rc = remember(c, dst);
    return rc;
}

static int is_elf(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char m[4] = {0};
    size_t n = fread(m, 1, 4, f);
    fclose(f);
    return n == 4 && !memcmp(m, "\177ELF", 4);
}

/* The shared libraries of an ELF program (ldd), each at its own path. */
static int add_libs(cpio *c, const char *prog) {
    npk_strbuf cmd = {0};
    npk_strbuf_printf(&cmd, "ldd '");
    for (const char *s = prog; *s; s++) {
        if (*s == '\'') npk_strbuf_printf(&cmd, "'\\''");
        else npk_strbuf_printf(&cmd, "%c", *s);
    }
    npk_strbuf_printf(&cmd, "' 2>&1");
    if (cmd.oom) {
        free(cmd.p);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    FILE *p = popen(cmd.p, "r");
    free(cmd.p);
    if (!p) return npk_err(NPK_EIO, "cannot run ldd: %s", strerror(errno));
    char line[1024];
    int rc = 0, static_prog = 0;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, "not a dynamic executable") || strstr(line, "statically linked")) static_prog = 1;
        if (strstr(line, "=> not found")) {
            line[strcspn(line, "\n")] = 0;
            rc = npk_err(NPK_EIO, "'%s' needs a library the host does not have:%s", prog, line);
            break;
        }
        char *path = strstr(line, "=> /");
        path = path ? path + 3 : (line[strspn(line, " \t")] == '/' ? line + strspn(line, " \t") : NULL);
        if (!path) continue;
        path[strcspn(path, " (\n")] = 0;
        if (!rc) rc = add_file(c, path, path);
        if (rc) break;
    }
    int st = pclose(p);
    if (!rc && st != 0 && !static_prog) rc = npk_err(NPK_EIO, "ldd '%s' failed (status %d)", prog, st);
    return rc;
}

/* SRC (file or directory, recursively) at DST. */
static int add_tree(cpio *c, const char *src, const char *dst) {
    struct stat st;
    if (stat(src, &st)) return npk_err(NPK_EIO, "--add: '%s': %s", src, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        int rc = add_dir(c, dst);
        DIR *d = opendir(src);
        if (!d) return npk_err(NPK_EIO, "--add: cannot read directory '%s': %s", src, strerror(errno));
        struct dirent *e;
        while (!rc && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *s2 = NULL, *d2 = NULL;
            if (asprintf(&s2, "%s/%s", src, e->d_name) < 0 || asprintf(&d2, "%s/%s", dst, e->d_name) < 0) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
            } else {
                rc = add_tree(c, s2, d2);
            }
            free(s2);
            free(d2);
        }
        closedir(d);
        return rc;
    }
    int rc = add_file(c, dst, src);
    if (!rc && (st.st_mode & 0111) && is_elf(src)) rc = add_libs(c, src);
    return rc;
}

static int newest_kernel(char *out, size_t n) {
    DIR *d = opendir("/boot");
    if (!d) return npk_err(NPK_EIO, "no guest kernel: cannot read /boot (%s); install linux-image-amd64", strerror(errno));
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "vmlinuz-", 8) && strlen(e->d_name) < sizeof best &&
            (!best[0] || strverscmp(e->d_name, best) > 0))
            snprintf(best, sizeof best, "%s", e->d_name);
    closedir(d);
    if (!best[0]) return npk_err(NPK_EIO, "no guest kernel: no /boot/vmlinuz-* (install linux-image-amd64)");
    snprintf(out, n, "/boot/%s", best);
    return 0;
}

/* The kernel without its decompressor: a bzImage's payload decompressed once
 * into the cache (~/.cache/npukit/vp/vmlinux-VER-SIZE-MTIME), booted by QEMU
 * through its PVH entry point: under TCG the decompressor alone takes longer
 * than the rest of the boot. Returns 0 with out set, or -1 (use the bzImage). */
static int cached_vmlinux(const vp_guest *g, char *out, size_t n) {
    char cfgp[300];
    snprintf(cfgp, sizeof cfgp, "/boot/config-%s", g->kver);
    FILE *cf = fopen(cfgp, "r");
    int pvh = 0;
    if (cf) {
        char line[256];
        while (fgets(line, sizeof line, cf))
            if (!strcmp(line, "CONFIG_PVH=y\n")) pvh = 1;
        fclose(cf);
    }
    if (!pvh) return -1;
    struct stat st;
    if (stat(g->kernel_path, &st)) return -1;
    const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[400];
    if (cache && *cache) snprintf(dir, sizeof dir, "%s/npukit", cache);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/npukit", home);
    else return -1;
    mkdir(dir, 0755);
    strncat(dir, "/vp", sizeof dir - strlen(dir) - 1);
    mkdir(dir, 0755);
    snprintf(out, n, "%s/vmlinux-%s-%lld-%lld", dir, g->kver, (long long)st.st_size, (long long)st.st_mtime);
    if (!access(out, R_OK)) return 0;
    /* the payload: setup header fields setup_sects (0x1f1), payload_offset (0x248), payload_length (0x24c) */
    FILE *f = fopen(g->kernel_path, "rb");
    if (!f) return -1;
    uint8_t h[0x250];
    int ok = fread(h, 1, sizeof h, f) == sizeof h && !memcmp(h + 0x202, "HdrS", 4);
    uint32_t sects = h[0x1f1] ? h[0x1f1] : 4;
    uint32_t poff = (uint32_t)(h[0x248] | h[0x249] << 8 | h[0x24a] << 16 | (uint32_t)h[0x24b] << 24);
    uint32_t plen = (uint32_t)(h[0x24c] | h[0x24d] << 8 | h[0x24e] << 16 | (uint32_t)h[0x24f] << 24);
    uint64_t start = (uint64_t)(sects + 1) * 512 + poff;
    uint8_t *pl = NULL;
    if (ok && plen && start + plen <= (uint64_t)st.st_size && (pl = malloc(plen)) && !fseek(f, (long)start, SEEK_SET))
        ok = fread(pl, 1, plen, f) == plen;
    else
        ok = 0;
    fclose(f);
    const char *tool = !ok ? NULL
                       : !memcmp(pl, "\xfd" "7zXZ", 5) ? "xz -dc"
                       : !memcmp(pl, "\x28\xb5\x2f\xfd", 4) ? "zstd -dcq"
                       : !memcmp(pl, "\x1f\x8b", 2) ? "gzip -dc"
                                                     : NULL;
    char tmp[700], cmd[800];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
    snprintf(cmd, sizeof cmd, "%s > '%s' 2>/dev/null", tool ? tool : "false", tmp);
    FILE *p = tool ? popen(cmd, "w") : NULL;
    if (p) {
        ok = fwrite(pl, 1, plen, p) == plen;
        pclose(p); /* xz complains about the kernel's stream end; the ELF check below decides */
    } else {
        ok = 0;
    }
    free(pl);
    /* complete: an ELF64 whose section header table (at its end) is all there */
    uint8_t elf[64] = {0};
    FILE *e = ok ? fopen(tmp, "rb") : NULL;
    struct stat es;
    if (e && !fstat(fileno(e), &es)) {
        ok = fread(elf, 1, 64, e) == 64 && !memcmp(elf, "\177ELF\2", 5);
        uint64_t shoff;
        memcpy(&shoff, elf + 0x28, 8);
        uint64_t shsize = (uint64_t)(elf[0x3a] | elf[0x3b] << 8) * (uint64_t)(elf[0x3c] | elf[0x3d] << 8);
        ok = ok && shoff && shoff + shsize <= (uint64_t)es.st_size;
    } else {
        ok = 0;
    }
    if (e) fclose(e);
    if (ok && !rename(tmp, out)) return 0;
    unlink(tmp);
    return -1;
}

/* Why long: the guest in archive order (kernel and module checks, the /init and npu-vp-port
 * scripts, then every archive entry), each step's error ending the build. */
int vp_guest_build(vp_guest *g) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g->dir, sizeof g->dir, "%s/npu-vp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g->dir)) {
        int e = errno;
        g->dir[0] = 0;
        return npk_err(NPK_EIO, "cannot create a temporary directory: %s", strerror(e));
    }
    snprintf(g->initrd_path, sizeof g->initrd_path, "%s/initramfs.cpio", g->dir);
    snprintf(g->status_path, sizeof g->status_path, "%s/status", g->dir);
    int rc = 0;
    if (g->kernel) snprintf(g->kernel_path, sizeof g->kernel_path, "%s", g->kernel);
    else rc = newest_kernel(g->kernel_path, sizeof g->kernel_path);
    if (rc) return rc;
    if (access(g->kernel_path, R_OK))
        return npk_err(NPK_EIO, "guest kernel '%s': %s", g->kernel_path, strerror(errno));
    const char *base = strrchr(g->kernel_path, '/');
    base = base ? base + 1 : g->kernel_path;
    if (strncmp(base, "vmlinuz-", 8))
        return npk_err(NPK_EINVAL, "guest kernel '%s': the name must be vmlinuz-VERSION (its modules are /lib/modules/VERSION)",
                       g->kernel_path);
    snprintf(g->kver, sizeof g->kver, "%s", base + 8);
    snprintf(g->boot_path, sizeof g->boot_path, "%s", g->kernel_path);
    char vmlinux[sizeof g->boot_path];
    if (!getenv("NPU_VP_BZIMAGE") && !cached_vmlinux(g, vmlinux, sizeof vmlinux))
        snprintf(g->boot_path, sizeof g->boot_path, "%s", vmlinux);
    char uio[2][400];
    snprintf(uio[0], sizeof uio[0], "/lib/modules/%s/kernel/drivers/uio/uio.ko", g->kver);
    snprintf(uio[1], sizeof uio[1], "/lib/modules/%s/kernel/drivers/uio/uio_pci_generic.ko", g->kver);
    for (int i = 0; i < 2 && !g->no_uio; i++)
        if (access(uio[i], R_OK))
            return npk_err(NPK_EIO, "kernel module '%s': %s (the modules of kernel %s; linux-image-amd64)", uio[i],
                           strerror(errno), g->kver);
    if (access(BUSYBOX, X_OK)) return npk_err(NPK_EIO, "'%s': %s (install busybox-static)", BUSYBOX, strerror(errno));
    char self[4096];
    const char *npu = g->npu;
    if (!npu) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0) return npk_err(NPK_EIO, "cannot find this program (/proc/self/exe): %s", strerror(errno));
        self[k] = 0;
        npu = self;
    }
    for (size_t i = 0; i < g->nadds; i++)
        if (!strchr(g->adds[i], ':') || g->adds[i][0] == ':' || strchr(g->adds[i], ':')[1] != '/')
            return npk_err(NPK_EINVAL, "--add '%s': expected SRC:DST with an absolute guest path DST", g->adds[i]);

    /* /init */
    uint64_t phys = g->mem - g->dma;
    npk_strbuf in = {0};
    npk_strbuf_printf(&in,
                      "#!/bin/busybox sh\n"
                      "/bin/busybox --install -s /bin\n"
                      "mkdir -p /proc /sys /dev /tmp /root\n"
                      "mount -t proc proc /proc\n"
                      "mount -t sysfs sysfs /sys\n"
                      "mount -t devtmpfs devtmpfs /dev\n"
                      "export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=vt100\n"
                      "export NPK_VP_DMA_PHYS=0x%" PRIx64 " NPK_VP_DMA_SIZE=0x%" PRIx64 "\n"
                      "cd /root\n"
                      "rc=0\n",
                      phys, g->dma);
    for (size_t i = 0; i < g->nmodules; i++) {
        const char *b = strrchr(g->modules[i], '/');
        b = b ? b + 1 : g->modules[i];
        npk_strbuf_printf(&in,
                          "[ $rc = 0 ] && { insmod /lib/npu-vp/%zu-%s || { echo \"npu vp: insmod %s failed\"; rc=125; }; }\n",
                          i, b, b);
    }
    if (!g->no_uio) {
        npk_strbuf_printf(&in, "insmod /lib/npu-vp/uio.ko && insmod /lib/npu-vp/uio_pci_generic.ko || "
                               "echo 'npu vp: cannot load uio_pci_generic'\n");
        size_t n;
        const npk_dev_class *const *cs = npk_dev_classes(&n);
        for (size_t i = 0; i < n; i++)
            if (cs[i]->pci_device)
                npk_strbuf_printf(&in, "echo '%04x %04x' > /sys/bus/pci/drivers/uio_pci_generic/new_id 2>/dev/null\n",
                                  NPK_PCI_VENDOR, cs[i]->pci_device);
    }
    if (g->command)
        npk_strbuf_printf(&in, "[ $rc = 0 ] && { sh /npu-vp-cmd.sh; rc=$?; }\n"
                               "echo \"$rc\" > /dev/ttyS1\n");
    else
        npk_strbuf_printf(&in, "setsid cttyhack sh -l\n");
    npk_strbuf_printf(&in, "sync\nreboot -f\n"); /* -no-reboot: QEMU exits (with or without ACPI) */

    /* npu-vp-port D: the UIO port spec of device D */
    npk_strbuf port = {0};
    npk_strbuf_printf(&port, "#!/bin/sh\n"
                             "# npu-vp-port D: the --port spec of device D over uio_pci_generic and the /dev/mem DMA window\n"
                             "case \"$1\" in\n");
    size_t n;
    const npk_dev_class *const *cs = npk_dev_classes(&n);
    for (size_t i = 0; i < n; i++)
        if (cs[i]->pci_device) npk_strbuf_printf(&port, "%s) id=0x%04x ;;\n", cs[i]->name, cs[i]->pci_device);
    npk_strbuf_printf(&port,
                      "*) echo \"npu-vp-port: unknown device '$1' (known: %s)\" >&2; exit 2 ;;\n"
                      "esac\n"
                      "for u in /sys/class/uio/uio*; do\n"
                      "  [ -e \"$u/device/device\" ] || continue\n"
                      "  if [ \"$(cat $u/device/device)\" = \"$id\" ]; then\n"
                      "    echo \"uio:/dev/${u##*/},mem=/dev/mem,phys=$NPK_VP_DMA_PHYS,size=$NPK_VP_DMA_SIZE\"; exit 0\n"
                      "  fi\n"
                      "done\n"
                      "echo \"npu-vp-port: no UIO device for $1 (PCI 0x%04x:$id); is it a --device of npu vp run?\" >&2\n"
                      "exit 1\n",
                      npk_dev_names(), NPK_PCI_VENDOR);
    if (in.oom || port.oom) rc = npk_err(NPK_ENOMEM, "out of memory");

    cpio c = {0};
    c.path = g->initrd_path;
    if (!rc && !(c.f = fopen(g->initrd_path, "wb")))
        rc = npk_err(NPK_EIO, "cannot create '%s': %s", g->initrd_path, strerror(errno));
    static const char *const dirs[] = {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/proc", "/sys", "/dev", "/tmp",
                                       "/root", "/etc", "/lib/npu-vp"};
    for (size_t i = 0; !rc && i < sizeof dirs / sizeof dirs[0]; i++) rc = add_dir(&c, dirs[i]);
    if (!rc) rc = add_data(&c, "/init", in.p, in.n, 0755);
    if (!rc) rc = add_data(&c, "/bin/npu-vp-port", port.p, port.n, 0755);
    if (!rc && g->command) rc = add_data(&c, "/npu-vp-cmd.sh", g->command, strlen(g->command), 0644);
    if (!rc) rc = add_data(&c, "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 30, 0644);
    if (!rc) rc = add_file(&c, BUSYBOX, BUSYBOX);
    if (!rc) rc = add_file(&c, "/bin/npu", npu);
    if (!rc) rc = add_libs(&c, npu);
    for (int i = 0; !rc && i < 2 && !g->no_uio; i++)
        rc = add_file(&c, i ? "/lib/npu-vp/uio_pci_generic.ko" : "/lib/npu-vp/uio.ko", uio[i]);
    for (size_t i = 0; !rc && i < g->nmodules; i++) {
        const char *b = strrchr(g->modules[i], '/');
        b = b ? b + 1 : g->modules[i];
        char dst[512];
        snprintf(dst, sizeof dst, "/lib/npu-vp/%zu-%s", i, b);
        rc = add_file(&c, dst, g->modules[i]);
        if (rc) rc = npk_err_prefix(rc, "--module");
    }
    for (size_t i = 0; !rc && i < g->nadds; i++) {
        const char *colon = strchr(g->adds[i], ':');
        char *src = strndup(g->adds[i], (size_t)(colon - g->adds[i]));
        const char *dst = colon + 1;
        char *full = NULL;
        if (!src) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            break;
        }
        if (dst[strlen(dst) - 1] == '/') {
            char *tmpsrc = strdup(src);
            size_t l = tmpsrc ? strlen(tmpsrc) : 0;
            while (l > 1 && tmpsrc[l - 1] == '/') tmpsrc[--l] = 0;
            const char *b = tmpsrc ? strrchr(tmpsrc, '/') : NULL;
            b = b ? b + 1 : tmpsrc;
            if (!tmpsrc || asprintf(&full, "%s%s", dst, b) < 0) full = NULL;
            free(tmpsrc);
            if (!full) rc = npk_err(NPK_ENOMEM, "out of memory");
        }
        if (!rc) rc = add_tree(&c, src, full ? full : dst);
        free(full);
        free(src);
    }
    if (!rc) rc = header(&c, "TRAILER!!!", 0, 0);
    g->initrd_bytes = c.bytes;
    if (c.f && fclose(c.f) && !rc) rc = npk_err(NPK_EIO, "writing '%s' failed", g->initrd_path);
    for (size_t i = 0; i < c.n; i++) free(c.names[i]);
    free(c.names);
    free(in.p);
    free(port.p);
    return rc;
}

int vp_guest_status(const vp_guest *g, int *status) {
    FILE *f = fopen(g->status_path, "r");
    char buf[64] = "";
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
    }
    char *end;
    long v = strtol(buf, &end, 10);
    if (!f || end == buf || v < 0 || v > 255)
        return npk_err(NPK_EIO, "the guest ended without reporting the command's exit status (a kernel panic or a "
                       "failed /init; the console output above says why)");
    *status = (int)v;
    return 0;
}

void vp_guest_free(vp_guest *g) {
    if (!g->dir[0]) return;
    if (!getenv("NPU_VP_KEEP")) {
        unlink(g->initrd_path);
        unlink(g->status_path);
        rmdir(g->dir);
    }
    g->dir[0] = 0;
}
