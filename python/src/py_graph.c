// SPDX-License-Identifier: MIT
/* npukit._npukit.Graph: an imported ONNX model (include/npukit/graph.h) and its runs. */
#include "pynpk.h"

#include <pythread.h>
#include <stdlib.h>
#include <string.h>

#include "npukit/threads.h"
#include "npukit/trace.h"

typedef struct {
    PyObject_HEAD npk_graph *g;
    PyThread_type_lock lock; /* one run at a time on a graph (a run caches folded constants in it) */
} GraphObject;

static void graph_dealloc(GraphObject *self) {
    npk_graph_free(self->g);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Graph(model): model is the serialized ModelProto (bytes-like) or a path (str / os.PathLike). */
static int graph_init(GraphObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"model", NULL};
    PyObject *model;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwl, &model)) return -1;
    if (self->g) {
        PyErr_SetString(PyExc_RuntimeError, "Graph already initialised");
        return -1;
    }
    if (!self->lock && !(self->lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    int rc;
    if (PyObject_CheckBuffer(model) && !PyUnicode_Check(model)) {
        Py_buffer b;
        if (PyObject_GetBuffer(model, &b, PyBUF_SIMPLE) < 0) return -1;
        Py_BEGIN_ALLOW_THREADS rc = npk_graph_load(&self->g, b.buf, (size_t)b.len);
        Py_END_ALLOW_THREADS PyBuffer_Release(&b);
        if (rc) {
            pynpk_raise(rc == -NPK_EINVAL ? -NPK_EFORMAT : rc, "cannot import the model");
            return -1;
        }
    } else {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(model, &path)) return -1;
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS rc = npk_graph_load_file(&self->g, p);
        Py_END_ALLOW_THREADS if (rc) {
            /* ONNX Runtime: NoSuchFile for a missing file, InvalidGraph / Fail for a bad one */
            if (rc == -NPK_EIO) PyErr_SetString(pynpk_NoSuchFile, npk_errmsg());
            else pynpk_raise(rc == -NPK_EINVAL ? -NPK_EFORMAT : rc, "cannot import the model");
            Py_DECREF(path);
            return -1;
        }
        Py_DECREF(path);
    }
    return 0;
}

static int ready(GraphObject *self) {
    if (self->g) return 1;
    PyErr_SetString(PyExc_RuntimeError, "Graph not initialised");
    return 0;
}

/* A declared value as a dict: name, dtype (ONNX element type number), kind,
 * elem_kind (npk_kind), shape (list of int / str / None; None when undeclared). */
static PyObject *desc_dict(const npk_value_desc *d) {
    PyObject *shape;
    if (d->rank < 0) {
        shape = Py_None;
        Py_INCREF(shape);
    } else {
        shape = PyList_New(d->rank);
        if (!shape) return NULL;
        for (int i = 0; i < d->rank; i++) {
            PyObject *v = d->dims[i] >= 0  ? PyLong_FromLongLong((long long)d->dims[i])
                          : d->dim_params[i] ? PyUnicode_FromString(d->dim_params[i])
                                             : (Py_INCREF(Py_None), Py_None);
            if (!v) {
                Py_DECREF(shape);
                return NULL;
            }
            PyList_SET_ITEM(shape, i, v);
        }
    }
    return Py_BuildValue("{s:s,s:i,s:i,s:i,s:N}", "name", d->name, "dtype", d->dtype, "kind", d->kind, "elem_kind",
                         d->elem_kind, "shape", shape);
}

static PyObject *descs(GraphObject *self, int out) {
    if (!ready(self)) return NULL;
    size_t n = out ? npk_graph_n_outputs(self->g) : npk_graph_n_inputs(self->g);
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (!l) return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *d = desc_dict(out ? npk_graph_output(self->g, i) : npk_graph_input(self->g, i));
        if (!d) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, d);
    }
    return l;
}

static PyObject *graph_inputs(GraphObject *self, PyObject *unused) {
    (void)unused;
    return descs(self, 0);
}
static PyObject *graph_outputs(GraphObject *self, PyObject *unused) {
    (void)unused;
    return descs(self, 1);
}

/* check(): raise NotImplemented naming every unsupported operator. */
static PyObject *graph_check(GraphObject *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int rc = npk_graph_check(self->g, NULL);
    if (rc) return pynpk_raise(rc, "unsupported operators");
    Py_RETURN_NONE;
}

