// SPDX-License-Identifier: MIT
/* npukit._npukit.LLM: a llama2.c checkpoint and its tokenizer (include/npukit/llm.h),
 * generation with `npu llm`'s options on the CPU reference or the pccx NPU. */
#include "pynpk.h"

#include <stdlib.h>
#include <string.h>

#include "npukit/llm.h"
#include "npukit/report.h"
#include "npukit/strbuf.h"

typedef struct {
    PyObject_HEAD npk_llm_model *m;
    npk_llm_tokenizer *t;
} LLMObject;

static void llm_dealloc(LLMObject *self) {
    npk_llm_tokenizer_free(self->t);
    npk_llm_model_free(self->m);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* LLM(model, tokenizer): paths of the checkpoint and the tokenizer */
static int llm_init(LLMObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"model", "tokenizer", NULL};
    PyObject *mp = NULL, *tp = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&", kwl, PyUnicode_FSConverter, &mp, PyUnicode_FSConverter, &tp))
        return -1;
    if (self->m) {
        PyErr_SetString(PyExc_RuntimeError, "LLM already loaded");
        Py_DECREF(mp);
        Py_DECREF(tp);
        return -1;
    }
    int rc;
    const char *mps = PyBytes_AS_STRING(mp), *tps = PyBytes_AS_STRING(tp);
    Py_BEGIN_ALLOW_THREADS rc = npk_llm_model_load(mps, &self->m);
    if (!rc) rc = npk_llm_tokenizer_load(tps, self->m->cfg.vocab_size, &self->t);
    Py_END_ALLOW_THREADS Py_DECREF(mp);
    Py_DECREF(tp);
    if (rc) {
        pynpk_raise(rc == -NPK_EIO ? -NPK_EIO : rc, "cannot load the model");
        return -1;
    }
    return 0;
}

static int loaded(LLMObject *self) {
    if (self->m && self->t) return 1;
    PyErr_SetString(PyExc_RuntimeError, "LLM not loaded");
    return 0;
}

static PyObject *llm_config(LLMObject *self, PyObject *unused) {
    (void)unused;
    if (!loaded(self)) return NULL;
    const npk_llm_config *c = &self->m->cfg;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:O,s:i,s:i}", "dim", c->dim, "hidden_dim", c->hidden_dim,
                         "n_layers", c->n_layers, "n_heads", c->n_heads, "n_kv_heads", c->n_kv_heads, "vocab_size",
                         c->vocab_size, "seq_len", c->seq_len, "shared_classifier",
                         c->shared_classifier ? Py_True : Py_False, "head_size", c->head_size, "kv_dim", c->kv_dim);
}

static void emit_buf(const char *piece, void *user) { npk_strbuf_printf(user, "%s", piece); }

static int write_report(const void *r, FILE *f) { return npk_report_write_json(r, f); }

/* generate(prompt="", steps=200, temperature=0.0, topp=0.9, seed=1, device="cpu", port=None,
 *          dev_opts=None, group_size=8, trace=None, gemv_prefill=False)
 * -> (text, tokens, report JSON bytes) */
