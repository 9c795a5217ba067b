# SPDX-License-Identifier: MIT
"""LLM decode (include/npukit/llm.h): a llama2.c checkpoint and tokenizer, generation with
`npu llm`'s options on the fp32 CPU reference or on the pccx NPU (INT4 weights).

    m = npukit.llm.load("stories260K.bin", "tok512.bin")
    r = m.generate("Once upon a time", steps=64, device="pccx")
    print(r.text, r.report["cycles"])
"""

import json
import os
import tempfile

from . import _npukit
from ._device import _opts_str


class Generation:
    """The result of generate(): text (the prompt echoed, then the sampled tokens), tokens
    (ids after BOS), report (the performance report as a dict: what `npu llm --report-json`
    writes)."""

    def __init__(self, text, tokens, report):
        self.text, self.tokens, self.report = text, tokens, report

    def __repr__(self):
        return "Generation(%d tokens, text=%r)" % (len(self.tokens), self.text[:60])


class Model:
    def __init__(self, model, tokenizer):
        self._m = _npukit.LLM(model, tokenizer)
        self.config = self._m.config()

    def encode(self, text, bos=True, eos=False):
        return self._m.encode(text, bos=bos, eos=eos)

    def generate(self, prompt="", steps=200, temperature=0.0, top_p=0.9, seed=1, device="cpu", port=None,
                 device_options=None, group_size=8, trace=None, gemv_prefill=False):
        """`npu llm` with the same options: --prompt, --steps (positions including BOS and the
        prompt, capped at seq_len), --temperature (0: greedy), --top-p, --seed, --device
        (cpu or pccx), --port, --device-opt, --group-size, --trace, --gemv-prefill."""
        tmp = None
        if trace is not None:
            trace = os.fspath(trace)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(trace)), prefix=".npukit-")
            os.close(fd)
        try:
            text, tokens, report = self._m.generate(prompt, steps, temperature, top_p, seed, device, port,
                                                    _opts_str(device_options), group_size, tmp, gemv_prefill)
            if tmp:
                os.replace(tmp, trace)
                tmp = None
        finally:
            if tmp:
                os.unlink(tmp)
        return Generation(text, tokens, json.loads(report))


def load(model, tokenizer):
    """Load a llama2.c checkpoint (legacy format) and its tokenizer."""
    return Model(model, tokenizer)
