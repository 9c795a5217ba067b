// SPDX-License-Identifier: MIT
/* The performance report of a decode run (npu llm --report, npukit.llm in Python). */
#include <stdio.h>
#include <string.h>

#include "npukit/error.h"
#include "npukit/llm.h"
#include "npukit/pccx_isa.h"
#include "npukit/report.h"

/* The decode run as a performance report (include/npukit/report.h): device
 * instructions per opcode with their engine cycles and MACs, the host steps
 * as host operators, bytes per memory, modeled and host tokens/s, and the
 * per-token figures as notes (include/npukit/llm.h). */
int npk_llm_report(const npk_llm_decoder *d, int ntok, const char *model_path, npk_report **out) {
    *out = NULL;
    npk_llm_stats st;
    npk_llm_stats_get(d, &st);
    double per = st.tokens ? 1.0 / (double)st.tokens : 0.0;
    int dev = st.device_hz != 0;
    /* pccx GEMV computes 32 x lanes (4 by default) MACs per cycle */
    npk_report *r = npk_report_new(npk_llm_decoder_kind(d), st.device_hz, dev ? st.device_macs_per_cycle : 0);
    if (!r) return npk_err(NPK_ENOMEM, "out of memory");
    if (model_path) npk_report_name(r, model_path);
    if (dev) {
        uint64_t cyc[5] = {st.engine_cycles[0], st.engine_cycles[1], st.engine_cycles[3], 0, st.engine_cycles[2]};
        if (st.instr[0] && st.instr[1]) /* MACs are counted for both together */
            npk_report_op_n(r, "GEMV+GEMM", 1, st.instr[0] + st.instr[1], cyc[0] + cyc[1], st.device_macs);
        for (int i = 0; i < 5; i++)
            if (st.instr[i] && !(i < 2 && st.instr[0] && st.instr[1]))
                npk_report_op_n(r, npk_pccx_opcode_name((unsigned)i), 1, st.instr[i], cyc[i], i < 2 ? st.device_macs : 0);
        npk_report_total_cycles(r, st.device_cycles);
        npk_report_bytes(r, "weight stream (INT4 + scales)", st.weight_bytes, 0);
        npk_report_bytes(r, "host<->L2 (MEMCPY)", st.memcpy_bytes, 0);
        npk_report_bytes(r, "host driver buffers", st.host_bytes, 0);
    }
    for (int i = 0; npk_llm_host_op_name(i); i++)
        if (st.host_op_kinds[i]) npk_report_op_n(r, npk_llm_host_op_name(i), 0, st.tokens, 0, 0);
    npk_report_tokens(r, st.tokens);
    if (dev && st.has_energy) npk_report_energy(r, &st.energy, &st.area, st.tech_nm);
    npk_report_host_time(r, st.host_seconds);
    npk_report_note(r, "forward steps / emitted", "%llu / %d", (unsigned long long)st.tokens, ntok);
    if (dev) {
        npk_report_note(r, "modeled device", "%.0f cycles/token (device busy time; host steps not modeled)",
                        (double)st.device_cycles * per);
        if (st.prompt_tokens && st.device_hz) {
            /* prefill = the forced prompt positions (BOS included); decode = the rest */
            double hz = (double)st.device_hz, pc = (double)st.prompt_device_cycles;
            uint64_t dn = st.tokens - st.prompt_tokens;
            npk_report_note(r, "prefill (prompt)", "%llu tokens, %.1f tokens/s modeled (%.0f cycles/token), host simulation %.1f tokens/s",
                            (unsigned long long)st.prompt_tokens, pc > 0 ? hz * (double)st.prompt_tokens / pc : 0.0,
                            pc / (double)st.prompt_tokens,
                            st.prompt_host_seconds > 0 ? (double)st.prompt_tokens / st.prompt_host_seconds : 0.0);
            npk_report_note(r, "time to first token", "%.3f ms modeled, %.3f ms host", 1e3 * pc / hz,
                            1e3 * st.prompt_host_seconds);
            if (dn) {
                double dc = (double)st.device_cycles - pc, dh = st.host_seconds - st.prompt_host_seconds;
                npk_report_note(r, "decode", "%llu tokens, %.1f tokens/s modeled (%.0f cycles/token), host simulation %.1f tokens/s",
                                (unsigned long long)dn, dc > 0 ? hz * (double)dn / dc : 0.0, dc / (double)dn,
                                dh > 0 ? (double)dn / dh : 0.0);
            }
        }
        npk_report_note(r, "instructions per token",
                        "%.1f (GEMV %.1f, GEMM %.1f, MEMCPY %.1f, MEMSET %.1f, CVO %.1f)",
                        (double)st.instr_total * per, (double)st.instr[0] * per, (double)st.instr[1] * per,
                        (double)st.instr[2] * per, (double)st.instr[3] * per, (double)st.instr[4] * per);
        npk_report_note(r, "bytes per token",
                        "%.0f weight stream (INT4 + scales), %.0f MEMCPY, %.0f host<->device buffers",
                        (double)st.weight_bytes * per, (double)st.memcpy_bytes * per, (double)st.host_bytes * per);
        static const char *pn[8] = {"q", "k", "v", "o", "w1", "w2", "w3", "cls"};
        char buf[160];
        size_t o = 0;
        for (int i = 0; i < 8 && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %.0f", i ? " " : "", pn[i],
                                  (double)st.gemv_on_device[i] * per);
        npk_report_note(r, "device GEMV per token", "%s", buf);
    }
    uint64_t tot = st.device_ops + st.host_ops;
    npk_report_note(r, "work per token", "%.0f device ops, %.0f host ops; host share %.2f%%",
                    (double)st.device_ops * per, (double)st.host_ops * per,
                    tot ? 100.0 * (double)st.host_ops / (double)tot : 0.0);
    char buf[160];
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; npk_llm_host_op_name(i) && o < sizeof buf; i++)
        if (st.host_op_kinds[i])
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %.0f", o ? " " : "", npk_llm_host_op_name(i),
                                  (double)st.host_op_kinds[i] * per);
    npk_report_note(r, "host ops per token", "%s", buf);
    *out = r;
    return 0;
}

