// SPDX-License-Identifier: MIT
/* The base layer (src/base): error messages, number formats, tensor helpers.
 * Expectations are hand-derived from the format definitions (IEEE binary16,
 * bfloat16 = the top half of binary32, OCP FP8 E4M3), not from the code. */
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "npukit/error.h"
#include "npukit/numfmt.h"
#include "npukit/range.h"
#include "npukit/tensor.h"

static float f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_error(void) {
    CHECK_EQ(npk_err(NPK_EINVAL, "bad %d", 7), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "bad 7");
    CHECK_EQ(npk_err_prefix(-NPK_EDEVICE, "descriptor %d", 2), -NPK_EDEVICE);
    CHECK_STR(npk_errmsg(), "descriptor 2: bad 7");
    CHECK_STR(npk_status_name(-NPK_ETIMEDOUT), "ETIMEDOUT");
    CHECK_STR(npk_status_name(99), "EUNKNOWN");
}

static void test_fp16(void) {
    CHECK_EQ(npk_fp16_from_f64(1.0), 0x3c00);
    CHECK_EQ(npk_fp16_from_f64(-2.0), 0xc000);
    CHECK_EQ(npk_fp16_from_f64(65504.0), 0x7bff);             /* largest finite */
    CHECK_EQ(npk_fp16_from_f64(65519.99), 0x7bff);            /* below the midpoint */
    CHECK_EQ(npk_fp16_from_f64(65520.0), 0x7c00);             /* the midpoint rounds to even: inf */
    CHECK_EQ(npk_fp16_from_f64(ldexp(1, -24)), 0x0001);       /* smallest subnormal */
    CHECK_EQ(npk_fp16_from_f64(ldexp(1, -25)), 0x0000);       /* half of it: tie to even 0 */
    CHECK_EQ(npk_fp16_from_f64(1.0 + ldexp(1, -11)), 0x3c00); /* tie between 0x3c00 and 0x3c01 */
    CHECK_EQ(npk_fp16_from_f64(1.0 + 3 * ldexp(1, -11)), 0x3c02);
    CHECK_EQ(npk_fp16_from_f64(NAN), 0x7e00);
    CHECK(npk_fp16_to_f32(0x3555) == f32(0x3eaaa000)); /* 0.333251953125 */
    CHECK(npk_fp16_to_f32(0x0001) == (float)ldexp(1, -24));
    CHECK(isinf(npk_fp16_to_f32(0xfc00)) && npk_fp16_to_f32(0xfc00) < 0);
}

