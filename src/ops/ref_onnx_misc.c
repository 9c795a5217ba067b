// SPDX-License-Identifier: MIT
/* CPU reference kernels (issue 14): Det, MaxUnpool, Unique, NonMaxSuppression,
 * Einsum, the window functions, DFT, STFT, MelWeightMatrix, RoiAlign and
 * GridSample. Float arithmetic in double, rounded once to the output type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ref_onnx.h"

#define GF(t, i) npk_ref_onnx_get_f((t)->data, (t)->dtype, (i))
#define SF(t, i, v) npk_ref_onnx_set_f((t)->data, (t)->dtype, (i), (v))

/* ---- Det ----------------------------------------------------------------------------- */

void npk_ref_onnx_det(const npk_tensor *x, npk_tensor *y) {
    int64_t m = x->dims[x->rank - 1], nb = npk_tensor_numel(y);
    double *a = malloc(sizeof(double) * (size_t)(m * m + 1));
    if (!a) return;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = GF(x, b * m * m + i);
        double det = 1;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++)
                if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
            if (a[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t k = 0; k < m; k++) {
                    double t = a[c * m + k];
                    a[c * m + k] = a[p * m + k];
                    a[p * m + k] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (int64_t r = c + 1; r < m; r++) {
                double f = a[r * m + c] / a[c * m + c];
                for (int64_t k = c; k < m; k++) a[r * m + k] -= f * a[c * m + k];
            }
        }
        SF(y, b, det);
    }
    free(a);
}

/* ---- MaxUnpool ------------------------------------------------------------------------- */

int npk_ref_onnx_maxunpool(const npk_tensor *x, const npk_tensor *idx, const int64_t *idims, npk_tensor *y) {
    int64_t n = npk_tensor_numel(x), ni = 1;
    for (int d = 0; d < y->rank; d++) ni *= idims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t k = npk_ref_onnx_get_i(idx->data, idx->dtype, i);
        if (k < 0 || k >= ni) return npk_err(NPK_EINVAL, "index %lld out of range for an unpooled map of %lld elements", (long long)k, (long long)ni);
        /* the index is into the unpooled shape; a larger output_shape pads after it */
        int64_t off = 0, mul = 1, r = k;
        int inside = 1;
        for (int d = y->rank - 1; d >= 0; d--) {
            int64_t c = r % idims[d];
            r /= idims[d];
            if (c >= y->dims[d]) inside = 0;
            off += c * mul;
            mul *= y->dims[d];
        }
        if (inside) SF(y, off, GF(x, i));
    }
    return 0;
}

/* ---- Unique ---------------------------------------------------------------------------- */

typedef struct uctx {
    const npk_tensor *x;
    int64_t outer, len, inner; /* x viewed as [outer, len, inner]; slices along len */
} uctx;

static int slice_cmp(const uctx *u, int64_t a, int64_t b) {
    int isf = !npk_dtype_is_int(u->x->dtype);
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            int64_t ia = (o * u->len + a) * u->inner + i, ib = (o * u->len + b) * u->inner + i;
            if (isf) {
                double va = GF(u->x, ia), vb = GF(u->x, ib);
                if (va < vb) return -1;
                if (va > vb) return 1;
            } else {
                int64_t va = npk_ref_onnx_get_i(u->x->data, u->x->dtype, ia), vb = npk_ref_onnx_get_i(u->x->data, u->x->dtype, ib);
                if (u->x->dtype == NPK_DT_UINT64 ? (uint64_t)va < (uint64_t)vb : va < vb) return -1;
                if (va != vb) return 1;
            }
        }
    return 0;
}

