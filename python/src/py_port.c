// SPDX-License-Identifier: MIT
/* npukit._npukit.Port: register-level access to a device through a port
 * (include/npukit/npu.h): the in-process model, a qtest server, or UIO. */
#include "pynpk.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD npk_port *p;
} PortObject;

static void port_dealloc(PortObject *self) {
    if (self->p) npk_port_close(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Port(device, spec=None, opts=None) */
static int port_init(PortObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"device", "spec", "opts", NULL};
    const char *device, *spec = NULL, *opts = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zz", kwl, &device, &spec, &opts)) return -1;
    if (self->p) {
        PyErr_SetString(PyExc_RuntimeError, "Port already open");
        return -1;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = npk_port_open(&self->p, spec, device, opts);
    Py_END_ALLOW_THREADS if (rc) {
        self->p = NULL;
        pynpk_raise(rc, "cannot open the port");
        return -1;
    }
    return 0;
}

static int open_(PortObject *self) {
    if (self->p) return 1;
    PyErr_SetString(PyExc_ValueError, "the device is closed");
    return 0;
}

static PyObject *port_close(PortObject *self, PyObject *unused) {
    (void)unused;
    if (self->p) npk_port_close(self->p);
    self->p = NULL;
    Py_RETURN_NONE;
}

static PyObject *port_read32(PortObject *self, PyObject *args) {
    unsigned int off;
    if (!PyArg_ParseTuple(args, "I", &off) || !open_(self)) return NULL;
    uint32_t v = 0;
    int rc = npk_port_read32(self->p, off, &v);
    if (rc) return pynpk_raise(rc, "read32 failed");
    return PyLong_FromUnsignedLong(v);
}

static PyObject *port_write32(PortObject *self, PyObject *args) {
    unsigned int off;
    unsigned long long v;
    if (!PyArg_ParseTuple(args, "IK", &off, &v) || !open_(self)) return NULL;
    if (v > 0xffffffffull) return PyErr_Format(PyExc_OverflowError, "write32: value 0x%llx does not fit 32 bits", v);
    int rc = npk_port_write32(self->p, off, (uint32_t)v);
    if (rc) return pynpk_raise(rc, "write32 failed");
    Py_RETURN_NONE;
}

static PyObject *port_write64(PortObject *self, PyObject *args) {
    unsigned int off;
    unsigned long long v;
    if (!PyArg_ParseTuple(args, "IK", &off, &v) || !open_(self)) return NULL;
    int rc = npk_port_write64(self->p, off, v);
    if (rc) return pynpk_raise(rc, "write64 failed");
    Py_RETURN_NONE;
}

/* mem_read(addr, length) -> bytes */
static PyObject *port_mem_read(PortObject *self, PyObject *args) {
    unsigned long long addr;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "Kn", &addr, &len) || !open_(self)) return NULL;
    if (len < 0) return PyErr_Format(PyExc_ValueError, "mem_read: negative length %zd", len);
    PyObject *b = PyBytes_FromStringAndSize(NULL, len);
    if (!b) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = npk_port_mem_read(self->p, addr, PyBytes_AS_STRING(b), (size_t)len);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(b);
        return pynpk_raise(rc, "mem_read failed");
    }
    return b;
}

/* Guest memory to or from a buffer: mem_read_into(addr, writable buffer) fills one (a numpy
 * array), mem_write(addr, data) writes any contiguous buffer (bytes, bytearray, numpy array). */
