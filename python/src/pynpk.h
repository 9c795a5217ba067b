// SPDX-License-Identifier: MIT
/*
 * npukit's Python extension (npukit._npukit): shared declarations of the
 * module's C files. The Python-level API (ONNX Runtime's names) is
 * python/npukit/ (the .py files); this layer is a thin mapping of the C API
 * (include/npukit/graph.h, npu.h, llm.h) onto Python objects and numpy arrays.
 */
#ifndef PYNPK_H
#define PYNPK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef PYNPK_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#define PY_ARRAY_UNIQUE_SYMBOL pynpk_ARRAY_API
#include <numpy/arrayobject.h>

#include "npukit/graph.h"
#include "npukit/npu.h"

/* npukit.Error and its subclasses (ONNX Runtime's exception names). */
extern PyObject *pynpk_Error, *pynpk_InvalidArgument, *pynpk_NotImplemented, *pynpk_Fail, *pynpk_NoSuchFile,
    *pynpk_InvalidGraph;

/* Raise the exception for an npk_status (negative or positive) with npk_errmsg()
 * (or `fallback` when empty); returns NULL. */
PyObject *pynpk_raise(int status, const char *fallback);

/* numpy type number of an npukit dtype (-1 when numpy has none: string). */
int pynpk_npy_type(int dtype);
/* npukit dtype of a numpy dtype (-1 when npukit holds none). */
int pynpk_dtype_of(PyArray_Descr *d);

/* Convert an npukit value (tensor, sequence -> list, optional -> None or its
 * value) into Python; the tensor's data moves into the array (t->data is set
 * to NULL: no copy). */
PyObject *pynpk_value_to_py(npk_tensor *t);

/* A host tensor borrowing a numpy array's buffer; `keep` (a list) receives the
 * references that must outlive the tensor. what names the value in errors.
 * kind: the declared npk_kind (tensor, sequence, optional). Free with
 * pynpk_borrowed_free (never npk_tensor_free: the data is numpy's). */
int pynpk_value_from_py(PyObject *obj, int kind, const char *what, npk_tensor *t, PyObject *keep);
void pynpk_borrowed_free(npk_tensor *t);

/* Types defined by the other files, added to the module at init. */
extern PyTypeObject pynpk_GraphType, pynpk_PortType, pynpk_LLMType;
/* Module-level functions of the other files. */
PyObject *pynpk_load_tensor(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pynpk_save_tensor(PyObject *self, PyObject *args, PyObject *kw);

#endif