/* stable merge sort of idx[0..n-1] by slice value */
static void msort(const uctx *u, int64_t *v, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t h = n / 2;
    msort(u, v, tmp, h);
    msort(u, v + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = slice_cmp(u, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, sizeof(int64_t) * (size_t)n);
}

int64_t npk_ref_onnx_unique(const npk_tensor *x, int64_t outer, int64_t len, int64_t inner, int sorted, int64_t *order,
                            int64_t *first, int64_t *inverse, int64_t *counts) {
    uctx u = {x, outer, len, inner};
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(2 * len + 1)), *grp = malloc(sizeof(int64_t) * (size_t)(len + 1));
    if (!idx || !grp) {
        free(idx);
        free(grp);
        return -NPK_ENOMEM;
    }
    for (int64_t i = 0; i < len; i++) idx[i] = i;
    msort(&u, idx, idx + len, len);
    /* groups in sorted order; the first of each group is its first occurrence (stable sort) */
    int64_t ng = 0;
    for (int64_t i = 0; i < len; i++) {
        if (!i || slice_cmp(&u, idx[i - 1], idx[i])) {
            first[ng] = idx[i];
            counts[ng] = 0;
            ng++;
        }
        grp[idx[i]] = ng - 1;
        counts[ng - 1]++;
    }
    /* rank of each group in the output order */
    int64_t *rank = idx + len;
    for (int64_t g = 0; g < ng; g++) rank[g] = g;
    if (!sorted) {
        /* order by first occurrence: a stable insertion of groups by first index */
        for (int64_t g = 0; g < ng; g++) order[g] = g;
        for (int64_t a = 1; a < ng; a++) {
            int64_t t = order[a], b = a;
            while (b > 0 && first[order[b - 1]] > first[t]) {
                order[b] = order[b - 1];
                b--;
            }
            order[b] = t;
        }
        for (int64_t g = 0; g < ng; g++) rank[order[g]] = g;
    } else {
        for (int64_t g = 0; g < ng; g++) order[g] = g;
    }
    for (int64_t i = 0; i < len; i++) inverse[i] = rank[grp[i]];
    free(idx);
    free(grp);
    return ng;
}

/* ---- NonMaxSuppression ------------------------------------------------------------------- */

static void box_of(const npk_tensor *b, int64_t i, int center, double *y1, double *x1, double *y2, double *x2) {
    double a = GF(b, i * 4), c = GF(b, i * 4 + 1), d = GF(b, i * 4 + 2), e = GF(b, i * 4 + 3);
    if (center) { /* [x_center, y_center, width, height] */
        *x1 = a - d / 2;
        *x2 = a + d / 2;
        *y1 = c - e / 2;
        *y2 = c + e / 2;
    } else { /* [y1, x1, y2, x2], any diagonal pair */
        *y1 = fmin(a, d);
        *y2 = fmax(a, d);
        *x1 = fmin(c, e);
        *x2 = fmax(c, e);
    }
}

static double iou(const npk_tensor *b, int64_t i, int64_t j, int center) {
    double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
    box_of(b, i, center, &ay1, &ax1, &ay2, &ax2);
    box_of(b, j, center, &by1, &bx1, &by2, &bx2);
    double aa = (ay2 - ay1) * (ax2 - ax1), ab = (by2 - by1) * (bx2 - bx1);
    if (aa <= 0 || ab <= 0) return 0;
    double ih = fmin(ay2, by2) - fmax(ay1, by1), iw = fmin(ax2, bx2) - fmax(ax1, bx1);
    if (ih <= 0 || iw <= 0) return 0;
    double inter = ih * iw;
    return inter / (aa + ab - inter);
}

int64_t npk_ref_onnx_nms(const npk_tensor *boxes, const npk_tensor *scores, int64_t max_out, double iou_th, int has_score_th,
                         double score_th, int center, int64_t *sel) {
    int64_t B = scores->dims[0], C = scores->dims[1], N = scores->dims[2], ns = 0;
    int64_t *cand = malloc(sizeof(int64_t) * (size_t)(N + 1)), *kept = malloc(sizeof(int64_t) * (size_t)(N + 1));
    if (!cand || !kept) {
        free(cand);
        free(kept);
        return -NPK_ENOMEM;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t so = (b * C + c) * N;
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < N; i++)
                if (!has_score_th || GF(scores, so + i) > score_th) cand[nc++] = i;
            /* by score, descending; equal scores keep the lower index first */
            for (int64_t a = 1; a < nc; a++) {
                int64_t t = cand[a], k = a;
                while (k > 0 && GF(scores, so + cand[k - 1]) < GF(scores, so + t)) {
                    cand[k] = cand[k - 1];
                    k--;
                }
                cand[k] = t;
            }
            for (int64_t a = 0; a < nc && nk < max_out; a++) {
                int ok = 1;
                for (int64_t k = 0; k < nk && ok; k++)
                    if (iou(boxes, b * N + cand[a], b * N + kept[k], center) > iou_th) ok = 0;
                if (!ok) continue;
                kept[nk++] = cand[a];
                sel[ns * 3] = b;
                sel[ns * 3 + 1] = c;
                sel[ns * 3 + 2] = cand[a];
                ns++;
            }
        }
    free(cand);
    free(kept);
    return ns;
}

