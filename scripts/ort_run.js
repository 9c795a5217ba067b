#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// ONNX Runtime as the test oracle (issue 14): run a model on ONNX Runtime's
// CPU provider (onnxruntime-node, one intra-op thread) and write its outputs
// as ONNX TensorProto files.
//
//   node scripts/ort_run.js ORT_DIR [--qlinear|--float-nodes] TEST_DIR...
//
// --qlinear: the exact integer arithmetic of quantized models. Every
// DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear group is rewritten as the
// QLinearConv / QLinearMatMul / com.microsoft QGemm it denotes (the Q/DQ nodes'
// scales and zero points become the operator's inputs; a MatMul or Gemm without
// the QuantizeLinear as MatMulIntegerToFloat / QGemm with a float output) and
// ONNX Runtime runs the result at
// graph optimisation level 'basic', so none of its QDQ transformations runs:
// ONNX Runtime's own integer kernels compute every group, and every other
// node in float as written. (At level 'all', ONNX Runtime leaves the groups
// next to a DequantizeLinear with two consumers as float32 Conv/MatMul,
// which rounds differently from the integer arithmetic near .5 ties; see
// docs/onnx.md, "QDQ".)
//
// --float-nodes: ONNX Runtime's own choice of which quantized groups it fuses. The model
// runs as usual (level 'all') and its optimised model is saved (optimizedModelFilePath);
// TEST_DIR/ort_float.txt lists, one per line, the Conv, MatMul and Gemm nodes it kept in
// float (what `npu run --qdq ort` must leave unfused, tests/onnx_ort.cmakescript).
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
  10: ['float16', Uint16Array], 11: ['float64', Float64Array], 12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
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

// protobuf fields of buf: [{f, w, v (varint) | body (bytes), st, end}]
function fields(buf) {
  const out = [];
  let pos = 0;
  while (pos < buf.length) {
    const st = pos;
    let key;
    [key, pos] = varint(buf, pos);
    const f = Number(key >> 3n), w = Number(key & 7n);
    if (w === 0) {
      let v;
      [v, pos] = varint(buf, pos);
      out.push({ f, w, v, st, end: pos });
    } else if (w === 2) {
      let len;
      [len, pos] = varint(buf, pos);
      const end = pos + Number(len);
      out.push({ f, w, body: buf.subarray(pos, end), st, end });
      pos = end;
    } else if (w === 5 || w === 1) {
      const end = pos + (w === 5 ? 4 : 8);
      out.push({ f, w, body: buf.subarray(pos, end), st, end });
      pos = end;
    } else throw new Error(`unsupported protobuf wire type ${w}`);
  }
  return out;
}

const utf8 = (b) => Buffer.from(b).toString('utf8');
const lenField = (f, body) => Buffer.concat([encVarint((f << 3) | 2), encVarint(body.length), Buffer.from(body)]);

