# SPDX-License-Identifier: MIT
"""npukit.llm (stories260K: llama2.c's reference output for 200 greedy steps) and npukit.sweep
(the rows of `npu sweep`'s CSV)."""

import csv
import os
import subprocess
import tempfile
import unittest

import npukit
from npktest_util import SHARED

STORIES = os.path.join(SHARED, "models", "stories260K")


class LLMTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = npukit.llm.load(os.path.join(STORIES, "stories260K.bin"), os.path.join(STORIES, "tok512.bin"))

    def test_greedy_reference(self):
        self.assertEqual(self.m.config["dim"], 64)
        self.assertEqual(self.m.config["vocab_size"], 512)
        g = self.m.generate(steps=200)
        with open(os.path.join(STORIES, "expected-greedy-200.txt")) as f:
            expected = f.read()
        self.assertEqual(g.text, expected.rstrip("\n"))
        self.assertEqual(len(g.tokens), 200)  # one token sampled at each of the 200 positions (llama2.c's run.c)
        self.assertEqual(g.report["device"], "cpu")

    def test_pccx_report_and_trace(self):
        with tempfile.TemporaryDirectory() as d:
            tr = os.path.join(d, "t.json")
            g = self.m.generate("Once upon a time", steps=24, device="pccx", device_options={"clock_mhz": 200},
                                trace=tr)
            self.assertTrue(g.text.startswith("Once upon a time"))
            self.assertEqual(g.report["device"], "pccx")
            self.assertEqual(g.report["clock_hz"], 200000000)
            self.assertGreater(os.path.getsize(tr), 100)
        # the CPU and the pccx decoders agree on the prompt's tokens (forced)
        prompt = self.m.encode("Once upon a time", bos=False)
        self.assertEqual(g.tokens[:len(prompt)], prompt)

    def test_errors(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, "pccx or cpu"):
            self.m.generate(device="v0")
        with self.assertRaises(npukit.Error):
            npukit.llm.load(os.path.join(STORIES, "tok512.bin"), os.path.join(STORIES, "tok512.bin"))


@unittest.skipUnless(os.environ.get("NPU"), "NPU (the npu binary) not set")
class SweepTest(unittest.TestCase):
    SPEC = {"name": "py", "device": "v0", "params": {"dram_bw": [4, 16]},
            "workloads": [{"name": "mm", "layer": "matmul:m=32,k=64,n=32"},
                          {"name": "conv", "layer": "conv:c=8,k=8,h=8,r=3"}],
            "timing_only": True}

    def test_rows_are_the_csv(self):
        rows = npukit.sweep(self.SPEC)
        self.assertEqual(len(rows), 4)
        self.assertEqual([(r["dram_bw"], r["workload"]) for r in rows], [(4, "mm"), (4, "conv"), (16, "mm"), (16, "conv")])
        # the same spec through the CLI: the same cells
        with tempfile.TemporaryDirectory() as d:
            import json
            spec = os.path.join(d, "s.yml")
            with open(spec, "w") as f:
                json.dump(self.SPEC, f)
            out = os.path.join(d, "o.csv")
            subprocess.run([os.environ["NPU"], "sweep", spec, "-o", out], check=True, stdout=subprocess.DEVNULL)
            with open(out, newline="") as f:
                cli = list(csv.DictReader(f))
        self.assertEqual(len(cli), len(rows))
        for a, b in zip(rows, cli):
            self.assertEqual(set(a), set(b))
            for k in b:
                self.assertEqual("" if a[k] is None else str(a[k]), b[k], k) if isinstance(a[k], (str, int)) or a[k] is None \
                    else self.assertAlmostEqual(a[k], float(b[k]), msg=k)
        self.assertGreater(rows[0]["cycles"], rows[2]["cycles"] * 0.99)  # more bandwidth is never slower

    def test_bad_spec(self):
        with self.assertRaisesRegex(npukit.Error, "unknown key 'bogus'"):
            npukit.sweep({"device": "v0", "bogus": 1, "workloads": [{"name": "mm", "layer": "matmul:m=8,k=8,n=8"}]})


if __name__ == "__main__":
    unittest.main()