/* ---- Einsum ------------------------------------------------------------------------------ */

#define EIN_MAXL 64 /* distinct labels, ellipsis dimensions included */

typedef struct ein {
    int n;                          /* inputs */
    int rank[NPK_OP_EIN_MAX];
    int lab[NPK_OP_EIN_MAX][NPK_MAX_RANK]; /* label id of each input axis */
    int out_rank, out_lab[NPK_MAX_RANK];
    int nl;
    int64_t size[EIN_MAXL];
} ein;

static int lab_id(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Parse one term into label ids (ellipsis: ids 52.. right-aligned, ell_rank of them). */
static int ein_term(const char *s, const char *e, int rank, int *labs, int *ell_rank, int for_out, int out_ell) {
    (void)out_ell;
    int k = 0, seen_ell = 0, nexp = 0;
    for (const char *p = s; p < e; p++)
        if (*p == '.') {
            if (p + 2 >= e || p[1] != '.' || p[2] != '.' || seen_ell) return npk_err(NPK_EINVAL, "malformed ellipsis in the equation");
            seen_ell = 1;
            p += 2;
        } else if (*p != ' ') {
            if (lab_id(*p) < 0) return npk_err(NPK_EINVAL, "equation label '%c' is not a letter", *p);
            nexp++;
        }
    int er = for_out ? out_ell : rank - nexp;
    if (!seen_ell && !for_out && nexp != rank)
        return npk_err(NPK_EINVAL, "equation term has %d labels for an input of rank %d", nexp, rank);
    if (seen_ell && er < 0) return npk_err(NPK_EINVAL, "equation term has more labels than its input's rank %d", rank);
    if (!seen_ell) er = 0;
    for (const char *p = s; p < e; p++) {
        if (*p == '.') {
            for (int q = 0; q < er; q++) {
                if (k >= NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "einsum rank above %d", NPK_MAX_RANK);
                labs[k++] = 52 + q; /* inputs: re-placed right-aligned by the caller */
            }
            p += 2;
        } else if (*p != ' ') {
            if (k >= NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "einsum rank above %d", NPK_MAX_RANK);
            labs[k++] = lab_id(*p);
        }
    }
    if (ell_rank) *ell_rank = seen_ell ? er : 0;
    return k;
}

static int ein_parse(const char *eq, int n, const npk_tensor *const *in, ein *E) {
    memset(E, 0, sizeof *E);
    if (n > NPK_OP_EIN_MAX) return npk_err(NPK_EUNSUPPORTED, "einsum of more than %d inputs", NPK_OP_EIN_MAX);
    E->n = n;
    const char *arrow = strstr(eq, "->"), *end = arrow ? arrow : eq + strlen(eq);
    /* the ellipsis rank: the largest of the inputs' */
    int ell = 0;
    const char *s = eq;
    for (int i = 0; i < n; i++) {
        const char *c = memchr(s, ',', (size_t)(end - s));
        const char *te = c ? c : end;
        if (i < n - 1 && !c) return npk_err(NPK_EINVAL, "equation '%s' has fewer terms than the %d inputs", eq, n);
        if (i == n - 1 && c) return npk_err(NPK_EINVAL, "equation '%s' has more terms than the %d inputs", eq, n);
        int er = 0, labs[NPK_MAX_RANK];
        int rc = ein_term(s, te, in[i]->rank, labs, &er, 0, 0);
        if (rc < 0) return rc;
        if (er > ell) ell = er;
        s = te + 1;
    }
    s = eq;
    int count[EIN_MAXL] = {0};
    for (int i = 0; i < n; i++) {
        const char *c = memchr(s, ',', (size_t)(end - s));
        const char *te = c ? c : end;
        int er;
        int rc = ein_term(s, te, in[i]->rank, E->lab[i], &er, 0, 0);
        if (rc < 0) return rc;
        /* re-place ellipsis ids right-aligned to the common ellipsis rank */
        for (int k = 0; k < rc; k++)
            if (E->lab[i][k] >= 52) E->lab[i][k] += ell - er;
        E->rank[i] = rc;
        for (int k = 0; k < rc; k++) {
            int l = E->lab[i][k];
            int64_t d = in[i]->dims[k];
            if (l >= 52) { /* ellipsis dims broadcast */
                if (E->size[l] <= 1) E->size[l] = d;
                else if (d != 1 && d != E->size[l]) return npk_err(NPK_EINVAL, "ellipsis dimensions do not broadcast");
            } else {
                if (count[l] && E->size[l] != d)
                    return npk_err(NPK_EINVAL, "label '%c' has sizes %lld and %lld", l < 26 ? 'a' + l : 'A' + l - 26,
                                   (long long)E->size[l], (long long)d);
                E->size[l] = d;
            }
            count[l]++;
        }
        s = te + 1;
    }
    if (arrow) {
        int rc = ein_term(arrow + 2, arrow + 2 + strlen(arrow + 2), 0, E->out_lab, NULL, 1, ell);
        if (rc < 0) return rc;
        E->out_rank = rc;
        for (int k = 0; k < rc; k++)
            if (E->out_lab[k] < 52 && !count[E->out_lab[k]]) return npk_err(NPK_EINVAL, "output label not in any input");
    } else { /* implicit: the ellipsis, then the labels used once, alphabetically */
        int k = 0;
        for (int q = 0; q < ell; q++) E->out_lab[k++] = 52 + q;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) {
                if (k >= NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "einsum rank above %d", NPK_MAX_RANK);
                E->out_lab[k++] = l;
            }
        E->out_rank = k;
    }
    E->nl = 52 + ell;
    return 0;
}

