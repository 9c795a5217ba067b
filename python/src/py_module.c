// SPDX-License-Identifier: MIT
/* npukit._npukit: module init, exceptions, and the numpy <-> npk_tensor mapping. */
#define PYNPK_MODULE_C
#include "pynpk.h"

#include <stdlib.h>
#include <string.h>

#include "npukit/sim.h"

PyObject *pynpk_Error, *pynpk_InvalidArgument, *pynpk_NotImplemented, *pynpk_Fail, *pynpk_NoSuchFile,
    *pynpk_InvalidGraph;

PyObject *pynpk_raise(int status, const char *fallback) {
    int code = status < 0 ? -status : status;
    const char *msg = npk_errmsg();
    if (!msg || !msg[0]) msg = fallback ? fallback : "npukit error";
    PyObject *exc = code == NPK_EINVAL         ? pynpk_InvalidArgument
                    : code == NPK_EUNSUPPORTED ? pynpk_NotImplemented
                    : code == NPK_EFORMAT      ? pynpk_InvalidGraph
                    : code == NPK_ENOMEM       ? PyExc_MemoryError
                                               : pynpk_Fail;
    PyErr_SetString(exc, msg);
    return NULL;
}

static const struct {
    int dtype, npy;
} dtype_map[] = {
    {NPK_DT_FLOAT, NPY_FLOAT32}, {NPK_DT_DOUBLE, NPY_FLOAT64}, {NPK_DT_FLOAT16, NPY_FLOAT16},
    {NPK_DT_INT8, NPY_INT8},     {NPK_DT_UINT8, NPY_UINT8},    {NPK_DT_INT16, NPY_INT16},
    {NPK_DT_UINT16, NPY_UINT16}, {NPK_DT_INT32, NPY_INT32},    {NPK_DT_UINT32, NPY_UINT32},
    {NPK_DT_INT64, NPY_INT64},   {NPK_DT_UINT64, NPY_UINT64},  {NPK_DT_BOOL, NPY_BOOL},
    /* numpy has no bfloat16: its raw bits as uint16 (docs/python.md) */
    {NPK_DT_BFLOAT16, NPY_UINT16},
};

int pynpk_npy_type(int dtype) {
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].dtype == dtype) return dtype_map[i].npy;
    return -1;
}

int pynpk_dtype_of(PyArray_Descr *d) {
    int n = d->type_num;
    /* numpy's long/longlong and int/intc are distinct type numbers of the same size */
    if (PyTypeNum_ISINTEGER(n) && n != NPY_BOOL) {
        int sz = (int)d->elsize, sgn = PyTypeNum_ISSIGNED(n);
        return sz == 1 ? (sgn ? NPK_DT_INT8 : NPK_DT_UINT8)
               : sz == 2 ? (sgn ? NPK_DT_INT16 : NPK_DT_UINT16)
               : sz == 4 ? (sgn ? NPK_DT_INT32 : NPK_DT_UINT32)
               : sz == 8 ? (sgn ? NPK_DT_INT64 : NPK_DT_UINT64)
                         : -1;
    }
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].npy == n && dtype_map[i].dtype != NPK_DT_BFLOAT16) return dtype_map[i].dtype;
    return -1;
}

static void capsule_free(PyObject *cap) { free(PyCapsule_GetPointer(cap, "npukit.data")); }

static PyObject *tensor_to_array(npk_tensor *t) {
    int npy = pynpk_npy_type(t->dtype);
    if (npy < 0) {
        PyErr_Format(pynpk_NotImplemented, "output '%s': element type %s has no numpy type", t->name ? t->name : "",
                     npk_dtype_name(t->dtype));
        return NULL;
    }
    npy_intp dims[NPK_MAX_RANK];
    for (int i = 0; i < t->rank; i++) dims[i] = (npy_intp)t->dims[i];
    if (!t->data || npk_tensor_numel(t) == 0) return PyArray_ZEROS(t->rank, dims, npy, 0);
    PyObject *arr = PyArray_SimpleNewFromData(t->rank, dims, npy, t->data);
    if (!arr) return NULL;
    PyObject *cap = PyCapsule_New(t->data, "npukit.data", capsule_free);
    if (!cap) {
        Py_DECREF(arr);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* steals cap even on failure */
        Py_DECREF(arr);
        return NULL;
    }
    t->data = NULL; /* the array owns it now */
    return arr;
}

