#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// ONNX Runtime's speed on a model, for `npu bench onnx-cpu` (issue 15 point 2, issue 26):
// a server that answers one request per line on stdin with one JSON line on stdout, so the
// bench can interleave ONNX Runtime's timed runs with npukit's, repetition by repetition
// (both sides then see the same moments of a shared machine).
//
//   node scripts/ort_bench.js ORT_DIR MODEL_DIR
//
// At start it prints {"ready":VERSION} (onnxruntime-node loaded) or {"error":...} and exits 1.
// Requests (CPU provider, intraOpNumThreads THREADS set explicitly, the inputs of
// MODEL_DIR/test_data_set_0):
//   first THREADS  a fresh session's creation, the inputs' decoding and its first run
//                  (what `npu run` reports as the first inference): {"first_ms":MS}
//   load THREADS   a fresh session kept for `run`, and one warm-up run: {"load_ms":MS} (both
//                  together; informative, not a bench figure)
//   run [N]        N session.runs of the kept session back to back (default 1), the last one
//                  timed: {"ms":MS,"cpu_ms":MS} (cpu_ms: the node process's CPU time, user +
//                  system, process.cpuUsage)
//   quit           exits 0 (so does the end of stdin)
// A request ONNX Runtime refuses (the model, an input) answers {"error":MESSAGE}; an unknown
// request too.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const { decodeTensor } = require('./ort_run.js'); // TensorProto decoding, shared with the oracle

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function openSession(ort, dir, threads) {
  const opts = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', executionProviders: ['cpu'] };
  const sess = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), opts);
  const feeds = {};
  sess.inputNames.forEach((name, k) => {
    const t = decodeTensor(fs.readFileSync(path.join(dir, 'test_data_set_0', `input_${k}.pb`)));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  return { sess, feeds };
}

async function main() {
  const [ortDir, dir] = process.argv.slice(2);
  if (!ortDir || !dir) {
    console.error('usage: node ort_bench.js ORT_DIR MODEL_DIR');
    process.exit(2);
  }
  let ort;
  try {
    ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    reply({ error: `cannot load onnxruntime-node from ${ortDir}: ${e && e.message ? e.message : e}` });
    process.exit(1);
  }
  let version = 'unknown';
  try {
    version = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  } catch (e) { /* the version is only informative */ }
  reply({ ready: String(version) });
  let kept = null;
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(/\s+/);
    const threads = Number(arg);
    try {
      if (cmd === 'quit') break;
      if ((cmd === 'first' || cmd === 'load') && !(threads >= 1)) {
        reply({ error: `${cmd}: a thread count >= 1 is needed, got '${arg}'` });
      } else if (cmd === 'first') {
        const t0 = process.hrtime.bigint();
        const s = await openSession(ort, dir, threads);
        await s.sess.run(s.feeds);
        reply({ first_ms: Number(process.hrtime.bigint() - t0) / 1e6 });
      } else if (cmd === 'load') {
        kept = null;
        const t0 = process.hrtime.bigint();
        const s = await openSession(ort, dir, threads);
        await s.sess.run(s.feeds); // warm-up
        kept = s;
        reply({ load_ms: Number(process.hrtime.bigint() - t0) / 1e6 });
      } else if (cmd === 'run') {
        const n = arg === undefined ? 1 : Number(arg);
        if (!kept) {
          reply({ error: 'run: no session (send load THREADS first)' });
          continue;
        }
        if (!(Number.isInteger(n) && n >= 1)) {
          reply({ error: `run: a run count >= 1 is needed, got '${arg}'` });
          continue;
        }
        for (let k = 1; k < n; k++) await kept.sess.run(kept.feeds); // lead-in runs, untimed
        const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
        await kept.sess.run(kept.feeds);
        const c1 = process.cpuUsage(c0);
        reply({ ms: Number(process.hrtime.bigint() - t0) / 1e6, cpu_ms: (c1.user + c1.system) / 1e3 });
      } else {
        reply({ error: `unknown request '${line.trim()}'` });
      }
    } catch (e) {
      reply({ error: String(e && e.message ? e.message : e) });
    }
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