int npk_ref_onnx_einsum_shape(const char *eq, int n, const npk_tensor *const *in, int *rank, int64_t *dims) {
    ein E;
    int rc = ein_parse(eq, n, in, &E);
    if (rc) return rc;
    *rank = E.out_rank;
    for (int k = 0; k < E.out_rank; k++) dims[k] = E.size[E.out_lab[k]];
    return 0;
}

int npk_ref_onnx_einsum(const char *eq, int n, const npk_tensor *const *in, npk_tensor *y) {
    ein E;
    int rc = ein_parse(eq, n, in, &E);
    if (rc) return rc;
    /* the labels in use: output labels first, then the summed ones */
    int used[EIN_MAXL], nu = 0, is_out[EIN_MAXL] = {0}, mark[EIN_MAXL] = {0};
    for (int k = 0; k < E.out_rank; k++)
        if (!mark[E.out_lab[k]]) {
            mark[E.out_lab[k]] = 1;
            is_out[E.out_lab[k]] = 1;
            used[nu++] = E.out_lab[k];
        }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < E.rank[i]; k++)
            if (!mark[E.lab[i][k]]) {
                mark[E.lab[i][k]] = 1;
                used[nu++] = E.lab[i][k];
            }
    /* strides of each input and the output per label (0 for broadcast dims of size 1) */
    static _Thread_local int64_t st[NPK_OP_EIN_MAX + 1][EIN_MAXL];
    memset(st, 0, sizeof st);
    for (int i = 0; i < n; i++) {
        int64_t s = 1;
        for (int k = E.rank[i] - 1; k >= 0; k--) {
            if (in[i]->dims[k] != 1 || E.size[E.lab[i][k]] == 1) st[i][E.lab[i][k]] += s;
            s *= in[i]->dims[k];
        }
    }
    {
        int64_t s = 1;
        for (int k = E.out_rank - 1; k >= 0; k--) {
            st[n][E.out_lab[k]] += s;
            s *= E.size[E.out_lab[k]];
        }
    }
    int64_t total = 1;
    for (int u = 0; u < nu; u++) total *= E.size[used[u]];
    int isint = npk_dtype_is_int(y->dtype);
    int64_t ny = npk_tensor_numel(y);
    double *accf = calloc((size_t)(ny + 1), sizeof(double));
    int64_t *acci = calloc((size_t)(ny + 1), sizeof(int64_t));
    if (!accf || !acci) {
        free(accf);
        free(acci);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int64_t ctr[EIN_MAXL] = {0}, off[NPK_OP_EIN_MAX + 1] = {0};
    for (int64_t t = 0; t < total; t++) {
        double pf = 1;
        int64_t pi = 1;
        for (int i = 0; i < n; i++) {
            if (isint) pi *= npk_ref_onnx_get_i(in[i]->data, in[i]->dtype, off[i]);
            else pf *= GF(in[i], off[i]);
        }
        if (isint) acci[off[n]] += pi;
        else accf[off[n]] += pf;
        /* odometer over the used labels, the last fastest */
        for (int u = nu - 1; u >= 0; u--) {
            int l = used[u];
            for (int i = 0; i <= n; i++) off[i] += st[i][l];
            if (++ctr[l] < E.size[l]) break;
            for (int i = 0; i <= n; i++) off[i] -= st[i][l] * ctr[l];
            ctr[l] = 0;
        }
    }
    (void)is_out;
    for (int64_t i = 0; i < ny; i++) {
        if (isint) npk_ref_onnx_set_i(y->data, y->dtype, i, acci[i]);
        else SF(y, i, accf[i]);
    }
    free(accf);
    free(acci);
    return 0;
}