PyObject *pynpk_value_to_py(npk_tensor *t) {
    if (t->kind == NPK_KIND_TENSOR) return tensor_to_array(t);
    if (t->kind == NPK_KIND_OPTIONAL) {
        if (!t->n_items) Py_RETURN_NONE;
        return pynpk_value_to_py(&t->items[0]);
    }
    PyObject *l = PyList_New((Py_ssize_t)t->n_items);
    if (!l) return NULL;
    for (size_t i = 0; i < t->n_items; i++) {
        PyObject *v = pynpk_value_to_py(&t->items[i]);
        if (!v) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    return l;
}

static int tensor_from_py(PyObject *obj, const char *what, npk_tensor *t, PyObject *keep) {
    PyArrayObject *arr;
    if (PyArray_Check(obj)) {
        Py_INCREF(obj);
        arr = (PyArrayObject *)obj;
    } else {
        /* a Python scalar or list: numpy's default conversion (as ONNX Runtime does) */
        arr = (PyArrayObject *)PyArray_FROM_O(obj);
        if (!arr) return -1;
    }
    int dt = pynpk_dtype_of(PyArray_DESCR(arr));
    if (dt < 0) {
        PyObject *r = PyObject_Repr((PyObject *)PyArray_DESCR(arr));
        PyErr_Format(pynpk_InvalidArgument, "%s: numpy dtype %s has no ONNX element type npukit runs", what,
                     r ? PyUnicode_AsUTF8(r) : "?");
        Py_XDECREF(r);
        Py_DECREF(arr);
        return -1;
    }
    if (PyArray_NDIM(arr) > NPK_MAX_RANK) {
        PyErr_Format(pynpk_InvalidArgument, "%s: rank %d (at most %d supported)", what, PyArray_NDIM(arr), NPK_MAX_RANK);
        Py_DECREF(arr);
        return -1;
    }
    /* read in place when the layout is C-contiguous and aligned, else one copy */
    PyArrayObject *c = (PyArrayObject *)PyArray_FromAny((PyObject *)arr, NULL, 0, 0, NPY_ARRAY_IN_ARRAY, NULL);
    Py_DECREF(arr);
    if (!c) return -1;
    int rc = PyList_Append(keep, (PyObject *)c);
    Py_DECREF(c);
    if (rc) return -1;
    t->kind = NPK_KIND_TENSOR;
    t->dtype = dt;
    t->rank = PyArray_NDIM(c);
    for (int i = 0; i < t->rank; i++) t->dims[i] = (int64_t)PyArray_DIM(c, i);
    t->data = PyArray_DATA(c);
    return 0;
}

int pynpk_value_from_py(PyObject *obj, int kind, const char *what, npk_tensor *t, PyObject *keep) {
    memset(t, 0, sizeof *t);
    if (kind == NPK_KIND_OPTIONAL) {
        t->kind = NPK_KIND_OPTIONAL;
        if (obj == Py_None) return 0;
        if (!(t->items = calloc(1, sizeof(npk_tensor)))) {
            PyErr_NoMemory();
            return -1;
        }
        t->n_items = 1;
        /* optional(sequence) holds a list, optional(tensor) an array */
        int ik = PyList_Check(obj) || PyTuple_Check(obj) ? NPK_KIND_SEQUENCE : NPK_KIND_TENSOR;
        return pynpk_value_from_py(obj, ik, what, &t->items[0], keep);
    }
    if (kind == NPK_KIND_SEQUENCE) {
        if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
            PyErr_Format(pynpk_InvalidArgument, "%s: a sequence input takes a list of arrays, not %s", what,
                         Py_TYPE(obj)->tp_name);
            return -1;
        }
        PyObject *seq = PySequence_Fast(obj, "");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        t->kind = NPK_KIND_SEQUENCE;
        if (n && !(t->items = calloc((size_t)n, sizeof(npk_tensor)))) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
        t->n_items = (size_t)n;
        for (Py_ssize_t i = 0; i < n; i++)
            if (tensor_from_py(PySequence_Fast_GET_ITEM(seq, i), what, &t->items[i], keep)) {
                Py_DECREF(seq);
                return -1;
            }
        Py_DECREF(seq);
        return 0;
    }
    if (obj == Py_None) {
        PyErr_Format(pynpk_InvalidArgument, "%s: None given for a tensor input", what);
        return -1;
    }
    return tensor_from_py(obj, what, t, keep);
}

void pynpk_borrowed_free(npk_tensor *t) {
    for (size_t i = 0; i < t->n_items; i++) pynpk_borrowed_free(&t->items[i]);
    free(t->items);
    free(t->name);
    memset(t, 0, sizeof *t);
}

/* load_tensor(data: bytes, kind=0) -> value: an ONNX TensorProto / SequenceProto /
 * OptionalProto decoded by npukit's reader. */
PyObject *pynpk_load_tensor(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwl[] = {"data", "kind", NULL};
    Py_buffer b;
    int kind = NPK_KIND_TENSOR;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|i", kwl, &b, &kind)) return NULL;
    npk_tensor t;
    memset(&t, 0, sizeof t);
    int rc = npk_value_load_pb(&t, b.buf, (size_t)b.len, kind);
    PyBuffer_Release(&b);
    if (rc) return pynpk_raise(rc, "cannot decode the tensor");
    PyObject *v = pynpk_value_to_py(&t);
    npk_tensor_free(&t);
    return v;
}