// ModelProto -> the same model with each DQ -> Conv/MatMul -> Q group as one QLinear node
function qlinearModel(model) {
  const mf = fields(model), gf = mf.find((x) => x.f === 7), G = fields(gf.body);
  const raw = G.filter((x) => x.f === 1);
  const nodes = raw.map((x) => {
    const n = { in: [], out: [], name: '', op: '', attrs: [] };
    for (const y of fields(x.body)) {
      if (y.f === 1) n.in.push(utf8(y.body));
      else if (y.f === 2) n.out.push(utf8(y.body));
      else if (y.f === 3) n.name = utf8(y.body);
      else if (y.f === 4) n.op = utf8(y.body);
      else if (y.f === 5) n.attrs.push(x.body.subarray(y.st, y.end));
    }
    return n;
  });
  const outputs = new Set(G.filter((x) => x.f === 12).map((x) => utf8(fields(x.body).find((y) => y.f === 1).body)));
  const prod = {}, cons = {};
  nodes.forEach((n, i) => {
    for (const o of n.out) prod[o] = i;
    for (const v of n.in) (cons[v] = cons[v] || []).push(i);
  });
  const dqOf = (v) => (prod[v] !== undefined && nodes[prod[v]].op === 'DequantizeLinear' && nodes[prod[v]].in.length === 3 ? nodes[prod[v]] : null);
  const repl = {}, drop = new Set();
  let msDomain = false;
  nodes.forEach((n, i) => {
    if (n.op !== 'Conv' && n.op !== 'MatMul' && n.op !== 'Gemm') return;
    const dx = dqOf(n.in[0]), dw = dqOf(n.in[1]), db = n.in.length > 2 && n.in[2] ? dqOf(n.in[2]) : null;
    const qs = cons[n.out[0]] || [], q = qs.length === 1 ? nodes[qs[0]] : null;
    // no QuantizeLinear after a MatMul/Gemm: a float output (QGemm without y_scale, MatMulIntegerToFloat)
    const fout = n.op !== 'Conv' && !(q && q.op === 'QuantizeLinear' && !outputs.has(n.out[0]));
    if (!dx || !dw || (n.in.length > 2 && n.in[2] && !db) ||
        (!fout && (!q || q.op !== 'QuantizeLinear' || q.in.length !== 3 || outputs.has(n.out[0]))) ||
        (fout && qs.some((k) => nodes[k].op === 'QuantizeLinear')) || (n.op === 'Conv' && !q))
      return;
    let ins, op, attrs = n.attrs, domain = [];
    const yout = fout ? n.out[0] : q.out[0];
    if (n.op === 'Gemm') {
      // ONNX has no quantized Gemm: ONNX Runtime's com.microsoft QGemm (A, scales and zero points, the
      // int32 bias C, y_scale, y_zero_point; transA, transB and alpha; without y_scale a float output).
      // beta is dropped: npukit fuses a bias only when beta * its scale = alpha * a_scale * b_scale,
      // where adding the int32 C to the sum is exact
      const named = attrs.map((a) => {
        const af = fields(fields(a)[0].body);
        return { a, name: utf8(af.find((y) => y.f === 1).body) };
      });
      attrs = named.filter((x) => x.name === 'transA' || x.name === 'transB' || x.name === 'alpha').map((x) => x.a);
      ins = [...dx.in, ...dw.in, db ? db.in[0] : '', ...(fout ? [] : [q.in[1], q.in[2]])];
      op = 'QGemm';
      domain = [lenField(7, Buffer.from('com.microsoft'))];
      msDomain = true;
    } else if (fout) {
      ins = [dx.in[0], dw.in[0], dx.in[1], dw.in[1], dx.in[2] || '', dw.in[2] || ''];
      op = 'MatMulIntegerToFloat';
      domain = [lenField(7, Buffer.from('com.microsoft'))];
      msDomain = true;
    } else {
      ins = [...dx.in, ...dw.in, q.in[1], q.in[2], ...(db ? [db.in[0]] : [])];
      op = n.op === 'Conv' ? 'QLinearConv' : 'QLinearMatMul';
    }
    repl[i] = Buffer.concat([...ins.map((v) => lenField(1, Buffer.from(v))), lenField(2, Buffer.from(yout)),
      lenField(3, Buffer.from(n.name)), lenField(4, Buffer.from(op)), ...attrs, ...domain]);
    if (!fout) drop.add(qs[0]);
  });
  let ni = 0;
  const parts = [];
  for (const x of G) {
    if (x.f !== 1) parts.push(gf.body.subarray(x.st, x.end));
    else {
      const i = ni++;
      if (!drop.has(i)) parts.push(repl[i] ? lenField(1, repl[i]) : gf.body.subarray(x.st, x.end));
    }
  }
  const out = mf.map((x) => (x.f === 7 ? lenField(7, Buffer.concat(parts)) : model.subarray(x.st, x.end)));
  const hasMs = mf.some((x) => x.f === 8 && fields(x.body).some((y) => y.f === 1 && utf8(y.body) === 'com.microsoft'));
  if (msDomain && !hasMs) out.push(lenField(8, Buffer.concat([lenField(1, Buffer.from('com.microsoft')), encVarint(2 << 3), encVarint(1)])));
  return Buffer.concat(out);
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

// Names of the nodes of a ModelProto's graph whose op type is one of ops.
function nodesOfType(model, ops) {
  const g = fields(fields(model).find((x) => x.f === 7).body);
  const names = [];
  for (const x of g.filter((y) => y.f === 1)) {
    const nf = fields(x.body), op = nf.find((y) => y.f === 4), name = nf.find((y) => y.f === 3);
    if (op && ops.includes(utf8(op.body))) names.push(name ? utf8(name.body) : '');
  }
  return names;
}

async function runDir(ort, dir, qlinear, floatNodes) {
  const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, executionProviders: ['cpu'] };
  const file = path.join(dir, 'model.onnx');
  if (floatNodes) {
    const opt = path.join(dir, 'ort_optimized.onnx');
    await ort.InferenceSession.create(file, { ...opts, optimizedModelFilePath: opt });
    const names = nodesOfType(fs.readFileSync(opt), ['Conv', 'MatMul', 'Gemm', 'FusedConv', 'FusedGemm', 'FusedMatMul']);
    fs.writeFileSync(path.join(dir, 'ort_float.txt'), names.sort().map((n) => n + '\n').join(''));
  }
  const sess = qlinear
    ? await ort.InferenceSession.create(new Uint8Array(qlinearModel(fs.readFileSync(file))), { ...opts, graphOptimizationLevel: 'basic' })
    : await ort.InferenceSession.create(file, opts);
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
  let [ortDir, ...dirs] = process.argv.slice(2);
  const qlinear = dirs[0] === '--qlinear', floatNodes = dirs[0] === '--float-nodes';
  if (qlinear || floatNodes) dirs = dirs.slice(1);
  if (!ortDir || !dirs.length) {
    console.error('usage: node ort_run.js ORT_DIR [--qlinear|--float-nodes] TEST_DIR...');
    process.exit(2);
  }
  const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  let failed = 0;
  for (const d of dirs) {
    try {
      await runDir(ort, d, qlinear, floatNodes);
    } catch (e) {
      // a model ONNX Runtime itself refuses is reported and skipped by the caller
      fs.writeFileSync(path.join(d, 'ORT_ERROR.txt'), String(e && e.message ? e.message : e) + '\n');
      failed++;
    }
  }
  console.log(`ort_run: ${dirs.length - failed} models run, ${failed} refused by ONNX Runtime`);
}

module.exports = { decodeTensor, encodeTensor };

if (require.main === module) {
  main().catch((e) => {
    console.error(`ort_run: ${e && e.message ? e.message : e}`);
    process.exit(1);
  });
}