/* ---- windows, DFT, STFT, MelWeightMatrix ---------------------------------------------------- */

void npk_ref_onnx_window(int kind, int periodic, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    double N = periodic ? (double)n : (double)(n - 1), a0, a1, a2 = 0;
    switch (kind) {
    case 0: a0 = 0.5, a1 = 0.5; break;                  /* Hann */
    case 1: a0 = 25.0 / 46.0, a1 = 1 - 25.0 / 46.0; break; /* Hamming */
    default: a0 = 0.42, a1 = 0.5, a2 = 0.08; break;      /* Blackman */
    }
    for (int64_t i = 0; i < n; i++) {
        double x = N > 0 ? 2 * M_PI * (double)i / N : 0;
        SF(y, i, a0 - a1 * cos(x) + a2 * cos(2 * x));
    }
}

/* One DFT of len points: in (re, im) at stride; out[k] for k < nout. */
static void dft1(const double *re, const double *im, int64_t nin, int64_t len, int inverse, int64_t nout, double *ore,
                 double *oim) {
    double sg = inverse ? 1 : -1;
    for (int64_t k = 0; k < nout; k++) {
        double sr = 0, si = 0;
        for (int64_t t = 0; t < nin && t < len; t++) {
            double a = sg * 2 * M_PI * (double)((k * t) % len) / (double)len, c = cos(a), s = sin(a);
            sr += re[t] * c - im[t] * s;
            si += re[t] * s + im[t] * c;
        }
        ore[k] = inverse ? sr / (double)len : sr;
        oim[k] = inverse ? si / (double)len : si;
    }
}

/* The input (re, im: n + 1) and output (ore, oim: nout + 1) arrays of a run of one-dimensional DFTs. */
typedef struct dft_ws {
    double *re, *im, *ore, *oim;
} dft_ws;

static void dft_ws_free(dft_ws *w) { free(w->re), free(w->im), free(w->ore), free(w->oim); }

static int dft_ws_alloc(dft_ws *w, int64_t n, int64_t nout) {
    w->re = malloc(sizeof(double) * (size_t)(n + 1)), w->im = malloc(sizeof(double) * (size_t)(n + 1));
    w->ore = malloc(sizeof(double) * (size_t)(nout + 1)), w->oim = malloc(sizeof(double) * (size_t)(nout + 1));
    if (w->re && w->im && w->ore && w->oim) return 0;
    dft_ws_free(w);
    return -1;
}