static PyObject *graph_info(GraphObject *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    return Py_BuildValue("{s:n,s:L}", "nodes", (Py_ssize_t)npk_graph_n_nodes(self->g), "opset",
                         (long long)npk_graph_opset(self->g));
}

/* meta(): the model's metadata (npk_graph_meta) as a dict; metadata_props as a dict in file order. */
static PyObject *graph_meta(GraphObject *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    const npk_model_meta *m = npk_graph_meta(self->g);
    PyObject *props = PyDict_New();
    for (size_t i = 0; props && i < m->n_props; i++) {
        PyObject *v = PyUnicode_FromString(m->prop_values[i]);
        if (!v || PyDict_SetItemString(props, m->prop_keys[i], v)) Py_CLEAR(props);
        Py_XDECREF(v);
    }
    if (!props) return NULL;
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:L,s:s,s:s,s:N}", "producer_name", m->producer_name, "producer_version",
                         m->producer_version, "domain", m->domain, "doc_string", m->doc_string, "model_version",
                         (long long)m->model_version, "graph_name", m->graph_name, "graph_doc_string",
                         m->graph_doc_string, "metadata_props", props);
}

/* Write something with a FILE * writer into a Python bytes object. */
static PyObject *memstream_bytes(int (*write)(const void *, FILE *), const void *obj) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return PyErr_NoMemory();
    int rc = write(obj, m);
    fclose(m);
    PyObject *r = rc ? pynpk_raise(rc, "cannot write") : PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return r;
}
static int write_report(const void *r, FILE *f) { return npk_run_report_write_json(r, f); }
static int write_trace(const void *t, FILE *f) { return npk_trace_write(t, f); }

/* run(inputs: dict, device="cpu", port=None, dev_opts=None, qdq="ort", golden=False,
 *     timing_only=False, seed=0, report=False, trace=False, threads=0)
 * -> (outputs: list, report JSON bytes or None, trace JSON bytes or None).
 * Outputs are every graph output in order (None for each when timing_only).
 * threads: the worker threads of the run's parallel kernels (threads.h; 0: the
 * process-wide count), set on the calling thread for the run only. */