/* save_tensor(array) -> bytes (an ONNX TensorProto with raw_data). */
PyObject *pynpk_save_tensor(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwl[] = {"array", "name", NULL};
    PyObject *obj;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z", kwl, &obj, &name)) return NULL;
    PyObject *keep = PyList_New(0);
    if (!keep) return NULL;
    npk_tensor t;
    PyObject *res = NULL;
    if (!pynpk_value_from_py(obj, NPK_KIND_TENSOR, "save_tensor", &t, keep)) {
        t.name = name ? strdup(name) : NULL;
        uint8_t *out = NULL;
        size_t len = 0;
        int rc = npk_tensor_save_pb(&t, &out, &len);
        if (rc) pynpk_raise(rc, "cannot encode the tensor");
        else res = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)len);
        free(out);
    }
    pynpk_borrowed_free(&t);
    Py_DECREF(keep);
    return res;
}

/* check_device(device, opts=None): raise InvalidArgument for an unknown device
 * ("cpu" included) or options its model refuses; the cpu device takes none. */
static PyObject *pynpk_check_device(PyObject *self, PyObject *args) {
    (void)self;
    const char *device, *opts = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &device, &opts)) return NULL;
    int rc = npk_graph_device_check(device);
    if (rc) return pynpk_raise(rc, "unknown device");
    if (opts && opts[0]) {
        const npk_dev_class *c = npk_dev_class_find(device);
        if (!c) return PyErr_Format(pynpk_InvalidArgument, "the %s device takes no options (given '%s')", device, opts);
        if ((rc = npk_dev_check_opts(c, opts))) return pynpk_raise(rc, "bad device options");
    }
    Py_RETURN_NONE;
}

/* device_info(name) -> dict: the device table's row (MMIO window, clock, IRQ lines, PCI device ID of npu vp). */
static PyObject *pynpk_device_info(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    const npk_dev_class *c = npk_dev_class_find(name);
    if (!c) return PyErr_Format(pynpk_InvalidArgument, "unknown device '%s' (known: %s)", name, npk_dev_names());
    return Py_BuildValue("{s:s,s:K,s:I,s:K,s:i,s:i}", "name", c->name, "mmio_base", (unsigned long long)c->mmio_base,
                         "mmio_size", (unsigned int)c->mmio_size, "hz", (unsigned long long)c->hz, "irqs", (int)c->n_irq,
                         "pci_device", (int)c->pci_device);
}

static PyMethodDef module_methods[] = {
    {"device_info", (PyCFunction)pynpk_device_info, METH_VARARGS, "device_info(name) -> dict (MMIO window, clock, IRQs)"},
    {"check_device", (PyCFunction)pynpk_check_device, METH_VARARGS,
     "check_device(device, opts=None): raise InvalidArgument for an unknown device or refused options"},
    {"load_tensor", (PyCFunction)(void (*)(void))pynpk_load_tensor, METH_VARARGS | METH_KEYWORDS,
     "load_tensor(data, kind=0): decode a serialized ONNX TensorProto (kind 1: SequenceProto, 2: OptionalProto)"},
    {"save_tensor", (PyCFunction)(void (*)(void))pynpk_save_tensor, METH_VARARGS | METH_KEYWORDS,
     "save_tensor(array, name=None): encode an array as an ONNX TensorProto (bytes)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "npukit._npukit",
                                        "npukit's C API for Python (use the npukit package)", -1, module_methods,
                                        NULL, NULL, NULL, NULL};

static int add_exc(PyObject *m, PyObject **slot, const char *name, PyObject *base, const char *doc) {
    char full[64];
    snprintf(full, sizeof full, "npukit.%s", name);
    *slot = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!*slot) return -1;
    Py_INCREF(*slot);
    return PyModule_AddObject(m, name, *slot);
}

PyMODINIT_FUNC PyInit__npukit(void) {
    import_array();
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (add_exc(m, &pynpk_Error, "Error", PyExc_RuntimeError, "an error npukit reported (the message names the cause)") ||
        add_exc(m, &pynpk_Fail, "Fail", pynpk_Error, "a run failed") ||
        add_exc(m, &pynpk_InvalidArgument, "InvalidArgument", pynpk_Error,
                "a bad argument: an unknown input or output name, a wrong shape or element type, a bad option") ||
        add_exc(m, &pynpk_NotImplemented, "NotImplemented", pynpk_Error,
                "something npukit does not run (an unsupported operator or element type)") ||
        add_exc(m, &pynpk_NoSuchFile, "NoSuchFile", pynpk_Error, "a file that cannot be read") ||
        add_exc(m, &pynpk_InvalidGraph, "InvalidGraph", pynpk_Error, "a malformed model"))
        goto fail;
    if (PyType_Ready(&pynpk_GraphType) < 0 || PyType_Ready(&pynpk_PortType) < 0 || PyType_Ready(&pynpk_LLMType) < 0)
        goto fail;
    Py_INCREF(&pynpk_LLMType);
    if (PyModule_AddObject(m, "LLM", (PyObject *)&pynpk_LLMType) < 0) goto fail;
    Py_INCREF(&pynpk_GraphType);
    if (PyModule_AddObject(m, "Graph", (PyObject *)&pynpk_GraphType) < 0) goto fail;
    Py_INCREF(&pynpk_PortType);
    if (PyModule_AddObject(m, "Port", (PyObject *)&pynpk_PortType) < 0) goto fail;
    if (PyModule_AddStringConstant(m, "devices", npk_graph_device_names()) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