static PyObject *mem_buffer(PortObject *self, PyObject *args, int write) {
    unsigned long long addr;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, write ? "Ky*" : "Kw*", &addr, &b)) return NULL;
    if (!open_(self)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = write ? npk_port_mem_write(self->p, addr, b.buf, (size_t)b.len)
                                      : npk_port_mem_read(self->p, addr, b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    if (rc) return pynpk_raise(rc, write ? "mem_write failed" : "mem_read failed");
    Py_RETURN_NONE;
}
static PyObject *port_mem_read_into(PortObject *self, PyObject *args) { return mem_buffer(self, args, 0); }
static PyObject *port_mem_write(PortObject *self, PyObject *args) { return mem_buffer(self, args, 1); }

/* clock_step(cycles) -> cycles elapsed since open */
static PyObject *port_clock_step(PortObject *self, PyObject *args) {
    unsigned long long n;
    if (!PyArg_ParseTuple(args, "K", &n) || !open_(self)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = npk_port_wait(self->p, n);
    Py_END_ALLOW_THREADS if (rc) return pynpk_raise(rc, "clock_step failed");
    return PyLong_FromUnsignedLongLong(npk_port_cycles(self->p));
}

static PyObject *port_irq(PortObject *self, PyObject *args) {
    int line = 0;
    if (!PyArg_ParseTuple(args, "|i", &line) || !open_(self)) return NULL;
    int v = npk_port_irq(self->p, line);
    if (v < 0) return pynpk_raise(v, "irq failed");
    return PyBool_FromLong(v);
}

static PyObject *port_reset(PortObject *self, PyObject *unused) {
    (void)unused;
    if (!open_(self)) return NULL;
    int rc = npk_port_reset(self->p);
    if (rc) return pynpk_raise(rc, "reset failed");
    Py_RETURN_NONE;
}

static PyObject *port_alloc(PortObject *self, PyObject *args) {
    unsigned long long size, align = 64;
    if (!PyArg_ParseTuple(args, "K|K", &size, &align) || !open_(self)) return NULL;
    uint64_t a = 0;
    int rc = npk_port_alloc(self->p, size, align, &a);
    if (rc) return pynpk_raise(rc, "alloc failed");
    return PyLong_FromUnsignedLongLong(a);
}

static PyObject *port_free(PortObject *self, PyObject *args) {
    unsigned long long a;
    if (!PyArg_ParseTuple(args, "K", &a) || !open_(self)) return NULL;
    npk_port_free(self->p, a);
    Py_RETURN_NONE;
}

static PyObject *port_info(PortObject *self, PyObject *unused) {
    (void)unused;
    if (!open_(self)) return NULL;
    return Py_BuildValue("{s:s,s:s,s:K,s:K,s:K}", "device", npk_port_device(self->p), "kind", npk_port_kind(self->p),
                         "cycles", (unsigned long long)npk_port_cycles(self->p), "hz",
                         (unsigned long long)npk_port_hz(self->p), "mmio_count",
                         (unsigned long long)npk_port_mmio_count(self->p));
}

static PyMethodDef port_methods[] = {
    {"close", (PyCFunction)port_close, METH_NOARGS, "close the port"},
    {"read32", (PyCFunction)port_read32, METH_VARARGS, "read32(offset) -> int"},
    {"write32", (PyCFunction)port_write32, METH_VARARGS, "write32(offset, value)"},
    {"write64", (PyCFunction)port_write64, METH_VARARGS, "write64(offset, value)"},
    {"mem_read", (PyCFunction)port_mem_read, METH_VARARGS, "mem_read(addr, length) -> bytes"},
    {"mem_read_into", (PyCFunction)port_mem_read_into, METH_VARARGS, "mem_read_into(addr, writable buffer)"},
    {"mem_write", (PyCFunction)port_mem_write, METH_VARARGS, "mem_write(addr, buffer)"},
    {"clock_step", (PyCFunction)port_clock_step, METH_VARARGS, "clock_step(cycles) -> cycles since open"},
    {"irq", (PyCFunction)port_irq, METH_VARARGS, "irq(line=0) -> bool"},
    {"reset", (PyCFunction)port_reset, METH_NOARGS, "device reset"},
    {"alloc", (PyCFunction)port_alloc, METH_VARARGS, "alloc(size, align=64) -> guest address"},
    {"free", (PyCFunction)port_free, METH_VARARGS, "free(guest address)"},
    {"info", (PyCFunction)port_info, METH_NOARGS, "device, port kind, cycles, clock, MMIO count"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pynpk_PortType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "npukit._npukit.Port",
    .tp_basicsize = sizeof(PortObject),
    .tp_dealloc = (destructor)port_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Port(device, spec=None, opts=None): a device behind a port (include/npukit/npu.h)",
    .tp_methods = port_methods,
    .tp_init = (initproc)port_init,
    .tp_new = PyType_GenericNew,
};