static PyObject *llm_generate(LLMObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"prompt", "steps", "temperature", "topp", "seed", "device", "port", "dev_opts",
                          "group_size", "trace", "gemv_prefill", NULL};
    const char *prompt = "", *device = "cpu", *port = NULL, *dev_opts = NULL, *trace = NULL;
    int steps = 200, group = NPK_LLM_PCCX_DEFAULT_GROUP, gemv_prefill = 0;
    double temperature = 0, topp = 0.9;
    unsigned long long seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|siddKszzizp", kwl, &prompt, &steps, &temperature, &topp, &seed,
                                     &device, &port, &dev_opts, &group, &trace, &gemv_prefill))
        return NULL;
    if (!loaded(self)) return NULL;
    if (steps < 1) return PyErr_Format(pynpk_InvalidArgument, "steps %d: at least 1", steps);
    if (temperature < 0) return PyErr_Format(pynpk_InvalidArgument, "temperature %g: must be >= 0", temperature);
    if (topp < 0 || topp > 1) return PyErr_Format(pynpk_InvalidArgument, "topp %g: must be in [0, 1]", topp);
    if (group < 0 || group > NPK_LLM_PCCX_MAX_GROUP)
        return PyErr_Format(pynpk_InvalidArgument, "group_size %d: must be in [0, %d]", group, NPK_LLM_PCCX_MAX_GROUP);
    int pccx = !strcmp(device, "pccx");
    if (!pccx && strcmp(device, "cpu"))
        return PyErr_Format(pynpk_InvalidArgument, "device must be pccx or cpu, not '%s' (no LLM decoder for it)", device);
    if (!pccx && (trace || port || dev_opts))
        return PyErr_Format(pynpk_InvalidArgument, "trace, port and device options need device 'pccx'");
    int n_steps = steps > self->m->cfg.seq_len ? self->m->cfg.seq_len : steps;
    int *toks = calloc((size_t)n_steps + 1, sizeof(int));
    npk_llm_decoder *d = NULL;
    npk_llm_sampler s;
    memset(&s, 0, sizeof s);
    npk_strbuf text = {0};
    npk_report *rep = NULL;
    PyObject *res = NULL;
    if (!toks) return PyErr_NoMemory();
    npk_llm_pccx_opts po = {.port = port, .dev_opts = dev_opts, .group_size = group, .trace_path = trace,
                            .gemm_prefill_off = gemv_prefill};
    int rc, ntok = 0;
    Py_BEGIN_ALLOW_THREADS rc = pccx ? npk_llm_decoder_pccx(self->m, &po, &d) : npk_llm_decoder_cpu(self->m, &d);
    if (!rc) rc = npk_llm_sampler_init(&s, self->m->cfg.vocab_size, (float)temperature, seed);
    if (!rc) rc = npk_llm_sampler_set_topp(&s, (float)topp);
    if (!rc) rc = npk_llm_generate(d, self->t, prompt, n_steps, &s, emit_buf, &text, toks);
    ntok = rc;
    if (rc >= 0) rc = npk_llm_report(d, ntok, self->m->name, &rep);
    if (rc >= 0) rc = npk_llm_decoder_finish(d);
    Py_END_ALLOW_THREADS if (rc < 0) {
        pynpk_raise(rc, "generation failed");
        goto out;
    }
    if (text.oom) {
        PyErr_NoMemory();
        goto out;
    }
    PyObject *tl = PyList_New(ntok);
    for (int i = 0; tl && i < ntok; i++) PyList_SET_ITEM(tl, i, PyLong_FromLong(toks[i]));
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    int wrc = mf ? write_report(rep, mf) : -NPK_ENOMEM;
    if (mf) fclose(mf);
    if (tl && !wrc)
        res = Py_BuildValue("(s#Ny#)", text.p ? text.p : "", (Py_ssize_t)text.n, tl, buf, (Py_ssize_t)len);
    else if (tl) {
        Py_DECREF(tl);
        pynpk_raise(wrc, "cannot write the report");
    }
    free(buf);
out:
    npk_report_free(rep);
    npk_llm_sampler_free(&s);
    npk_llm_decoder_free(d);
    free(text.p);
    free(toks);
    return res;
}

/* encode(text, bos=True, eos=False) -> token ids (the tokenizer's BPE with its scores) */
static PyObject *llm_encode(LLMObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"text", "bos", "eos", NULL};
    const char *text;
    int bos = 1, eos = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|pp", kwl, &text, &bos, &eos) || !loaded(self)) return NULL;
    size_t cap = strlen(text) + 3;
    int *tok = malloc(cap * sizeof(int)), n = 0;
    if (!tok) return PyErr_NoMemory();
    int rc = npk_llm_encode(self->t, text, bos, eos, tok, (int)cap, &n);
    if (rc) {
        free(tok);
        return pynpk_raise(rc, "cannot encode");
    }
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) PyList_SET_ITEM(l, i, PyLong_FromLong(tok[i]));
    free(tok);
    return l;
}

static PyMethodDef llm_methods[] = {
    {"config", (PyCFunction)llm_config, METH_NOARGS, "the checkpoint's hyper-parameters"},
    {"generate", (PyCFunction)(void (*)(void))llm_generate, METH_VARARGS | METH_KEYWORDS,
     "generate(prompt='', steps=200, temperature=0.0, topp=0.9, seed=1, device='cpu', port=None, dev_opts=None, "
     "group_size=8, trace=None, gemv_prefill=False) -> (text, tokens, report_json)"},
    {"encode", (PyCFunction)(void (*)(void))llm_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(text, bos=True, eos=False) -> token ids"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pynpk_LLMType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "npukit._npukit.LLM",
    .tp_basicsize = sizeof(LLMObject),
    .tp_dealloc = (destructor)llm_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LLM(model, tokenizer): a llama2.c checkpoint and tokenizer",
    .tp_methods = llm_methods,
    .tp_init = (initproc)llm_init,
    .tp_new = PyType_GenericNew,
};
