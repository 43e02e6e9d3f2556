// kiln's ONNX Runtime baseline helper (bench/contenders/ort_client.h starts
// it as `node ort_helper.mjs`). One JSON request per line on stdin, one JSON
// line answers each on stdout; a failure answers {"error": MESSAGE} and the
// helper goes on with the next request.
//   {"cmd":"version"} -> {"version":"1.30.0"}
//   {"cmd":"load","model":PATH,"threads":T}
//       an InferenceSession on the CPU with T intra-op threads, one inter-op
//       thread, sequential execution and every graph optimization
//       -> {"inputs":[NAME..],"outputs":[NAME..]}
//   {"cmd":"run","inputs":[{"name":N,"file":F,"dtype":"float32","shape":[..]}..],
//    "outputs_dir":D}
//       runs the loaded model once on raw little-endian files, writes output
//       i to D/<i>.bin and keeps the inputs for "time"
//       -> {"outputs":[{"name":N,"dtype":"float32","shape":[..],"file":F}..]}
//   {"cmd":"time","repeat":R,"number":K,"warmup":W[,"min_repeat_ms":M,"cooldown_ms":C]}
//       runs the last run's inputs W times untimed, then (kiln's protocol,
//       runtime/time_evaluator.h) grows K until one measurement takes M ms,
//       then takes R measurements of K runs each, C ms apart
//       -> {"samples_ms":[ms per run of each measurement],"median_ms":..,"min_ms":..,"number":K}
//   {"cmd":"quit"} (or the end of stdin) ends the helper.
// stdout is the reply channel: nothing else may print there.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import ort from 'onnxruntime-node';

// The typed array holding each ONNX Runtime tensor type in memory.
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

let session = null; // the loaded model
let feeds = null;   // the last run's inputs, reused by "time"

function checkInt(req, key, min, fallback) {
  const v = req[key] ?? fallback;
  if (!Number.isInteger(v) || v < min) throw new Error(`"${key}" must be an integer >= ${min}`);
  return v;
}

// A tensor from a raw file; its size must match the shape exactly.
function readTensor({ name, file, dtype, shape }) {
  const TypedArray = ARRAYS[dtype];
  if (!TypedArray) throw new Error(`input ${name}: unsupported dtype ${dtype}`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new Error(`input ${name}: "shape" must be a list of extents`);
  }
  const need = shape.reduce((a, b) => a * b, 1) * TypedArray.BYTES_PER_ELEMENT;
  const bytes = fs.readFileSync(file);
  if (bytes.length !== need) {
    throw new Error(`input ${name}: ${file} has ${bytes.length} bytes, a ${dtype} [${shape}] needs ${need}`);
  }
  // A copy: the file's Buffer need not be aligned for the typed array.
  const data = new TypedArray(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(dtype, data, shape);
}

const handlers = {
  version: async () => ({ version: ort.env.versions?.node ?? ort.env.versions?.common ?? 'unknown' }),

  load: async (req) => {
    if (typeof req.model !== 'string') throw new Error('"model" must be a path');
    if (!fs.existsSync(req.model)) throw new Error(`no such file: ${req.model}`);
    const threads = checkInt(req, 'threads', 1, 1);
    session = null;
    feeds = null;
    session = await ort.InferenceSession.create(req.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      logSeverityLevel: 3, // errors only (they come back in the reply anyway)
    });
    return { inputs: session.inputNames, outputs: session.outputNames };
  },

  run: async (req) => {
    if (!session) throw new Error('no model loaded');
    if (!Array.isArray(req.inputs)) throw new Error('"inputs" must be a list');
    if (typeof req.outputs_dir !== 'string') throw new Error('"outputs_dir" must be a folder');
    const next = {};
    for (const input of req.inputs) {
      if (!session.inputNames.includes(input.name)) {
        throw new Error(`the model has no input ${JSON.stringify(input.name)} (its inputs: ${session.inputNames.join(', ')})`);
      }
      next[input.name] = readTensor(input);
    }
    const results = await session.run(next);
    feeds = next;
    fs.mkdirSync(req.outputs_dir, { recursive: true });
    const outputs = session.outputNames.map((name, i) => {
      const t = results[name];
      if (!ArrayBuffer.isView(t.data)) throw new Error(`output ${name}: ${t.type} tensors cannot be written`);
      const file = path.join(req.outputs_dir, `${i}.bin`);
      fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return { name, dtype: t.type, shape: t.dims.map(Number), file };
    });
    return { outputs };
  },

  time: async (req) => {
    if (!feeds) throw new Error('"time" needs a "run" first');
    const repeat = checkInt(req, 'repeat', 1, 5), warmup = checkInt(req, 'warmup', 0, 1);
    let number = checkInt(req, 'number', 1, 1);
    const minRepeatMs = req.min_repeat_ms ?? 0, cooldownMs = req.cooldown_ms ?? 0;
    const measure = async (k) => {
      const start = performance.now();
      for (let i = 0; i < k; ++i) await session.run(feeds);
      return performance.now() - start;
    };
    for (let i = 0; i < warmup; ++i) await session.run(feeds);
    // Calibration as runtime/time_evaluator.cpp: grow `number` until one
    // measurement is long enough.
    while (minRepeatMs > 0 && number < 1e9) {
      const ms = await measure(number);
      if (ms >= minRepeatMs) break;
      const estimate = ms > 0 ? minRepeatMs / (ms / number) + 1 : 1e9;
      number = Math.floor(Math.min(Math.max(estimate, Math.ceil(number * 1.618)), 1e9));
    }
    const samples = [];
    for (let r = 0; r < repeat; ++r) {
      if (r > 0 && cooldownMs > 0) await new Promise((done) => setTimeout(done, cooldownMs));
      samples.push((await measure(number)) / number);
    }
    const sorted = [...samples].sort((a, b) => a - b), n = sorted.length;
    const median = n % 2 ? sorted[(n - 1) / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    return { samples_ms: samples, median_ms: median, min_ms: sorted[0], number };
  },
};

// Requests are handled one at a time, in order.
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let reply;
  try {
    const req = JSON.parse(line);
    if (req.cmd === 'quit') break;
    const handler = Object.hasOwn(handlers, req.cmd) ? handlers[req.cmd] : null;
    if (!handler) throw new Error(`unknown command: ${JSON.stringify(req.cmd)}`);
    reply = await handler(req);
  } catch (e) {
    reply = { error: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
process.exit(0);