static PyObject *graph_run(GraphObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"inputs", "device", "port", "dev_opts", "qdq", "golden", "timing_only", "seed", "report",
                          "trace", "threads", NULL};
    PyObject *feed;
    const char *device = "cpu", *port = NULL, *dev_opts = NULL, *qdq = "ort";
    int golden = 0, timing_only = 0, want_report = 0, want_trace = 0, threads = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|szzsppKppi", kwl, &PyDict_Type, &feed, &device, &port, &dev_opts,
                                     &qdq, &golden, &timing_only, &seed, &want_report, &want_trace, &threads))
        return NULL;
    if (!ready(self)) return NULL;
    if (threads < 0) return PyErr_Format(pynpk_InvalidArgument, "threads %d: expected >= 0 (0: the default)", threads);
    int qmode = npk_qdq_mode_parse(qdq);
    if (qmode < 0) return PyErr_Format(pynpk_InvalidArgument, "qdq '%s': expected 'fused' or 'ort'", qdq);
    if (npk_graph_device_check(device)) return pynpk_raise(-NPK_EINVAL, "unknown device");
    Py_ssize_t n = PyDict_Size(feed);
    npk_tensor *ins = calloc((size_t)n + 1, sizeof(npk_tensor));
    PyObject *keep = PyList_New(0), *result = NULL;
    npk_tensor *outs = NULL;
    size_t n_outs = 0;
    npk_trace *trace = NULL;
    npk_run_report rep;
    memset(&rep, 0, sizeof rep);
    if (!ins || !keep) {
        PyErr_NoMemory();
        goto out;
    }
    Py_ssize_t pos = 0, k = 0;
    PyObject *key, *val;
    while (PyDict_Next(feed, &pos, &key, &val)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name) {
            PyErr_SetString(pynpk_InvalidArgument, "input names must be strings");
            goto out;
        }
        /* the declared kind of the input says how to read the value (array, list, None) */
        int kind = NPK_KIND_TENSOR, found = 0;
        for (size_t i = 0; i < npk_graph_n_inputs(self->g); i++)
            if (!strcmp(npk_graph_input(self->g, i)->name, name)) {
                kind = npk_graph_input(self->g, i)->kind;
                found = 1;
            }
        if (!found) {
            /* ONNX Runtime's wording: the names the model has follow */
            PyObject *names = PyUnicode_FromString("");
            for (size_t i = 0; names && i < npk_graph_n_inputs(self->g); i++)
                PyUnicode_AppendAndDel(&names, PyUnicode_FromFormat("%s'%s'", i ? ", " : "", npk_graph_input(self->g, i)->name));
            PyErr_Format(pynpk_InvalidArgument, "invalid input name: the model has no input named '%s' (its inputs: %U)",
                         name, names);
            Py_XDECREF(names);
            goto out;
        }
        char what[320];
        snprintf(what, sizeof what, "input '%.300s'", name);
        if (pynpk_value_from_py(val, kind < 0 ? NPK_KIND_TENSOR : kind, what, &ins[k], keep)) {
            k++;
            goto out;
        }
        if (!(ins[k].name = strdup(name))) {
            PyErr_NoMemory();
            k++;
            goto out;
        }
        k++;
    }
    if (want_trace && !(trace = npk_trace_new())) {
        PyErr_NoMemory();
        goto out;
    }
    npk_run_opts opts = {.device = device, .port = port, .trace = trace, .dev_opts = dev_opts, .golden = golden,
                         .timing_only = timing_only, .seed = seed, .qdq = qmode};
    int rc;
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
    int prev_threads = npk_threads_set_local(threads);
    rc = npk_graph_check(self->g, NULL);
    if (!rc) rc = npk_graph_run(self->g, &opts, ins, (size_t)k, &outs, &n_outs, &rep);
    npk_threads_set_local(prev_threads);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS if (rc) {
        pynpk_raise(rc, "the run failed");
        goto out;
    }
    PyObject *ol = PyList_New((Py_ssize_t)n_outs);
    if (!ol) goto out;
    for (size_t i = 0; i < n_outs; i++) {
        PyObject *v = timing_only ? (Py_INCREF(Py_None), Py_None) : pynpk_value_to_py(&outs[i]);
        if (!v) {
            Py_DECREF(ol);
            goto out;
        }
        PyList_SET_ITEM(ol, (Py_ssize_t)i, v);
    }
    PyObject *rj = want_report ? memstream_bytes(write_report, &rep) : (Py_INCREF(Py_None), Py_None);
    PyObject *tj = rj && trace ? memstream_bytes(write_trace, trace) : (Py_INCREF(Py_None), Py_None);
    if (!rj || !tj) {
        Py_DECREF(ol);
        Py_XDECREF(rj);
        Py_XDECREF(tj);
        goto out;
    }
    result = Py_BuildValue("(NNN)", ol, rj, tj);
out:
    for (Py_ssize_t i = 0; ins && i < n; i++) pynpk_borrowed_free(&ins[i]);
    free(ins);
    for (size_t i = 0; i < n_outs; i++) npk_tensor_free(&outs[i]);
    free(outs);
    npk_run_report_fini(&rep);
    if (trace) npk_trace_free(trace);
    Py_XDECREF(keep);
    return result;
}

static PyMethodDef graph_methods[] = {
    {"inputs", (PyCFunction)graph_inputs, METH_NOARGS, "the graph inputs (not initializers), as dicts"},
    {"outputs", (PyCFunction)graph_outputs, METH_NOARGS, "the graph outputs, as dicts"},
    {"check", (PyCFunction)graph_check, METH_NOARGS, "raise NotImplemented naming every unsupported operator"},
    {"info", (PyCFunction)graph_info, METH_NOARGS, "node count and opset"},
    {"meta", (PyCFunction)graph_meta, METH_NOARGS, "the model's metadata (producer, domain, version, graph name, ...)"},
    {"run", (PyCFunction)(void (*)(void))graph_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs, device='cpu', port=None, dev_opts=None, qdq='ort', golden=False, timing_only=False, seed=0, "
     "report=False, trace=False, threads=0) -> (outputs, report_json, trace_json)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pynpk_GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "npukit._npukit.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Graph(model): an ONNX model imported by npukit (model: bytes or a path)",
    .tp_methods = graph_methods,
    .tp_init = (initproc)graph_init,
    .tp_new = PyType_GenericNew,
};
