// SPDX-License-Identifier: MIT
/* Random one-operator ONNX models for the ONNX Runtime oracle (issue 14).
 *
 *   onnx_gen OUTDIR
 *
 * writes OUTDIR/<case>/model.onnx and test_data_set_0/input_K.pb for every
 * case below: each supported operator with several shapes, element types
 * and attributes. scripts/ort_run.js adds ONNX Runtime's outputs and
 * `npu onnx-test` compares npukit against them (tests/onnx_ort.cmakescript).
 *
 * A case is written in a small notation:
 *   inputs  "f:3,4;f:4"  one input per ';': type, optional range, ':' dims
 *           ("" or "-" for an omitted optional input, "=l:1,2" an int64
 *           initializer with those values, "=f:0.5" a float one)
 *   types   f float, d double, i int32, l int64, b bool, u uint8, s int8, w uint32, h float16
 *   ranges  (after the type) + positive 0.1..3, n magnitude 0.5..2 either sign,
 *           u -0.9..0.9, g 1.1..3, default -2..2 (integers: -5..5, + 1..5, n nonzero)
 *   attrs   "axis=i:1;perm=is:1,0;mode=s:linear;alpha=f:0.5;scales=fs:1,2"
 *   outputs "f" or "f,l": element type per output.
 *
 *   onnx_gen --planted OUTDIR
 *
 * writes two quantized Gemm groups (QuantizeLinear -> DequantizeLinear -> Gemm
 * with DequantizeLinear weights and int32 bias -> QuantizeLinear): qdq_gemm, which
 * every device runs, and qdq_gemm_dyn (its input reshaped by a shape given at run
 * time), which npukit leaves on the CPU without a device limit, the planted case of
 * `onnx-test --require-offload` (tests/qdq_offload.cmakescript).
 *
 *   onnx_gen --approx OUTDIR
 *
 * writes uint8 quantized groups that ONNX Runtime evaluates approximately (it
 * fuses them into its QLinearAdd / QLinearSoftmax kernels): qdq_add_u8
 * (DequantizeLinear x2 -> Add -> QuantizeLinear) and qdq_softmax_u8
 * (DequantizeLinear -> Softmax -> QuantizeLinear with scale 1/256). The exact
 * value is the graph as written (tests/onnx_ort.cmakescript).
 *
 *   onnx_gen --qdq OUTDIR
 *
 * writes quantized Conv / MatMul / Gemm groups in every arrangement that decides whether
 * ONNX Runtime fuses them (qdq_<op>_<spec>, see qdq_case): `npu run --qdq ort` must leave in
 * float exactly the nodes ONNX Runtime's optimised model keeps in float.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/onnx_build.h"
#include "ops/ref_onnx.h"
#include "npukit/graph.h"

static uint64_t rng = 0x1234567887654321ull;
static uint64_t next(void) {
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double unif(double lo, double hi) { return lo + (hi - lo) * (double)(next() >> 11) / 9007199254740992.0; }

static int dtype_of(char c) {
    switch (c) {
    case 'f': return NPK_DT_FLOAT;
    case 'd': return NPK_DT_DOUBLE;
    case 'i': return NPK_DT_INT32;
    case 'l': return NPK_DT_INT64;
    case 'b': return NPK_DT_BOOL;
    case 'u': return NPK_DT_UINT8;
    case 's': return NPK_DT_INT8;
    case 'w': return NPK_DT_UINT32;
    case 'h': return NPK_DT_FLOAT16;
    default: return 0;
    }
}

static int parse_list(const char *s, double *v, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        double x = strtod(s, &end);
        if (end == s) break; /* "@" (the shape) or the end: not a value */
        v[n++] = x;
        s = *end == ',' ? end + 1 : end;
        if (!*end) break;
    }
    return n;
}

static void fill(npk_tensor *t, char range) {
    int64_t n = npk_tensor_numel(t);
    int fl = t->dtype == NPK_DT_FLOAT || t->dtype == NPK_DT_DOUBLE || t->dtype == NPK_DT_FLOAT16;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (t->dtype == NPK_DT_BOOL) v = (double)(next() & 1);
        else if (fl) {
            switch (range) {
            case '+': v = unif(0.1, 3); break;
            case 'n': v = unif(0.5, 2) * ((next() & 1) ? 1 : -1); break;
            case 'u': v = unif(-0.9, 0.9); break;
            case 'g': v = unif(1.1, 3); break;
            default: v = unif(-2, 2); break;
            }
        } else {
            int64_t r = (int64_t)(next() % 11) - 5;
            if (range == '+') r = (int64_t)(next() % 5) + 1;
            if (range == 'n' && r == 0) r = 3;
            if (t->dtype == NPK_DT_UINT8 || t->dtype == NPK_DT_UINT32) r = (int64_t)(next() % (range == 'h' ? 250 : 8));
            if (t->dtype == NPK_DT_INT8 && range == 'h') r = (int64_t)(next() % 250) - 125;
            v = (double)r;
        }
        npk_ref_onnx_set_f(t->data, t->dtype, i, v);
    }
}

