/* SPDX-License-Identifier: MIT */
/* npu vp run: the guest side (kernel, initramfs, /init, the command's status). */
#ifndef NPUKIT_TOOLS_VP_GUEST_H
#define NPUKIT_TOOLS_VP_GUEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct vp_guest {
    /* what to build */
    const char *command;                 /* a /bin/sh command line, or NULL for an interactive shell */
    const char *const *modules;          /* extra kernel modules, loaded in order */
    size_t nmodules;
    const char *const *adds;             /* "SRC:DST" */
    size_t nadds;
    const char *kernel;                  /* NULL: the newest /boot/vmlinuz-* */
    const char *npu;                     /* NULL: this program */
    int no_uio;                          /* 1: do not bind uio_pci_generic */
    uint64_t mem, dma;                   /* guest RAM, and the DMA window at its top */
    /* what was built */
    char dir[256];                       /* temporary directory (removed by vp_guest_free) */
    char kernel_path[512], kver[128];
    char boot_path[600];                 /* what QEMU boots: the cached vmlinux (PVH) or kernel_path */
    char initrd_path[300], status_path[300];
    uint64_t initrd_bytes;
} vp_guest;

/* Find the kernel and its modules, write the initramfs (uncompressed newc
 * cpio) into a new temporary directory. 0, or a negative status with a
 * message naming what is missing. */
int vp_guest_build(vp_guest *g);
/* The command's exit status reported by the guest's /init (0..255). */
int vp_guest_status(const vp_guest *g, int *status);
void vp_guest_free(vp_guest *g);

#endif