static void test_bf16(void) {
    CHECK_EQ(npk_bf16_from_f64(1.0), 0x3f80);
    CHECK_EQ(npk_bf16_from_f64(1.0 + ldexp(1, -8)), 0x3f80);     /* tie: to even */
    CHECK_EQ(npk_bf16_from_f64(1.0 + 3 * ldexp(1, -8)), 0x3f82); /* tie: to even (up) */
    /* One rounding from double: 1 + 2^-8 + 2^-40 is above the tie, although
     * rounding it to float first would make it the tie (double rounding). */
    CHECK_EQ(npk_bf16_from_f64(1.0 + ldexp(1, -8) + ldexp(1, -40)), 0x3f81);
    CHECK_EQ(npk_bf16_from_f64(ldexp(1, -133)), 0x0001); /* smallest subnormal */
    CHECK_EQ(npk_bf16_from_f64(ldexp(1, 128)), 0x7f80);  /* overflow: inf */
    CHECK_EQ(npk_bf16_from_f64(-NAN), NPK_BF16_QNAN);
    CHECK_EQ(npk_bf16_from_f32(f32(0x3f808000)), 0x3f80); /* tie */
    CHECK_EQ(npk_bf16_from_f32(f32(0x3f818000)), 0x3f82); /* tie, odd: up */
    CHECK_EQ(npk_bf16_from_f32(f32(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds to inf */
    CHECK_EQ(npk_bf16_from_f32(f32(0xff800000)), 0xff80);
    CHECK_EQ(npk_bf16_from_f32(f32(0x7fa00001)), NPK_BF16_QNAN);
    CHECK(npk_bf16_round_f32(f32(0x3f818000)) == f32(0x3f820000));
    CHECK(npk_bf16_isnan(0x7fc1) && npk_bf16_isnan(0xff81) && !npk_bf16_isnan(0x7f80));
    /* The float path and the double path are one rounding: they agree on every
     * 2^16-th binary32 pattern (all exponents, both signs, NaNs included). */
    int agree = 1;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 0x10001u) {
        float f = f32((uint32_t)u);
        if (npk_bf16_from_f32(f) != npk_bf16_from_f64(f)) agree = 0;
        if (!isnan(f) && npk_bf16_to_f32(npk_bf16_from_f32(f)) != npk_bf16_round_f32(f)) agree = 0;
    }
    CHECK(agree);
}

static void test_fp8(void) {
    CHECK_EQ(npk_fp8_from_f64(1.0), 0x38);
    CHECK_EQ(npk_fp8_from_f64(448.0), 0x7e);  /* largest finite */
    CHECK_EQ(npk_fp8_from_f64(1e9), 0x7e);    /* saturates */
    CHECK_EQ(npk_fp8_from_f64(-1e9), 0xfe);
    CHECK_EQ(npk_fp8_from_f64(INFINITY), 0x7e);
    CHECK_EQ(npk_fp8_from_f64(NAN), 0x7f);
    CHECK_EQ(npk_fp8_from_f64(ldexp(1, -9)), 0x01); /* smallest subnormal */
    CHECK_EQ(npk_fp8_from_f64(1.0625), 0x38);       /* tie between 1 and 1.125: even */
    CHECK(isnan(npk_fp8_to_f32(0xff)));
    CHECK(npk_fp8_to_f32(0x7e) == 448.0f);
    CHECK(npk_fp8_to_f32(0x81) == -(float)ldexp(1, -9));
}

static void test_xacc(void) {
    npk_bf16_xacc a;
    npk_bf16_xacc_clear(&a);
    /* 2^100 + 1 - 2^100 is exactly 1: no intermediate rounding. */
    npk_bf16_xacc_add(&a, 0x7180); /* 2^100 */
    npk_bf16_xacc_add(&a, 0x3f80); /* 1 */
    npk_bf16_xacc_sub(&a, 0x7180);
    CHECK_EQ(npk_bf16_xacc_round(&a), 0x3f80);
    npk_bf16_xacc_add_prod(&a, 0.5f, -3, 0x4000); /* 1 + 0.5 * -3 * 2 = -2 */
    CHECK_EQ(npk_bf16_xacc_round(&a), 0xc000);
    npk_bf16_xacc_add(&a, 0x7f80);
    npk_bf16_xacc_add(&a, 0xff80); /* inf - inf */
    CHECK_EQ(npk_bf16_xacc_round(&a), NPK_BF16_QNAN);
}

static void test_tensor(void) {
    int64_t dims[3] = {2, 3, 4};
    npk_tensor t, c;
    CHECK_EQ(npk_tensor_alloc(&t, "x", NPK_DT_INT16, 3, dims), 0);
    CHECK_EQ(npk_tensor_numel(&t), 24);
    CHECK_EQ(npk_tensor_bytes(&t), 48);
    ((int16_t *)t.data)[23] = -5;
    CHECK_EQ(npk_tensor_copy(&c, &t), 0);
    CHECK_EQ(((int16_t *)c.data)[23], -5);
    CHECK_STR(c.name, "x");
    char buf[64];
    CHECK_STR(npk_tensor_shape_str(NPK_DT_INT16, 3, dims, buf, sizeof buf), "int16[2,3,4]");
    npk_tensor_free(&t);
    npk_tensor_free(&c);
    npk_tensor s = {0}; /* a zeroed struct is a rank-0 tensor: one element */
    CHECK_EQ(npk_tensor_numel(&s), 1);
    int64_t huge[2] = {1 << 20, 1 << 20}, neg[1] = {-1};
    CHECK_EQ(npk_tensor_checked_numel(2, huge, 1), -1); /* 2^40 bytes > 1 GiB */
    CHECK_EQ(npk_tensor_checked_numel(1, neg, 1), -1);
    CHECK_EQ(npk_tensor_alloc(&t, NULL, NPK_DT_FLOAT, 2, huge), -NPK_EINVAL);
    CHECK_EQ(npk_tensor_alloc(&t, NULL, NPK_DT_STRING, 1, dims), -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "string") != NULL);
    /* npk_tensor_alloc zeroes the data, npk_tensor_alloc_raw does not, with the same checks */
    CHECK_EQ(npk_tensor_alloc(&t, NULL, NPK_DT_INT32, 3, dims), 0);
    int zeros = 1;
    for (int i = 0; i < 24; i++) zeros &= ((int32_t *)t.data)[i] == 0;
    CHECK(zeros);
    npk_tensor_free(&t);
    CHECK_EQ(npk_tensor_alloc_raw(&t, "r", NPK_DT_INT32, 3, dims), 0);
    CHECK_EQ(npk_tensor_bytes(&t), 96);
    CHECK_STR(t.name, "r");
    ((int32_t *)t.data)[23] = 7; /* all 24 elements are writable */
    npk_tensor_free(&t);
    CHECK_EQ(npk_tensor_alloc_raw(&t, NULL, NPK_DT_FLOAT, 2, huge), -NPK_EINVAL);
    CHECK_EQ(npk_tensor_alloc_raw(&t, NULL, NPK_DT_STRING, 1, dims), -NPK_EUNSUPPORTED);
    CHECK_EQ(npk_tensor_alloc_raw(&t, NULL, NPK_DT_FLOAT, 0, NULL), 0); /* a scalar: one element */
    CHECK(t.data != NULL);
    npk_tensor_free(&t);
}

/* Guest ranges (issue 32): a range may end exactly at 2^64 but never wrap. */
static void test_range(void) {
    uint64_t last = 0, span = 0;
    CHECK(npk_range_ok(0, 0, &last) && last == 0);
    CHECK(npk_range_ok(UINT64_MAX, 1, &last) && last == UINT64_MAX);
    CHECK(npk_range_ok(UINT64_MAX - 15, 16, &last) && last == UINT64_MAX);
    CHECK(!npk_range_ok(UINT64_MAX - 15, 17, NULL));
    CHECK(!npk_range_ok(0xfffffffffffff000ull, 0x2040, NULL)); /* issue 32 case 7 */
    CHECK(npk_range_ok(0, UINT64_MAX, &last) && last == UINT64_MAX - 1);
    CHECK(npk_range_ok(1, UINT64_MAX, &last) && last == UINT64_MAX);
    CHECK(!npk_range_ok(2, UINT64_MAX, NULL));
    CHECK(npk_range_span(3, 100, 10, &span) && span == 210);
    CHECK(npk_range_span(0, 100, 10, &span) && span == 0);
    CHECK(npk_range_span(1, UINT64_MAX, 10, &span) && span == 10); /* one row: the stride does not count */
    CHECK(!npk_range_span(3, 1ull << 63, 1, &span) && span == UINT64_MAX);
    CHECK(!npk_range_span(2, UINT64_MAX - 4, 5, &span)); /* (2-1)*(2^64-5) + 5 = 2^64 */
    CHECK(npk_range_span(2, UINT64_MAX - 5, 5, &span) && span == UINT64_MAX);
    CHECK(!npk_range2d_ok(UINT64_MAX - 15, 2, 16, 16, NULL)); /* issue 32: A at 2^64 - 16, two rows */
    CHECK(npk_range2d_ok(UINT64_MAX - 31, 2, 16, 16, &last) && last == UINT64_MAX);
    CHECK(npk_range_overlap(0x1000, 0x80, 0x107f, 1));
    CHECK(!npk_range_overlap(0x1000, 0x80, 0x1080, 1));
    CHECK(!npk_range_overlap(0x1000, 0, 0x1000, 1));
    CHECK(npk_range_overlap(UINT64_MAX - 15, 16, UINT64_MAX, 1)); /* both end at 2^64 */
    CHECK(npk_range_within(0x1010, 0x10, 0x1000, 0x20) && !npk_range_within(0x1010, 0x11, 0x1000, 0x20));
    CHECK(npk_range_within(UINT64_MAX - 15, 16, UINT64_MAX - 31, 32));
}

int main(void) {
    test_error();
    test_fp16();
    test_bf16();
    test_fp8();
    test_xacc();
    test_tensor();
    test_range();
    return CHECK_DONE();
}