static int mkdirs(const char *p) {
    char b[4096];
    snprintf(b, sizeof b, "%s", p);
    for (char *s = b + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(b, 0755) && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(b, 0755) && errno != EEXIST ? -1 : 0;
}

static const char *outdir;
static int n_cases, n_fail;

/* Write OUTDIR/name/model.onnx and free the model. */
static void save_model(ob_model *m, const char *name) {
    char path[4200];
    uint8_t *buf;
    size_t len;
    snprintf(path, sizeof path, "%s/%s/model.onnx", outdir, name);
    FILE *f = NULL;
    if (ob_save(m, &buf, &len) || !(f = fopen(path, "wb")) || fwrite(buf, 1, len, f) != len) n_fail++;
    if (f) fclose(f);
    free(buf);
    ob_free(m);
    n_cases++;
}

/* One model: node op (default domain) at opset, inputs/attrs/outputs in the notation above. */
static void gen(const char *name, int opset, const char *op, const char *ins, const char *attrs, const char *outs) {
    char dir[4096], path[4200], inlist[1024] = "", outlist[256] = "";
    snprintf(dir, sizeof dir, "%s/%s/test_data_set_0", outdir, name);
    if (mkdirs(dir)) {
        fprintf(stderr, "onnx_gen: cannot create %s\n", dir);
        n_fail++;
        return;
    }
    ob_model *m = ob_new(opset);
    int k = 0, nin = 0;
    char spec[2048];
    snprintf(spec, sizeof spec, "%s", ins);
    char *save = NULL;
    for (char *tok = strtok_r(spec, ";", &save); tok; tok = strtok_r(NULL, ";", &save), k++) {
        char vn[32];
        snprintf(vn, sizeof vn, "x%d", k);
        size_t at = strlen(inlist);
        if (!strcmp(tok, "-")) { /* omitted optional input */
            snprintf(inlist + at, sizeof inlist - at, "%s", k ? "," : "");
            continue;
        }
        snprintf(inlist + at, sizeof inlist - at, "%s%s", k ? "," : "", vn);
        if (tok[0] == '=') { /* initializer */
            int dt = dtype_of(tok[1]);
            double v[64], dv[NPK_MAX_RANK];
            int n = parse_list(tok + 3, v, 64);
            npk_tensor t;
            int64_t d[NPK_MAX_RANK] = {n};
            int scalar = tok[2] == '.'; /* "=l.5": a scalar */
            int r = scalar ? 0 : 1;
            const char *at = strchr(tok, '@'); /* "=l:1,0,2,0@2,2": values, then the shape */
            if (at) {
                r = parse_list(at + 1, dv, NPK_MAX_RANK);
                for (int i = 0; i < r; i++) d[i] = (int64_t)dv[i];
            }
            npk_tensor_alloc(&t, vn, dt, r, d);
            if (npk_tensor_numel(&t) != n) {
                fprintf(stderr, "onnx_gen: initializer '%s' has %d values for %lld elements\n", tok, n,
                        (long long)npk_tensor_numel(&t));
                exit(1);
            }
            for (int i = 0; i < n; i++) npk_ref_onnx_set_f(t.data, dt, i, v[i]);
            ob_init(m, vn, dt, t.rank, t.dims, t.data);
            npk_tensor_free(&t);
            continue;
        }
        int dt = dtype_of(tok[0]);
        char range = tok[1] != ':' ? tok[1] : 0;
        const char *dims = strchr(tok, ':') + 1;
        double dv[NPK_MAX_RANK];
        int64_t d[NPK_MAX_RANK];
        int r = *dims ? parse_list(dims, dv, NPK_MAX_RANK) : 0;
        for (int i = 0; i < r; i++) d[i] = (int64_t)dv[i];
        npk_tensor t;
        npk_tensor_alloc(&t, vn, dt, r, d);
        fill(&t, range);
        ob_input(m, vn, dt, r, d);
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, nin++);
        if (npk_tensor_save_pb_file(&t, path)) n_fail++;
        npk_tensor_free(&t);
    }
    for (int i = 0, no = 0; outs[i]; i++) {
        if (outs[i] == ',') continue;
        char on[16];
        snprintf(on, sizeof on, "y%d", no++);
        size_t at = strlen(outlist);
        snprintf(outlist + at, sizeof outlist - at, "%s%s", at ? "," : "", on);
        ob_output(m, on, dtype_of(outs[i]), -1, NULL);
    }
    Onnx__NodeProto *nd = ob_node(m, "", op, "n", inlist, outlist);
    snprintf(spec, sizeof spec, "%s", attrs);
    for (char *tok = strtok_r(spec, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '='), *colon = eq ? strchr(eq, ':') : NULL;
        if (!eq || !colon) continue;
        *eq = 0;
        *colon = 0;
        const char *ty = eq + 1, *val = colon + 1;
        double v[32];
        if (!strcmp(ty, "i")) ob_attr_i(m, nd, tok, (int64_t)strtod(val, NULL));
        else if (!strcmp(ty, "f")) ob_attr_f(m, nd, tok, (float)strtod(val, NULL));
        else if (!strcmp(ty, "s")) ob_attr_s(m, nd, tok, val);
        else if (!strcmp(ty, "is")) {
            int64_t iv[32];
            int n = parse_list(val, v, 32);
            for (int i = 0; i < n; i++) iv[i] = (int64_t)v[i];
            ob_attr_ints(m, nd, tok, (size_t)n, iv);
        } else if (!strcmp(ty, "fs")) {
            int n = parse_list(val, v, 32);
            Onnx__AttributeProto *a = ob_attr(m, nd, tok, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
            a->n_floats = (size_t)n;
            a->floats = ob_zalloc(m, sizeof(float) * (size_t)(n + 1));
            for (int i = 0; i < n; i++) a->floats[i] = (float)v[i];
        }
    }
    save_model(m, name);
}

static void unary_float(void) {
    static const struct {
        const char *op, *in, *attrs;
    } u[] = {
        {"Abs", "f:3,4", ""}, {"Neg", "f:3,4", ""}, {"Reciprocal", "fn:3,4", ""}, {"Floor", "f:2,5", ""},
        {"Ceil", "f:2,5", ""}, {"Round", "f:2,5", ""}, {"Sign", "f:7", ""}, {"Log", "f+:3,4", ""}, {"Sin", "f:3,4", ""},
        {"Cos", "f:3,4", ""}, {"Tan", "fu:3,4", ""}, {"Asin", "fu:3,4", ""}, {"Acos", "fu:3,4", ""},
        {"Atan", "f:3,4", ""}, {"Sinh", "f:3,4", ""}, {"Cosh", "f:3,4", ""}, {"Asinh", "f:3,4", ""},
        {"Acosh", "fg:3,4", ""}, {"Atanh", "fu:3,4", ""}, {"Softplus", "f:3,4", ""}, {"Softsign", "f:3,4", ""},
        {"Elu", "f:3,4", "alpha=f:0.7"}, {"Selu", "f:3,4", ""}, {"Celu", "f:3,4", "alpha=f:1.5"},
        {"HardSigmoid", "f:3,4", "alpha=f:0.3;beta=f:0.4"},
        {"ThresholdedRelu", "f:3,4", "alpha=f:0.5"}, {"Shrink", "f:3,4", "lambd=f:0.8;bias=f:0.2"},
        {"Relu", "f:3,4", ""}, {"Sigmoid", "f:3,4", ""}, {"Tanh", "f:3,4", ""}, {"Exp", "f:3,4", ""},
        {"Sqrt", "f+:3,4", ""}, {"Erf", "f:3,4", ""}, {"LeakyRelu", "f:3,4", "alpha=f:0.2"},
        {"Abs", "i:9", ""}, {"Neg", "l:9", ""}, {"Sign", "i:9", ""}, {"Abs", "s:9", ""},
        {"Not", "b:3,3", ""}, {"Identity", "d:2,3", ""},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        char nm[64], o[2] = {u[i].op[0] == 'N' && u[i].op[1] == 'o' ? 'b' : u[i].in[0], 0};
        snprintf(nm, sizeof nm, "unary_%s_%zu", u[i].op, i);
        gen(nm, 13, u[i].op, u[i].in, u[i].attrs, o);
    }
}

static void binary(void) {
    static const char *const shapes[][2] = {{"3,4", "3,4"}, {"3,4", "4"}, {"2,1,4", "3,1"}, {"1", "2,3"}};
    static const char *const arith[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mean", "Sum"};
    static const char *const cmp[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    char nm[64], in[64];
    for (int s = 0; s < 4; s++) {
        for (int k = 0; k < 8; k++) {
            snprintf(nm, sizeof nm, "bin_%s_f_%d", arith[k], s);
            snprintf(in, sizeof in, "f%s:%s;f%s:%s", "", shapes[s][0], k == 3 ? "n" : "", shapes[s][1]);
            gen(nm, 13, arith[k], in, "", "f");
            if (k == 2 || k == 3 || k == 0) {
                snprintf(nm, sizeof nm, "bin_%s_i_%d", arith[k], s);
                snprintf(in, sizeof in, "i:%s;i%s:%s", shapes[s][0], k == 3 ? "n" : "", shapes[s][1]);
                gen(nm, 13, arith[k], in, "", "i");
            }
        }
        for (int k = 0; k < 5; k++) {
            snprintf(nm, sizeof nm, "cmp_%s_f_%d", cmp[k], s);
            snprintf(in, sizeof in, "f:%s;f:%s", shapes[s][0], shapes[s][1]);
            gen(nm, 13, cmp[k], in, "", "b");
            snprintf(nm, sizeof nm, "cmp_%s_i_%d", cmp[k], s);
            snprintf(in, sizeof in, "i:%s;i:%s", shapes[s][0], shapes[s][1]);
            gen(nm, 13, cmp[k], in, "", "b");
        }
        static const char *const logic[] = {"And", "Or", "Xor"};
        for (int k = 0; k < 3; k++) {
            snprintf(nm, sizeof nm, "logic_%s_%d", logic[k], s);
            snprintf(in, sizeof in, "b:%s;b:%s", shapes[s][0], shapes[s][1]);
            gen(nm, 13, logic[k], in, "", "b");
        }
        snprintf(nm, sizeof nm, "pow_f_%d", s);
        snprintf(in, sizeof in, "f+:%s;f:%s", shapes[s][0], shapes[s][1]);
        gen(nm, 15, "Pow", in, "", "f");
        snprintf(nm, sizeof nm, "mod_i_%d", s);
        snprintf(in, sizeof in, "i:%s;in:%s", shapes[s][0], shapes[s][1]);
        gen(nm, 13, "Mod", in, "", "i");
        snprintf(nm, sizeof nm, "fmod_i_%d", s);
        gen(nm, 13, "Mod", in, "fmod=i:1", "i");
        snprintf(nm, sizeof nm, "fmod_f_%d", s);
        snprintf(in, sizeof in, "f:%s;fn:%s", shapes[s][0], shapes[s][1]);
        gen(nm, 13, "Mod", in, "fmod=i:1", "f");
        snprintf(nm, sizeof nm, "where_%d", s);
        snprintf(in, sizeof in, "b:%s;f:%s;f:%s", shapes[s][1], shapes[s][0], shapes[s][1]);
        gen(nm, 16, "Where", in, "", "f");
    }
    gen("max3", 13, "Max", "f:2,3;f:3;f:1,1", "", "f");
    gen("min3_i", 13, "Min", "i:2,3;i:3;i:1,1", "", "i");
    gen("sum3", 13, "Sum", "f:2,3;f:3;f:2,1", "", "f");
    gen("mean3", 13, "Mean", "f:2,3;f:3;f:2,1", "", "f");
    gen("bitshift_l", 11, "BitShift", "u:6;u:6", "direction=s:LEFT", "u");
    gen("bitshift_r", 11, "BitShift", "w:6;w:6", "direction=s:RIGHT", "w");
    gen("prelu", 16, "PRelu", "f:2,3,4;f:3,1", "", "f");
    gen("hardswish", 14, "HardSwish", "f:3,4", "", "f");
    gen("relu_i", 14, "Relu", "i:9", "", "i");
}

static void casts_and_reductions(void) {
    gen("cast_f_i", 13, "Cast", "f:3,4", "to=i:6", "i");
    gen("cast_i_f", 13, "Cast", "i:3,4", "to=i:1", "f");
    gen("cast_f_b", 13, "Cast", "f:3,4", "to=i:9", "b");
    gen("cast_b_f", 13, "Cast", "b:3,4", "to=i:1", "f");
    gen("cast_l_s", 13, "Cast", "l:3,4", "to=i:3", "s");
    gen("cast_f_d", 13, "Cast", "f:3,4", "to=i:11", "d");
    gen("castlike", 15, "CastLike", "f:3,4;i:1", "", "i");
    static const char *const red[] = {"ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                      "ReduceLogSumExp", "ReduceSumSquare", "ReduceMean"};
    char nm[64];
    for (int k = 0; k < 9; k++)
        for (int v = 0; v < 3; v++) {
            snprintf(nm, sizeof nm, "%s_%d", red[k], v);
            gen(nm, 13, red[k], k == 5 ? "f+:2,3,4" : "f:2,3,4",
                v == 0 ? "axes=is:1;keepdims=i:1" : v == 1 ? "axes=is:0,2;keepdims=i:0" : "keepdims=i:1", "f");
        }
    gen("ReduceSum_0", 13, "ReduceSum", "f:2,3,4;=l:1", "", "f");
    gen("ReduceSum_1", 13, "ReduceSum", "f:2,3,4;=l:-1,0", "keepdims=i:0", "f");
    gen("ReduceSum_i", 13, "ReduceSum", "i:2,3,4;=l:2", "", "i");
    gen("ReduceSum_all", 13, "ReduceSum", "f:2,3,4", "", "f");
    gen("ReduceMax_i", 13, "ReduceMax", "i:2,3,4", "axes=is:1", "i");
    gen("ReduceProd_i", 13, "ReduceProd", "i:2,3", "axes=is:1", "i");
    for (int v = 0; v < 4; v++) {
        char a[96];
        snprintf(a, sizeof a, "axis=i:%d;keepdims=i:%d;select_last_index=i:%d", v % 2 ? -1 : 1, v / 2, v % 2);
        snprintf(nm, sizeof nm, "argmax_%d", v);
        gen(nm, 13, "ArgMax", "i:3,4,5", a, "l");
        snprintf(nm, sizeof nm, "argmin_%d", v);
        gen(nm, 13, "ArgMin", "f:3,4,5", a, "l");
        snprintf(nm, sizeof nm, "cumsum_%d", v);
        snprintf(a, sizeof a, "exclusive=i:%d;reverse=i:%d", v % 2, v / 2);
        gen(nm, 14, "CumSum", v % 2 ? "f:3,4;=l.1" : "i:3,4;=i.0", a, v % 2 ? "f" : "i");
    }
    gen("softmax_13", 13, "Softmax", "f:2,3,4", "axis=i:1", "f");
    gen("softmax_11", 11, "Softmax", "f:2,3,4", "axis=i:1", "f");
    gen("logsoftmax", 13, "LogSoftmax", "f:2,3,4", "", "f");
    gen("hardmax", 13, "Hardmax", "f:2,3,4", "axis=i:1", "f");
    gen("lpnorm1", 1, "LpNormalization", "f:2,3,4", "p=i:1;axis=i:1", "f");
    gen("lpnorm2", 1, "LpNormalization", "f:2,3,4", "", "f");
}

static void tensors(void) {
    gen("slice_0", 13, "Slice", "f:5,6;=l:1,-1;=l:4,-5;=l:0,1;=l:2,-2", "", "f");
    gen("slice_1", 13, "Slice", "f:5,6,3;=l:-1;=l:-100;=l:1;=l:-1", "", "f");
    gen("slice_2", 13, "Slice", "i:5,6;=l:0;=l:3", "", "i");
    gen("slice_9", 9, "Slice", "f:5,6", "starts=is:1,0;ends=is:3,100;axes=is:0,1", "f");
    gen("pad_const", 13, "Pad", "f:3,4;=l:1,2,0,1;=f.1.5", "", "f");
    gen("pad_reflect", 13, "Pad", "f:3,4;=l:2,1,1,2", "mode=s:reflect", "f");
    gen("pad_edge", 13, "Pad", "f:3,4;=l:1,3,2,0", "mode=s:edge", "f");
    gen("pad_crop", 13, "Pad", "f:3,4;=l:-1,1,0,-2", "", "f");
    gen("pad_2", 2, "Pad", "f:3,4", "pads=is:1,0,0,2;value=f:-1", "f");
    gen("tile", 13, "Tile", "f:2,3;=l:2,3", "", "f");
    gen("expand", 13, "Expand", "f:3,1;=l:2,3,4", "", "f");
    gen("split_eq", 13, "Split", "f:6,4", "axis=i:0", "f,f");
    gen("split_in", 13, "Split", "f:6,5;=l:2,3", "axis=i:1", "f,f");
    gen("split_11", 11, "Split", "f:6,5", "axis=i:0;split=is:1,5", "f,f");
    gen("concat", 13, "Concat", "f:2,3;f:2,2;f:2,1", "axis=i:1", "f");
    gen("transpose", 13, "Transpose", "f:2,3,4", "perm=is:2,0,1", "f");
    gen("transpose_def", 13, "Transpose", "i:2,3,4", "", "i");
    gen("gather", 13, "Gather", "f:5,4;=l:0,-1,3", "axis=i:0", "f");
    gen("gather_1", 13, "Gather", "f:5,4;=i:3,1", "axis=i:1", "f");
    gen("gather_elements", 13, "GatherElements", "f:3,4;=l:0,2,1,-1,3,0,1,2@2,4", "axis=i:1", "f");
    gen("trilu_u", 14, "Trilu", "f:4,5", "", "f");
    gen("trilu_l", 14, "Trilu", "f:2,4,5;=l.1", "upper=i:0", "f");
    gen("trilu_k", 14, "Trilu", "i:4,5;=l.-1", "", "i");
    gen("topk", 11, "TopK", "f:3,6;=l:3", "", "f,l");
    gen("topk_small", 11, "TopK", "f:3,6;=l:2", "axis=i:0;largest=i:0", "f,l");
    gen("onehot", 11, "OneHot", "l:4;=l.5;=f:0,3", "", "f");
    gen("onehot_ax", 11, "OneHot", "l:2,3;=f.4;=i:-1,1", "axis=i:0", "i");
    gen("d2s_dcr", 13, "DepthToSpace", "f:1,8,2,3", "blocksize=i:2", "f");
    gen("d2s_crd", 13, "DepthToSpace", "f:1,8,2,3", "blocksize=i:2;mode=s:CRD", "f");
    gen("s2d", 13, "SpaceToDepth", "f:1,2,4,6", "blocksize=i:2", "f");
    gen("flatten", 13, "Flatten", "f:2,3,4", "axis=i:2", "f");
    gen("reshape", 14, "Reshape", "f:2,3,4;=l:0,-1,2", "", "f");
    gen("squeeze", 13, "Squeeze", "f:2,1,4,1;=l:1,-1", "", "f");
    gen("unsqueeze", 13, "Unsqueeze", "f:2,4;=l:0,3", "", "f");
    gen("shape", 15, "Shape", "f:2,3,4", "start=i:1", "l");
    gen("size", 13, "Size", "f:2,3,4", "", "l");
    gen("constofshape", 9, "ConstantOfShape", "=l:2,3", "", "f");
    gen("range", 11, "Range", "=f.0.5;=f.4;=f.0.75", "", "f");
    gen("range_i", 11, "Range", "=l.10;=l.1;=l.-3", "", "l");
    gen("eyelike", 9, "EyeLike", "f:3,4", "k=i:1", "f");
    gen("clip13", 13, "Clip", "f:3,4;=f.-0.5;=f.0.7", "", "f");
    gen("clip_i", 13, "Clip", "i:3,4;-;=i.2", "", "i");
    gen("nonzero", 13, "NonZero", "i:3,4", "", "l");
    gen("compress", 11, "Compress", "f:3,4;=b:1,0,1", "axis=i:0", "f");
    gen("scatter_elements", 16, "ScatterElements", "f:3,4;=l:1,0,2,0@1,4;f:1,4", "axis=i:0", "f");
    gen("scatter_elements_add", 16, "ScatterElements", "f:3,4;=l:1,3,1,0@2,2;f:2,2", "axis=i:1;reduction=s:add", "f");
    gen("scatter_nd", 16, "ScatterND", "f:4,3;=l:2,0@2,1;f:2,3", "", "f");
    gen("gather_nd", 13, "GatherND", "f:3,4;=l:1,2,0,3@2,2", "", "f");
    gen("gather_nd_b", 13, "GatherND", "f:2,3,4;=l:1,2,0,0@2,2", "batch_dims=i:1", "f");
}

static void nn(void) {
    gen("conv", 11, "Conv", "f:1,2,6,7;f:3,2,3,3;f:3", "pads=is:1,1,1,1", "f");
    gen("conv_s2g", 11, "Conv", "f:2,4,7,6;f:4,2,3,2", "strides=is:2,1;group=i:2;dilations=is:1,2", "f");
    gen("conv1d", 11, "Conv", "f:1,3,9;f:2,3,3", "auto_pad=s:SAME_UPPER", "f");
    gen("convt", 11, "ConvTranspose", "f:1,2,4,5;f:2,3,3,3;f:3", "", "f");
    gen("convt_s2", 11, "ConvTranspose", "f:1,2,3,4;f:2,2,3,3", "strides=is:2,2;pads=is:1,0,1,1;output_padding=is:1,0", "f");
    gen("convt_g", 11, "ConvTranspose", "f:1,4,3,3;f:4,1,2,2", "group=i:2;strides=is:2,2", "f");
    gen("convt_os", 11, "ConvTranspose", "f:1,1,3,3;f:1,2,3,3", "strides=is:3,2;output_shape=is:10,8", "f");
    gen("maxpool", 12, "MaxPool", "f:1,2,6,7", "kernel_shape=is:3,2;strides=is:2,2;pads=is:1,0,1,1", "f");
    gen("maxpool_ceil", 12, "MaxPool", "f:1,1,7,7", "kernel_shape=is:2,2;strides=is:2,2;ceil_mode=i:1", "f");
    gen("avgpool", 11, "AveragePool", "f:1,2,6,7", "kernel_shape=is:3,3;pads=is:1,1,1,1", "f");
    gen("avgpool_inc", 11, "AveragePool", "f:1,2,6,7", "kernel_shape=is:3,3;pads=is:1,1,1,1;count_include_pad=i:1", "f");
    gen("gap", 1, "GlobalAveragePool", "f:2,3,4,5", "", "f");
    gen("gmp", 1, "GlobalMaxPool", "f:2,3,4,5", "", "f");
    gen("lppool", 11, "LpPool", "f:1,2,5,5", "kernel_shape=is:2,2;p=i:3", "f");
    gen("glppool", 2, "GlobalLpPool", "f:1,2,5,5", "", "f");
    gen("gemm", 13, "Gemm", "f:3,4;f:5,4;f:5", "transB=i:1;alpha=f:0.5;beta=f:2", "f");
    gen("gemm_ta", 13, "Gemm", "f:4,3;f:4,5;f:3,1", "transA=i:1", "f");
    gen("matmul", 13, "MatMul", "f:2,3,4;f:4,5", "", "f");
    gen("matmul_b", 13, "MatMul", "f:2,1,3,4;f:3,4,2", "", "f");
    gen("matmul_v", 13, "MatMul", "f:4;f:2,4,3", "", "f");
    gen("instnorm", 6, "InstanceNormalization", "f:2,3,4,5;f:3;f:3", "epsilon=f:0.01", "f");
    gen("lrn", 13, "LRN", "f:2,5,3,3", "size=i:3;alpha=f:0.001;beta=f:0.6;bias=f:2", "f");
    gen("bn", 15, "BatchNormalization", "f:2,3,4,5;f:3;f:3;f:3;f+:3", "epsilon=f:0.001", "f");
    gen("layernorm", 17, "LayerNormalization", "f:2,3,4;f:4;f:4", "", "f");
    gen("layernorm_ax", 17, "LayerNormalization", "f:2,3,4;f:3,4", "axis=i:1", "f");
    gen("mvn", 13, "MeanVarianceNormalization", "f:2,3,4,5", "", "f");
    gen("rs_nearest", 13, "Resize", "f:1,2,3,4;-;=f:1,1,2,1.5", "", "f");
    gen("rs_nearest_ceil", 13, "Resize", "f:1,2,3,4;-;=f:1,1,1.7,2.5", "nearest_mode=s:ceil;coordinate_transformation_mode=s:asymmetric", "f");
    gen("rs_nearest_pf", 13, "Resize", "f:1,1,5,6;-;-;=l:1,1,3,4", "nearest_mode=s:round_prefer_ceil", "f");
    gen("rs_linear", 13, "Resize", "f:1,2,3,4;-;=f:1,1,2,2.5", "mode=s:linear", "f");
    gen("rs_linear_ac", 13, "Resize", "f:1,2,3,4;-;=f:1,1,2,2", "mode=s:linear;coordinate_transformation_mode=s:align_corners", "f");
    gen("rs_linear_pt", 13, "Resize", "f:1,1,4,4;-;-;=l:1,1,3,2", "mode=s:linear;coordinate_transformation_mode=s:pytorch_half_pixel", "f");
    gen("rs_linear_down", 13, "Resize", "f:1,1,6,8;-;=f:1,1,0.5,0.6", "mode=s:linear", "f");
    gen("rs_cubic", 13, "Resize", "f:1,1,4,5;-;=f:1,1,2,1.5", "mode=s:cubic", "f");
    gen("rs_cubic_ex", 13, "Resize", "f:1,1,4,5;-;=f:1,1,0.8,1.6", "mode=s:cubic;exclude_outside=i:1;cubic_coeff_a=f:-0.5", "f");
    gen("rs_crop", 13, "Resize", "f:1,1,5,5;=f:0,0,0.2,0.3,1,1,0.8,0.9;=f:1,1,1.2,0.8", "mode=s:linear;coordinate_transformation_mode=s:tf_crop_and_resize;extrapolation_value=f:7", "f");
    gen("rs_10", 10, "Resize", "f:1,1,2,3;=f:1,1,2,3", "", "f");
    gen("lstm_bi", 14, "LSTM", "f:3,2,4;f:2,12,4;f:2,12,3;f:2,24;=i:3,2;f:2,2,3;f:2,2,3;f:2,9",
        "hidden_size=i:3;direction=s:bidirectional", "f,f,f");
    gen("lstm_clip", 14, "LSTM", "f:3,2,4;f:1,12,4;f:1,12,3", "hidden_size=i:3;clip=f:0.5;input_forget=i:1", "f,f,f");
    gen("gru_rev_lbr", 14, "GRU", "f:3,2,4;f:1,9,4;f:1,9,3;f:1,18", "hidden_size=i:3;direction=s:reverse;linear_before_reset=i:1", "f,f");
    gen("gru_bi_nolens", 14, "GRU", "f:3,2,4;f:2,9,4;f:2,9,3;f:2,18", "hidden_size=i:3;direction=s:bidirectional", "f,f");
    gen("gru_rev", 14, "GRU", "f:3,2,4;f:1,9,4;f:1,9,3;f:1,18", "hidden_size=i:3;direction=s:reverse", "f,f");
    gen("gru_rev_nob", 14, "GRU", "f:3,2,4;f:1,9,4;f:1,9,3", "hidden_size=i:3;direction=s:reverse", "f,f");
    gen("gru_fwd_lens", 14, "GRU", "f:3,2,4;f:1,9,4;f:1,9,3;f:1,18;=i:2,3", "hidden_size=i:3", "f,f");
    gen("gru_bi", 14, "GRU", "f:3,2,4;f:2,9,4;f:2,9,3;f:2,18;=i:2,3", "hidden_size=i:3;direction=s:bidirectional", "f,f");
    gen("rnn_relu", 14, "RNN", "f:2,3,4;f:1,3,4;f:1,3,3;f:1,6", "hidden_size=i:3;direction=s:reverse", "f,f");
}

/* issue 14 point 2: float16 arithmetic, detection, signal and other operators */
static void misc(void) {
    gen("f16_add", 14, "Add", "h:3,4;h:4", "", "h");
    gen("f16_mul", 14, "Mul", "h:2,3;h:2,3", "", "h");
    gen("f16_relu", 14, "Relu", "h:3,5", "", "h");
    gen("f16_softmax", 13, "Softmax", "h:2,7", "", "h");
    gen("f16_matmul", 13, "MatMul", "h:3,8;h:8,4", "", "h");
    gen("f16_cast", 13, "Cast", "f:3,4", "to=i:10", "h");
    gen("f16_cast_back", 13, "Cast", "h:3,4", "to=i:1", "f");
    gen("f16_reducesum", 13, "ReduceSum", "h:3,4;=l:1", "", "h");
    gen("det_2", 11, "Det", "f:3,3", "", "f");
    gen("det_batch", 11, "Det", "f:2,4,4", "", "f");
    gen("det_5", 11, "Det", "f:5,5", "", "f");
    gen("maxunpool", 11, "MaxUnpool", "f:1,1,2,2;=l:0,3,9,14@1,1,2,2", "kernel_shape=is:2,2;strides=is:2,2", "f");
    gen("maxunpool_os", 11, "MaxUnpool", "f:1,2,2,2;=l:5,7,13,15,16,19,28,30@1,2,2,2;=l:1,2,4,4", "kernel_shape=is:2,2;strides=is:2,2", "f");
    gen("unique_s8", 11, "Unique", "s:12", "", "s,l,l,l");
    gen("unique_unsorted", 11, "Unique", "l:10", "sorted=i:0", "l,l,l,l");
    gen("unique_axis", 11, "Unique", "=f:1,2,1,2,3,4,1,2@4,2", "axis=i:0", "f,l,l,l");
    gen("unique_axis1", 11, "Unique", "=l:1,1,2,3,3,4,1,1,2@3,3", "axis=i:1;sorted=i:1", "l,l,l,l");
    gen("nms", 11, "NonMaxSuppression", "f+:1,6,4;fu:1,2,6;=l.3;=f.0.3;=f.-0.5", "", "l");
    gen("nms_center", 11, "NonMaxSuppression", "f+:2,5,4;f:2,1,5;=l.2;=f.0.5", "center_point_box=i:1", "l");
    gen("einsum_mm", 12, "Einsum", "f:3,4;f:4,5", "equation=s:ij,jk->ik", "f");
    gen("einsum_batch", 12, "Einsum", "f:2,3,4;f:2,4,5", "equation=s:bij,bjk->bik", "f");
    gen("einsum_trace", 12, "Einsum", "f:4,4", "equation=s:ii", "f");
    gen("einsum_diag", 12, "Einsum", "f:2,4,4", "equation=s:...ii->...i", "f");
    gen("einsum_outer", 12, "Einsum", "f:3;f:4", "equation=s:i,j->ij", "f");
    gen("einsum_sum", 12, "Einsum", "f:3,4,5", "equation=s:ijk->j", "f");
    gen("einsum_implicit", 12, "Einsum", "f:3,4;f:4,2", "equation=s:ab,bc", "f");
    gen("einsum_int", 12, "Einsum", "i:3,4;i:4", "equation=s:ij,j->i", "i");
    gen("einsum_3", 12, "Einsum", "f:2,3;f:3,4;f:4", "equation=s:ij,jk,k->i", "f");
    gen("hann", 17, "HannWindow", "=l.10", "", "f");
    gen("hann_sym", 17, "HannWindow", "=l.9", "periodic=i:0", "f");
    gen("hamming", 17, "HammingWindow", "=l.8", "", "f");
    gen("blackman", 17, "BlackmanWindow", "=l.12", "periodic=i:0", "f");
    gen("blackman_d", 17, "BlackmanWindow", "=l.7", "output_datatype=i:11", "d");
    gen("dft_real", 17, "DFT", "f:2,8,1", "", "f");
    gen("dft_len", 17, "DFT", "f:2,6,1;=l.9", "", "f");
    gen("dft_complex_inv", 17, "DFT", "f:1,8,2", "inverse=i:1", "f");
    gen("dft_onesided", 17, "DFT", "f:3,10,1", "onesided=i:1", "f");
    gen("dft_axis2", 17, "DFT", "f:2,3,5,2", "axis=i:2", "f");
    gen("stft", 17, "STFT", "f:1,32,1;=l.4;f+:8", "", "f");
    gen("stft_len", 17, "STFT", "f:2,20,1;=l.3;-;=l.6", "onesided=i:0", "f");
    gen("melweight", 17, "MelWeightMatrix", "=l.8;=l.64;=l.8000;=f.0;=f.4000", "", "f");
    gen("melweight_2", 17, "MelWeightMatrix", "=l.5;=l.32;=l.16000;=f.100;=f.6000", "", "f");
    gen("roialign", 16, "RoiAlign", "f:1,2,6,7;=f:0,0,3,3,1,1,4,5,0.5,1.5,6,4@3,4;=l:0,0,0", "output_height=i:2;output_width=i:3", "f");
    gen("roialign_sr", 16, "RoiAlign", "f:2,1,5,5;=f:0,0,4,4,1,0.5,3,3.5@2,4;=l:1,0",
        "output_height=i:3;output_width=i:3;sampling_ratio=i:2;spatial_scale=f:0.5", "f");
    gen("roialign_10", 10, "RoiAlign", "f:1,1,6,6;=f:1,1,4,4@1,4;=l:0", "output_height=i:2;output_width=i:2", "f");
    gen("roialign_max", 16, "RoiAlign", "f:1,2,6,6;=f:0,0,5,5@1,4;=l:0", "mode=s:max;output_height=i:2;output_width=i:2", "f");
    gen("maxroipool", 1, "MaxRoiPool", "f:2,2,6,7;=f:0,0,0,3,3,1,1,2,6,5,0,0.4,0.6,4.5,2.5@3,5", "pooled_shape=is:2,3", "f");
    gen("maxroipool_s", 1, "MaxRoiPool", "f:1,1,8,8;=f:0,1,1,12,14,0,4,0,9,7@2,5", "pooled_shape=is:3,2;spatial_scale=f:0.5", "f");
    gen("gridsample", 16, "GridSample", "f:1,2,4,5;fu:1,3,4,2", "", "f");
    gen("gridsample_out", 16, "GridSample", "f:1,1,4,4;f:1,3,3,2", "", "f");
    gen("gridsample_align", 16, "GridSample", "f:2,1,3,4;f:2,2,3,2", "align_corners=i:1", "f");
    gen("gridsample_nearest", 16, "GridSample", "f:1,2,4,5;fu:1,3,4,2", "mode=s:nearest", "f");
    gen("gridsample_border", 16, "GridSample", "f:1,1,4,5;f:1,3,4,2", "padding_mode=s:border", "f");
    gen("gridsample_reflect", 16, "GridSample", "f:1,1,4,5;f:1,3,4,2", "padding_mode=s:reflection", "f");
    gen("gridsample_reflect_ac", 16, "GridSample", "f:1,1,4,5;f:1,3,4,2", "padding_mode=s:reflection;align_corners=i:1", "f");
    gen("gridsample_cubic", 16, "GridSample", "f:1,1,5,5;fu:1,3,3,2", "mode=s:bicubic", "f");
    gen("gridsample_cubic_border", 16, "GridSample", "f:1,1,5,5;f:1,3,3,2", "mode=s:bicubic;padding_mode=s:border", "f");
}

static void quant(void) {
    gen("quant_u8", 13, "QuantizeLinear", "f:3,4;=f.0.05;=u.128", "", "u");
    gen("quant_s8_axis", 13, "QuantizeLinear", "f:3,4;=f:0.02,0.05,0.1;=s:0,3,-2", "axis=i:0", "s");
    gen("dequant_u8", 13, "DequantizeLinear", "uh:3,4;=f.0.05;=u.128", "", "f");
    gen("dequant_s8", 13, "DequantizeLinear", "sh:3,4;=f:0.02,0.05,0.1,0.2;=s:0,3,-2,1", "axis=i:1", "f");
    gen("dynquant", 11, "DynamicQuantizeLinear", "f:3,4", "", "u,f,u");
    gen("matmulinteger", 10, "MatMulInteger", "uh:3,4;uh:4,5;=u.3;=u.7", "", "i");
    gen("matmulinteger_s", 10, "MatMulInteger", "sh:2,3,4;sh:4,5", "", "i");
    gen("qlinearmatmul_u", 10, "QLinearMatMul", "uh:3,4;=f.0.05;=u.120;uh:4,5;=f.0.04;=u.130;=f.0.3;=u.125", "", "u");
    gen("qlinearmatmul_s", 10, "QLinearMatMul", "sh:3,4;=f.0.05;=s.-3;sh:4,5;=f.0.04;=s.2;=f.0.2;=s.1", "", "s");
    gen("convinteger", 10, "ConvInteger", "uh:1,2,5,5;uh:3,2,3,3;=u.100;=u.90", "pads=is:1,1,1,1", "i");
    gen("qlinearconv", 10, "QLinearConv", "uh:1,2,5,5;=f.0.05;=u.120;sh:3,2,3,3;=f:0.02,0.03,0.04;=s:0,0,0;=f.0.5;=u.128;=i:5,-7,100",
        "pads=is:1,1,1,1", "u");
}

/* x [M, K] float -> QuantizeLinear -> DequantizeLinear -> Gemm (transB = 1, per-channel int8
 * weights [N, K], int32 bias with scale x_scale * w_scale) -> QuantizeLinear. dyn: the rows of x
 * are first gathered at the indices NonZero finds in RandomUniform(1..2) > 0.5 (all M rows; a
 * random operator is never folded), so the Gemm's shapes are known only when the model runs. */
static void qdq_gemm(const char *name, int dyn) {
    enum { GM = 6, GK = 20, GN = 7 };
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s/test_data_set_0", outdir, name);
    if (mkdirs(dir)) {
        n_fail++;
        return;
    }
    ob_model *m = ob_new(13);
    int64_t dx[2] = {GM, GK}, dw[2] = {GN, GK}, dn[1] = {GN}, dm[1] = {GM}, zero = 0;
    float xs = 0.02f, ys = 0.05f, ws[GN], bs[GN];
    int8_t xz = 3, yz = -2, wq[GN * GK];
    int32_t bq[GN];
    for (int i = 0; i < GN; i++) {
        ws[i] = 0.003f * (float)(i + 2);
        bs[i] = xs * ws[i];
        bq[i] = (int32_t)(next() % 2001) - 1000;
    }
    for (int i = 0; i < GN * GK; i++) wq[i] = (int8_t)((int)(next() % 255) - 127);
    ob_input(m, "x", NPK_DT_FLOAT, 2, dx);
    ob_output(m, "y", NPK_DT_INT8, 2, (int64_t[2]){GM, GN});
    ob_init(m, "xs", NPK_DT_FLOAT, 0, NULL, &xs);
    ob_init(m, "xz", NPK_DT_INT8, 0, NULL, &xz);
    ob_init(m, "ys", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "yz", NPK_DT_INT8, 0, NULL, &yz);
    ob_init(m, "wq", NPK_DT_INT8, 2, dw, wq);
    ob_init(m, "ws", NPK_DT_FLOAT, 1, dn, ws);
    ob_init(m, "bq", NPK_DT_INT32, 1, dn, bq);
    ob_init(m, "bs", NPK_DT_FLOAT, 1, dn, bs);
    if (dyn) {
        float half = 0.5f;
        Onnx__NodeProto *r = ob_node(m, "", "RandomUniform", "random", "", "r");
        ob_attr_ints(m, r, "shape", 1, dm);
        ob_attr_f(m, r, "low", 1.0f);
        ob_attr_f(m, r, "high", 2.0f);
        ob_init(m, "half", NPK_DT_FLOAT, 0, NULL, &half);
        ob_node(m, "", "Greater", "greater", "r,half", "keep");
        ob_init(m, "ax0", NPK_DT_INT64, 1, (int64_t[1]){1}, &zero);
        ob_node(m, "", "NonZero", "nonzero", "keep", "nz");
        ob_node(m, "", "Squeeze", "squeeze", "nz,ax0", "rows");
        ob_node(m, "", "Gather", "gather", "x,rows", "xr");
    }
    ob_node(m, "", "QuantizeLinear", "q_x", dyn ? "xr,xs,xz" : "x,xs,xz", "xq");
    ob_node(m, "", "DequantizeLinear", "dq_x", "xq,xs,xz", "xf");
    ob_attr_i(m, ob_node(m, "", "DequantizeLinear", "dq_w", "wq,ws", "wf"), "axis", 0);
    ob_attr_i(m, ob_node(m, "", "DequantizeLinear", "dq_b", "bq,bs", "bf"), "axis", 0);
    ob_attr_i(m, ob_node(m, "", "Gemm", dyn ? "gemm_dyn" : "gemm", "xf,wf,bf", "yf"), "transB", 1);
    ob_node(m, "", "QuantizeLinear", "q_y", "yf,ys,yz", "y");
    npk_tensor t;
    npk_tensor_alloc(&t, "x", NPK_DT_FLOAT, 2, dx);
    fill(&t, 0);
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    if (npk_tensor_save_pb_file(&t, path)) n_fail++;
    npk_tensor_free(&t);
    save_model(m, name);
}

/* A uint8 input x_k of shape dims for a model, written as test data. */
static void u8_input(ob_model *m, const char *dir, int k, int rank, const int64_t *dims) {
    char vn[16], path[4200];
    snprintf(vn, sizeof vn, "x%d", k);
    npk_tensor t;
    npk_tensor_alloc(&t, vn, NPK_DT_UINT8, rank, dims);
    fill(&t, 'h');
    ob_input(m, vn, NPK_DT_UINT8, rank, dims);
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
    if (npk_tensor_save_pb_file(&t, path)) n_fail++;
    npk_tensor_free(&t);
}

/* Scales chosen so that exact .5 ties occur (Add: (i + j) * 0.1 / 0.2), where an
 * approximate kernel rounds differently from the graph as written. */
static void qdq_approx(const char *name, int softmax) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s/test_data_set_0", outdir, name);
    if (mkdirs(dir)) {
        n_fail++;
        return;
    }
    ob_model *m = ob_new(13);
    int64_t d[2] = {64, softmax ? 8 : 256};
    float s0 = softmax ? 0.25f : 0.1f, s1 = 0.1f, ys = softmax ? 1.0f / 256.0f : 0.2f;
    uint8_t z0 = 120, z1 = 130, yz = softmax ? 0 : 125;
    u8_input(m, dir, 0, 2, d);
    ob_init(m, "s0", NPK_DT_FLOAT, 0, NULL, &s0);
    ob_init(m, "z0", NPK_DT_UINT8, 0, NULL, &z0);
    ob_init(m, "ys", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "yz", NPK_DT_UINT8, 0, NULL, &yz);
    ob_node(m, "", "DequantizeLinear", "dq0", "x0,s0,z0", "f0");
    if (softmax) {
        ob_attr_i(m, ob_node(m, "", "Softmax", "softmax", "f0", "yf"), "axis", -1);
    } else {
        u8_input(m, dir, 1, 2, d);
        ob_init(m, "s1", NPK_DT_FLOAT, 0, NULL, &s1);
        ob_init(m, "z1", NPK_DT_UINT8, 0, NULL, &z1);
        ob_node(m, "", "DequantizeLinear", "dq1", "x1,s1,z1", "f1");
        ob_node(m, "", "Add", "add", "f0,f1", "yf");
    }
    ob_node(m, "", "QuantizeLinear", "q_y", "yf,ys,yz", "y");
    ob_output(m, "y", NPK_DT_UINT8, 2, d);
    save_model(m, name);
}

/* One quantized group around op (Conv, MatMul or Gemm) for ONNX Runtime's fusion choice
 * (onnx_gen --qdq). spec, one letter per position:
 *   [0] input:  f float x -> QuantizeLinear -> DequantizeLinear; i integer graph input -> DQ
 *   [1] input type: s int8, u uint8
 *   [2] x's DequantizeLinear: 1 only the op, 2 shared with an Add (a second graph output)
 *   [3] output: q the QuantizeLinear output is a graph output; d Q -> DQ -> graph output;
 *       s Q -> DQ shared by a Relu and a Sigmoid (two graph outputs); f float (no Q)
 *   [4] output type: s int8, u uint8
 *   [5] optional: z the weights' DequantizeLinear has no zero point input
 * gemm_attrs: "transA,alpha,beta" for Gemm (transB = 1 always). Weights are int8 per output
 * channel, the bias an int32 DequantizeLinear with scale x_scale * w_scale (times alpha / beta
 * for a Gemm, so that the group is one integer product). */
static void qdq_case(const char *name, const char *op, const char *spec, int trans_a, float alpha, float beta) {
    enum { CM = 6, CK = 12, CN = 5 };
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s/test_data_set_0", outdir, name);
    if (mkdirs(dir)) {
        n_fail++;
        return;
    }
    int conv = !strcmp(op, "Conv"), gemm = !strcmp(op, "Gemm");
    int xt = spec[1] == 'u' ? NPK_DT_UINT8 : NPK_DT_INT8, yt = spec[4] == 'u' ? NPK_DT_UINT8 : NPK_DT_INT8;
    ob_model *m = ob_new(13);
    int64_t dx[4], dw[4], dn[1] = {CN};
    int rx, rw;
    if (conv) {
        rx = 4, rw = 4;
        memcpy(dx, (int64_t[4]){1, 3, 5, 5}, sizeof dx);
        memcpy(dw, (int64_t[4]){CN, 3, 3, 3}, sizeof dw);
    } else if (gemm) {
        rx = 2, rw = 2;
        memcpy(dx, trans_a ? (int64_t[4]){CK, CM} : (int64_t[4]){CM, CK}, sizeof dx);
        memcpy(dw, (int64_t[4]){CN, CK}, sizeof dw);
    } else {
        rx = 3, rw = 2;
        memcpy(dx, (int64_t[4]){2, CM, CK}, sizeof dx);
        memcpy(dw, (int64_t[4]){CK, CN}, sizeof dw);
    }
    float xs = 0.03f, ys = 0.07f, ws[CN], bs[CN];
    uint8_t xzu = 121, yzu = 118;
    int8_t xzs = 3, yzs = -2, wq[CN * CK * 3];
    int32_t bq[CN];
    int64_t nw = 1;
    for (int i = 0; i < rw; i++) nw *= dw[i];
    for (int i = 0; i < CN; i++) {
        ws[i] = 0.004f * (float)(i + 2);
        bs[i] = gemm ? alpha * xs * ws[i] / beta : xs * ws[i];
        bq[i] = (int32_t)(next() % 2001) - 1000;
    }
    for (int64_t i = 0; i < nw; i++) wq[i] = (int8_t)((int)(next() % 255) - 127);
    npk_tensor t;
    if (spec[0] == 'f') {
        ob_input(m, "x", NPK_DT_FLOAT, rx, dx);
        npk_tensor_alloc(&t, "x", NPK_DT_FLOAT, rx, dx);
        fill(&t, 0);
        ob_node(m, "", "QuantizeLinear", "q_x", "x,xs,xz", "xq");
    } else {
        ob_input(m, "xq", xt, rx, dx);
        npk_tensor_alloc(&t, "xq", xt, rx, dx);
        fill(&t, 'h');
    }
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    if (npk_tensor_save_pb_file(&t, path)) n_fail++;
    npk_tensor_free(&t);
    ob_init(m, "xs", NPK_DT_FLOAT, 0, NULL, &xs);
    ob_init(m, "xz", xt, 0, NULL, xt == NPK_DT_UINT8 ? (void *)&xzu : (void *)&xzs);
    ob_init(m, "wq", NPK_DT_INT8, rw, dw, wq);
    ob_init(m, "ws", NPK_DT_FLOAT, 1, dn, ws);
    ob_init(m, "bq", NPK_DT_INT32, 1, dn, bq);
    ob_init(m, "bs", NPK_DT_FLOAT, 1, dn, bs);
    ob_node(m, "", "DequantizeLinear", "dq_x", "xq,xs,xz", "xf");
    ob_init(m, "wz", NPK_DT_INT8, 1, dn, (int8_t[CN]){0});
    ob_init(m, "bz", NPK_DT_INT32, 1, dn, (int32_t[CN]){0});
    ob_attr_i(m, ob_node(m, "", "DequantizeLinear", "dq_w", spec[5] == 'z' ? "wq,ws" : "wq,ws,wz", "wf"), "axis", conv || gemm ? 0 : 1);
    Onnx__NodeProto *nd;
    if (conv) {
        ob_attr_i(m, ob_node(m, "", "DequantizeLinear", "dq_b", "bq,bs", "bf"), "axis", 0);
        nd = ob_node(m, "", "Conv", name, "xf,wf,bf", "yf");
        ob_attr_ints(m, nd, "pads", 4, (int64_t[4]){1, 1, 1, 1});
    } else if (gemm) {
        ob_attr_i(m, ob_node(m, "", "DequantizeLinear", "dq_b", "bq,bs", "bf"), "axis", 0);
        nd = ob_node(m, "", "Gemm", name, "xf,wf,bf", "yf");
        ob_attr_i(m, nd, "transB", 1);
        if (trans_a) ob_attr_i(m, nd, "transA", 1);
        ob_attr_f(m, nd, "alpha", alpha); /* written even when 1, as exporters do */
        ob_attr_f(m, nd, "beta", beta);
    } else
        nd = ob_node(m, "", "MatMul", name, "xf,wf", "yf");
    if (spec[2] == '2') {
        ob_node(m, "", "Add", "residual", "xf,xf", "r");
        ob_output(m, "r", NPK_DT_FLOAT, -1, NULL);
    }
    if (spec[3] == 'f') {
        ob_output(m, "yf", NPK_DT_FLOAT, -1, NULL);
        save_model(m, name);
        return;
    }
    ob_init(m, "ys", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "yz", yt, 0, NULL, yt == NPK_DT_UINT8 ? (void *)&yzu : (void *)&yzs);
    ob_node(m, "", "QuantizeLinear", "q_y", "yf,ys,yz", "y");
    if (spec[3] == 'q') ob_output(m, "y", yt, -1, NULL);
    else {
        ob_node(m, "", "DequantizeLinear", "dq_y", "y,ys,yz", "yd");
        if (spec[3] == 'd') ob_output(m, "yd", NPK_DT_FLOAT, -1, NULL);
        else {
            ob_node(m, "", "Relu", "relu", "yd", "y1");
            ob_node(m, "", "Sigmoid", "sigmoid", "yd", "y2");
            ob_output(m, "y1", NPK_DT_FLOAT, -1, NULL);
            ob_output(m, "y2", NPK_DT_FLOAT, -1, NULL);
        }
    }
    save_model(m, name);
}

/* ONNX Runtime's choice of which groups become one integer operator (--qdq=ort) on every
 * combination that decides it: int8 or uint8 activations, a Q -> DQ pair that is or is not
 * rewritten to uint8 (shared DequantizeLinear, QuantizeLinear with two consumers, graph
 * outputs), integer graph inputs, and float outputs. */
static void qdq_choice(void) {
    static const char *const ops[] = {"Conv", "MatMul", "Gemm"};
    static const char *const specs[] = {"fs1ds", "fs1ss", "fs2ds", "fs1qs", "fs1du", "fu1du", "fu2du", "fu1qu",
                                        "is1ds", "is1qs", "iu1qu", "iu1ds", "fu1duz", "fs1fs", "fu1fs", "is1fs", "iu2fs", "fu1fsz"};
    char name[64];
    for (size_t o = 0; o < 3; o++)
        for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
            snprintf(name, sizeof name, "qdq_%s_%s", ops[o], specs[k]);
            qdq_case(name, ops[o], specs[k], 0, 1.0f, 1.0f);
        }
    /* Gemm's attributes (ONNX Runtime's QGemm takes transA and alpha; beta must be 1 with a bias) */
    static const char *const gspecs[] = {"fu1du", "fu1fs", "fs1ds", "is1qs"};
    for (size_t k = 0; k < sizeof gspecs / sizeof gspecs[0]; k++) {
        snprintf(name, sizeof name, "qdq_Gemm_%s_transa", gspecs[k]);
        qdq_case(name, "Gemm", gspecs[k], 1, 1.0f, 1.0f);
        snprintf(name, sizeof name, "qdq_Gemm_%s_alpha", gspecs[k]);
        qdq_case(name, "Gemm", gspecs[k], 1, 0.75f, 1.0f);
        snprintf(name, sizeof name, "qdq_Gemm_%s_beta", gspecs[k]);
        qdq_case(name, "Gemm", gspecs[k], 0, 0.5f, 2.0f);
    }
}

int main(int argc, char **argv) {
    int planted = argc == 3 && !strcmp(argv[1], "--planted"), approx = argc == 3 && !strcmp(argv[1], "--approx");
    int qdq = argc == 3 && !strcmp(argv[1], "--qdq");
    if (argc != 2 && !planted && !approx && !qdq) {
        fprintf(stderr, "usage: onnx_gen [--planted|--approx|--qdq] OUTDIR\n");
        return 2;
    }
    outdir = argv[planted || approx || qdq ? 2 : 1];
    if (planted || approx || qdq) {
        if (mkdirs(outdir)) return 1;
        if (qdq) qdq_choice();
        else if (planted) {
            qdq_gemm("qdq_gemm", 0);
            qdq_gemm("qdq_gemm_dyn", 1);
        } else {
            qdq_approx("qdq_add_u8", 0);
            qdq_approx("qdq_softmax_u8", 1);
        }
        printf("onnx_gen: %d models in %s%s\n", n_cases, outdir, n_fail ? " (with write errors)" : "");
        return n_fail ? 1 : 0;
    }
    if (mkdirs(outdir)) {
        fprintf(stderr, "onnx_gen: cannot create %s\n", outdir);
        return 1;
    }
    unary_float();
    binary();
    casts_and_reductions();
    tensors();
    nn();
    quant();
    misc();
    printf("onnx_gen: %d models in %s%s\n", n_cases, outdir, n_fail ? " (with write errors)" : "");
    return n_fail ? 1 : 0;
}