/* dft1 of w's input, its nout bins stored in y as complex pairs: bin k at y element e0 + k * step. */
static void dft_to(dft_ws *w, int64_t n, int64_t len, int inverse, int64_t nout, npk_tensor *y, int64_t e0,
                   int64_t step) {
    dft1(w->re, w->im, n, len, inverse, nout, w->ore, w->oim);
    for (int64_t k = 0; k < nout; k++) {
        SF(y, e0 + k * step, w->ore[k]);
        SF(y, e0 + k * step + 1, w->oim[k]);
    }
}

int npk_ref_onnx_dft(const npk_tensor *x, int axis, int64_t len, int inverse, int onesided, npk_tensor *y) {
    int complex_in = x->dims[x->rank - 1] == 2;
    int64_t outer = 1, inner = 1, L = x->dims[axis];
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank - 1; d++) inner *= x->dims[d];
    int64_t nout = y->dims[axis];
    dft_ws w;
    if (dft_ws_alloc(&w, L, nout)) return npk_err(NPK_ENOMEM, "out of memory");
    (void)onesided;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t t = 0; t < L; t++) {
                int64_t e = ((o * L + t) * inner + i) * (complex_in ? 2 : 1);
                w.re[t] = GF(x, e);
                w.im[t] = complex_in ? GF(x, e + 1) : 0;
            }
            dft_to(&w, L, len, inverse, nout, y, (o * nout * inner + i) * 2, inner * 2);
        }
    dft_ws_free(&w);
    return 0;
}

int npk_ref_onnx_stft(const npk_tensor *sig, int64_t step, const npk_tensor *win, int64_t flen, npk_tensor *y) {
    int complex_in = sig->rank == 3 && sig->dims[2] == 2;
    int64_t B = sig->dims[0], L = sig->dims[1], F = y->dims[1], nb = y->dims[2];
    dft_ws w;
    if (dft_ws_alloc(&w, flen, nb)) return npk_err(NPK_ENOMEM, "out of memory");
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < F; f++) {
            for (int64_t t = 0; t < flen; t++) {
                int64_t e = (b * L + f * step + t) * (complex_in ? 2 : 1);
                double wt = win ? GF(win, t) : 1;
                w.re[t] = GF(sig, e) * wt;
                w.im[t] = complex_in ? GF(sig, e + 1) * wt : 0;
            }
            dft_to(&w, flen, flen, 0, nb, y, (b * F + f) * nb * 2, 2);
        }
    dft_ws_free(&w);
    return 0;
}

/* Triangular filters on the mel scale, as ONNX's definition computes them
 * (bin edges floor((dft_length + 1) * hz / sample_rate)). */
int npk_ref_onnx_melweight(int64_t nmel, int64_t dftlen, int64_t sr, double lo, double hi, npk_tensor *y) {
    int64_t nspec = dftlen / 2 + 1;
    int64_t *bins = malloc(sizeof(int64_t) * (size_t)(nmel + 3));
    if (!bins) return npk_err(NPK_ENOMEM, "out of memory");
    double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700), step = (hmel - lmel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
        bins[i] = (int64_t)floor((double)(dftlen + 1) * hz / (double)sr);
    }
    int64_t n = npk_tensor_numel(y);
    for (int64_t i = 0; i < n; i++) SF(y, i, 0);
    int rc = 0;
    for (int64_t m = 0; m < nmel && !rc; m++) {
        int64_t l = bins[m], c = bins[m + 1], h = bins[m + 2];
        if (l < 0 || h > nspec || c >= nspec) {
            rc = npk_err(NPK_EINVAL, "mel bin %lld falls outside the %lld spectrogram bins", (long long)m, (long long)nspec);
            break;
        }
        if (c == l) SF(y, c * nmel + m, 1);
        else
            for (int64_t j = l; j <= c; j++) SF(y, j * nmel + m, (double)(j - l) / (double)(c - l));
        if (h > c)
            for (int64_t j = c; j < h; j++) SF(y, j * nmel + m, (double)(h - j) / (double)(h - c));
    }
    free(bins);
    return rc;
}

