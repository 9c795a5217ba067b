#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// ONNX Runtime's speed on a model, for `npu bench onnx-cpu` (issue 15 point 2):
// CPU provider, the given intra-op thread count set explicitly, the inputs of
// test_data_set_0; one untimed warm-up run, then N timed runs of session.run.
//
//   node scripts/ort_bench.js ORT_DIR THREADS RUNS MODEL_DIR...
//
// Prints one JSON line per model: {"dir","threads","runs","ms":[...],"cpu_ms":[...],"first_ms":[...]}
// (host milliseconds per run; cpu_ms: the node process's CPU time per run, user + system,
// process.cpuUsage; first_ms: RUNS times a fresh session's creation, the
// inputs' decoding and its first run, what `npu run` reports as the first
// inference), or {"dir","error"} when ONNX Runtime refuses it.
'use strict';
const fs = require('fs');
const path = require('path');

const { decodeTensor } = require('./ort_run.js'); // TensorProto decoding, shared with the oracle

async function main() {
  const [ortDir, threadsArg, runsArg, ...dirs] = process.argv.slice(2);
  const threads = Number(threadsArg), runs = Number(runsArg);
  if (!ortDir || !(threads >= 1) || !(runs >= 1) || !dirs.length) {
    console.error('usage: node ort_bench.js ORT_DIR THREADS RUNS MODEL_DIR...');
    process.exit(2);
  }
  const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  const opts = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', executionProviders: ['cpu'] };
  for (const dir of dirs) {
    try {
      // the first inference: a fresh session, the inputs, the first run (RUNS times)
      const first_ms = [];
      let sess, feeds;
      for (let r = 0; r < runs; r++) {
        const t0 = process.hrtime.bigint();
        sess = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), opts);
        feeds = {};
        sess.inputNames.forEach((name, k) => {
          const t = decodeTensor(fs.readFileSync(path.join(dir, 'test_data_set_0', `input_${k}.pb`)));
          feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
        });
        await sess.run(feeds);
        first_ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      await sess.run(feeds); // warm-up
      const ms = [], cpu_ms = [];
      for (let r = 0; r < runs; r++) {
        const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
        await sess.run(feeds);
        const c1 = process.cpuUsage(c0);
        ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        cpu_ms.push((c1.user + c1.system) / 1e3);
      }
      console.log(JSON.stringify({ dir, threads, runs, ms, cpu_ms, first_ms }));
    } catch (e) {
      console.log(JSON.stringify({ dir, error: String(e && e.message ? e.message : e) }));
    }
  }
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
