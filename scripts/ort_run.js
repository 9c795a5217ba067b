#!/usr/bin/env node
// ONNX Runtime as the test oracle (issue 14): run a model on ONNX Runtime's
// CPU provider (onnxruntime-node, one intra-op thread) and write its outputs
// as ONNX TensorProto files.
//
//   node scripts/ort_run.js ORT_DIR TEST_DIR...
//
// ORT_DIR is the folder holding node_modules/onnxruntime-node (installed with
// `npm install --ignore-scripts`, see scripts/deps.sh). Each TEST_DIR is an
// ONNX backend test directory: model.onnx and test_data_set_N/input_K.pb; the
// script writes test_data_set_N/output_K.pb next to the inputs. TensorProto
// is decoded and encoded here (raw_data and the packed typed fields), so no
// python onnx package is needed.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPES = { // TensorProto.DataType -> [ort type, TypedArray]
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 9: ['bool', Uint8Array],
  11: ['float64', Float64Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
};
const BY_ORT = {};
for (const [dt, [name]] of Object.entries(TYPES)) BY_ORT[name] = Number(dt);

function varint(buf, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
    shift += 7n;
  }
}

function decodeTensor(buf) {
  const t = { dims: [], dataType: 0, raw: null, floats: [], doubles: [], i32: [], i64: [], name: '' };
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = varint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = varint(buf, pos);
      if (field === 1) t.dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) t.dataType = Number(v);
      else if (field === 5) t.i32.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) t.i64.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      let len;
      [len, pos] = varint(buf, pos);
      const end = pos + Number(len), body = buf.subarray(pos, end);
      if (field === 8) t.name = body.toString('utf8');
      else if (field === 9) t.raw = Buffer.from(body);
      else if (field === 1 || field === 5 || field === 7) { // packed varints
        let p = 0;
        while (p < body.length) {
          let v;
          [v, p] = varint(body, p);
          if (field === 1) t.dims.push(Number(BigInt.asIntN(64, v)));
          else if (field === 5) t.i32.push(Number(BigInt.asIntN(32, v)));
          else t.i64.push(BigInt.asIntN(64, v));
        }
      } else if (field === 4) for (let p = 0; p < body.length; p += 4) t.floats.push(body.readFloatLE(p));
      else if (field === 10) for (let p = 0; p < body.length; p += 8) t.doubles.push(body.readDoubleLE(p));
      pos = end;
    } else if (wire === 5) pos += 4;
    else if (wire === 1) pos += 8;
    else throw new Error(`unsupported protobuf wire type ${wire}`);
  }
  const ty = TYPES[t.dataType];
  if (!ty) throw new Error(`tensor '${t.name}': element type ${t.dataType} is not handled`);
  const [ortType, Arr] = ty;
  const n = t.dims.reduce((a, b) => a * b, 1);
  let data;
  if (t.raw) data = new Arr(new Uint8Array(t.raw).buffer.slice(0), 0, n);
  else if (t.dataType === 1) data = Float32Array.from(t.floats);
  else if (t.dataType === 11) data = Float64Array.from(t.doubles);
  else if (t.dataType === 7) data = BigInt64Array.from(t.i64);
  else if (t.dataType === 13) data = BigUint64Array.from(t.i64.map((v) => BigInt.asUintN(64, v)));
  else data = Arr.from(t.i32);
  return { name: t.name, type: ortType, dims: t.dims, data };
}

function encVarint(v) {
  v = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

function encodeTensor(name, tensor) {
  const dt = BY_ORT[tensor.type];
  if (!dt) throw new Error(`output '${name}': ONNX Runtime type ${tensor.type} is not handled`);
  const parts = [];
  for (const d of tensor.dims) parts.push(encVarint(1 << 3), encVarint(d));
  parts.push(encVarint(2 << 3), encVarint(dt));
  const nb = Buffer.from(name, 'utf8');
  parts.push(encVarint((8 << 3) | 2), encVarint(nb.length), nb);
  const d = tensor.data;
  const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  parts.push(encVarint((9 << 3) | 2), encVarint(raw.length), raw);
  return Buffer.concat(parts);
}

async function runDir(ort, dir) {
  const sess = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
    { intraOpNumThreads: 1, interOpNumThreads: 1, executionProviders: ['cpu'] });
  const sets = fs.readdirSync(dir).filter((s) => s.startsWith('test_data_set_')).sort();
  for (const s of sets) {
    const sd = path.join(dir, s);
    const feeds = {};
    sess.inputNames.forEach((name, k) => {
      const f = path.join(sd, `input_${k}.pb`);
      const t = decodeTensor(fs.readFileSync(f));
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    const res = await sess.run(feeds);
    sess.outputNames.forEach((name, k) => {
      fs.writeFileSync(path.join(sd, `output_${k}.pb`), encodeTensor(name, res[name]));
    });
  }
}

async function main() {
  const [ortDir, ...dirs] = process.argv.slice(2);
  if (!ortDir || !dirs.length) {
    console.error('usage: node ort_run.js ORT_DIR TEST_DIR...');
    process.exit(2);
  }
  const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  let failed = 0;
  for (const d of dirs) {
    try {
      await runDir(ort, d);
    } catch (e) {
      // a model ONNX Runtime itself refuses is reported and skipped by the caller
      fs.writeFileSync(path.join(d, 'ORT_ERROR.txt'), String(e && e.message ? e.message : e) + '\n');
      failed++;
    }
  }
  console.log(`ort_run: ${dirs.length - failed} models run, ${failed} refused by ONNX Runtime`);
}

main().catch((e) => {
  console.error(`ort_run: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