/* ---- RoiAlign ---------------------------------------------------------------------------- */

int npk_ref_onnx_roialign(const npk_tensor *x, const npk_tensor *rois, const npk_tensor *bidx, int max_mode, int64_t oh,
                          int64_t ow, int64_t sampling, double scale, int half_pixel, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
    double off = half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = npk_ref_onnx_get_i(bidx->data, bidx->dtype, r);
        if (b < 0 || b >= N) return npk_err(NPK_EINVAL, "roi %lld: batch index %lld out of range", (long long)r, (long long)b);
        double sw = GF(rois, r * 4) * scale - off, sh = GF(rois, r * 4 + 1) * scale - off;
        double ew = GF(rois, r * 4 + 2) * scale - off, eh = GF(rois, r * 4 + 3) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half_pixel) {
            rw = fmax(rw, 1);
            rh = fmax(rh, 1);
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        int64_t gh = sampling > 0 ? sampling : (int64_t)ceil(rh / (double)oh);
        int64_t gw = sampling > 0 ? sampling : (int64_t)ceil(rw / (double)ow);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (b * C + c) * H * W;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = 0;
                    int first = 1;
                    for (int64_t iy = 0; iy < gh; iy++)
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double v = 0;
                            if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
                                if (yy <= 0) yy = 0;
                                if (xx <= 0) xx = 0;
                                int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                                if (yl >= H - 1) yh = yl = H - 1, yy = (double)yl;
                                else yh = yl + 1;
                                if (xl >= W - 1) xh = xl = W - 1, xx = (double)xl;
                                else xh = xl + 1;
                                double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
                                double v1 = hy * hx * GF(x, base + yl * W + xl), v2 = hy * lx * GF(x, base + yl * W + xh);
                                double v3 = ly * hx * GF(x, base + yh * W + xl), v4 = ly * lx * GF(x, base + yh * W + xh);
                                v = max_mode ? fmax(fmax(fmax(v1, v2), v3), v4) : v1 + v2 + v3 + v4;
                            }
                            if (max_mode) acc = first ? v : fmax(acc, v);
                            else acc += v;
                            first = 0;
                        }
                    SF(y, ((r * C + c) * oh + ph) * ow + pw, max_mode ? acc : acc / count);
                }
        }
    }
    return 0;
}

/* ---- MaxRoiPool ----------------------------------------------------------------------------- */

/* Caffe's ROI pooling, as ONNX Runtime computes it: roi corners rounded (half away
 * from zero) after scaling, bins of roi / pooled size in float32, an empty bin gives 0. */
int npk_ref_onnx_maxroipool(const npk_tensor *x, const npk_tensor *rois, int64_t ph_n, int64_t pw_n, double scale, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
    for (int64_t r = 0; r < R; r++) {
        int64_t b = (int64_t)GF(rois, r * 5);
        if (b < 0 || b >= N) return npk_err(NPK_EINVAL, "roi %lld: batch index %lld out of range", (long long)r, (long long)b);
        int64_t sw = (int64_t)roundf((float)(GF(rois, r * 5 + 1) * scale)), sh = (int64_t)roundf((float)(GF(rois, r * 5 + 2) * scale));
        int64_t ew = (int64_t)roundf((float)(GF(rois, r * 5 + 3) * scale)), eh = (int64_t)roundf((float)(GF(rois, r * 5 + 4) * scale));
        int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;
        float bh = (float)rh / (float)ph_n, bw = (float)rw / (float)pw_n;
        for (int64_t c = 0; c < C; c++)
            for (int64_t ph = 0; ph < ph_n; ph++)
                for (int64_t pw = 0; pw < pw_n; pw++) {
                    int64_t hs = (int64_t)floorf((float)ph * bh) + sh, he = (int64_t)ceilf((float)(ph + 1) * bh) + sh;
                    int64_t ws = (int64_t)floorf((float)pw * bw) + sw, we = (int64_t)ceilf((float)(pw + 1) * bw) + sw;
                    hs = hs < 0 ? 0 : hs > H ? H : hs;
                    he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws;
                    we = we < 0 ? 0 : we > W ? W : we;
                    double m = 0;
                    int any = 0;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++) {
                            double v = GF(x, ((b * C + c) * H + h) * W + w);
                            if (!any || v > m) m = v;
                            any = 1;
                        }
                    SF(y, ((r * C + c) * ph_n + ph) * pw_n + pw, m);
                }
    }
    return 0;
}

/* ---- GridSample --------------------------------------------------------------------------- */

static double reflect(double v, double tlo, double thi) {
    if (tlo == thi) return 0;
    double mn = tlo / 2, span = (thi - tlo) / 2;
    v = fabs(v - mn);
    double extra = fmod(v, span), flips = floor(v / span);
    return fmod(flips, 2) == 0 ? extra + mn : span - extra + mn;
}

/* a coordinate with the padding mode applied (border: clamped; reflection: reflected, then clamped) */
static double pad_coord(double v, int64_t size, int pad, int align) {
    if (pad == 1) return fmin(fmax(v, 0), (double)(size - 1));
    if (pad == 2) {
        v = align ? reflect(v, 0, 2.0 * (double)(size - 1)) : reflect(v, -1, 2.0 * (double)size - 1);
        return fmin(fmax(v, 0), (double)(size - 1));
    }
    return v;
}

static double pix(const npk_tensor *x, int64_t base, int64_t H, int64_t W, int64_t yy, int64_t xx) {
    if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
    return GF(x, base + yy * W + xx);
}

static void cubic_w(double t, double w[4]) {
    const double A = -0.75;
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    w[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
    w[3] = ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A;
}

void npk_ref_onnx_gridsample(const npk_tensor *x, const npk_tensor *grid, int mode, int pad, int align, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = grid->dims[1], OW = grid->dims[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                int64_t g = ((n * OH + i) * OW + j) * 2;
                double gx = GF(grid, g), gy = GF(grid, g + 1);
                double ux = align ? (gx + 1) / 2 * (double)(W - 1) : ((gx + 1) * (double)W - 1) / 2;
                double uy = align ? (gy + 1) / 2 * (double)(H - 1) : ((gy + 1) * (double)H - 1) / 2;
                for (int64_t c = 0; c < C; c++) {
                    int64_t base = (n * C + c) * H * W;
                    double v = 0;
                    if (mode == 2) { /* bicubic: padding per tap */
                        double fx = floor(ux), fy = floor(uy), wx[4], wy[4];
                        cubic_w(ux - fx, wx);
                        cubic_w(uy - fy, wy);
                        for (int a = 0; a < 4; a++)
                            for (int b = 0; b < 4; b++) {
                                double ty = fy - 1 + a, tx = fx - 1 + b;
                                if (pad) {
                                    ty = pad_coord(ty, H, pad, align);
                                    tx = pad_coord(tx, W, pad, align);
                                }
                                v += wy[a] * wx[b] * pix(x, base, H, W, (int64_t)ty, (int64_t)tx);
                            }
                    } else {
                        double px = pad_coord(ux, W, pad, align), py = pad_coord(uy, H, pad, align);
                        if (mode == 1) {
                            v = pix(x, base, H, W, (int64_t)nearbyint(py), (int64_t)nearbyint(px));
                        } else {
                            double x0 = floor(px), y0 = floor(py), lx = px - x0, ly = py - y0;
                            int64_t xi = (int64_t)x0, yi = (int64_t)y0;
                            v = (1 - ly) * (1 - lx) * pix(x, base, H, W, yi, xi) + (1 - ly) * lx * pix(x, base, H, W, yi, xi + 1) +
                                ly * (1 - lx) * pix(x, base, H, W, yi + 1, xi) + ly * lx * pix(x, base, H, W, yi + 1, xi + 1);
                        }
                    }
                    SF(y, ((n * C + c) * OH + i) * OW + j, v);
                }
            }
}
