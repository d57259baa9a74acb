// ---- The runner: the same in every module dmlgpu exports (dmlgpu/export_runner.js, whose
// comments an exported module leaves out). It reads SHADERS (the WGSL of each pass) and
// `operator` (the plan) above, and plans nothing: it makes the pipelines, binds the caller's
// buffers to each piece's windows and records the passes. DirectML's binding model: the caller
// owns the device, the buffers, the encoder and the submit. API: docs/export.md of dmlgpu.

/** Every refusal of this module: no WebGPU, a device short of a limit, a binding that breaks a rule. */
export class OperatorError extends Error {
  name = "OperatorError";
}

/** DML_BINDING_PROPERTIES: the bytes of the temporary buffer a dispatch needs (0: none), and of the persistent one (0). */
export const bindingProperties = Object.freeze({ temporaryResourceSize: operator.temporaryBytes, persistentResourceSize: 0 });

const fail = (message) => { throw new OperatorError(message); };
const round = (n, to) => Math.ceil(n / to) * to;
const shown = (x) => (x && typeof x === "object" ? x.constructor?.name ?? "object" : `${typeof x} ${x}`);

function webgpu() {
  return globalThis.navigator?.gpu ?? fail("WebGPU is not available here: navigator.gpu is undefined (a browser " +
    "without WebGPU, WebGPU turned off, or a page that is not a secure context: serve it over https or from localhost)");
}

/** What a device or adapter lacks of what the plan needs: a message, or "". */
function lacking({ limits, features }) {
  for (const [name, value] of Object.entries(operator.limits)) {
    const least = name.startsWith("max");
    if (!(least ? limits[name] >= value : limits[name] <= value)) {
      return `its ${name} is ${limits[name]}, but this operator needs ${least ? "at least" : "at most"} ${value}`;
    }
  }
  const missing = operator.features.find((f) => !features.has(f));
  return missing ? `it lacks the feature "${missing}", which the passes use` : "";
}

/** A GPUDevice of navigator.gpu's adapter, with the limits and features this operator needs. */
export async function requestDevice(adapterOptions = {}) {
  const adapter = await webgpu().requestAdapter(adapterOptions) ??
    fail("navigator.gpu.requestAdapter() gave no adapter: WebGPU is here, but no GPU is available to this page");
  const short = lacking(adapter);
  if (short) fail(`the adapter cannot run this operator: ${short}`);
  return adapter.requestDevice({ requiredLimits: { ...operator.limits }, requiredFeatures: operator.features });
}

/**
 * The pipeline of a WGSL text, made once per device for every dmlgpu module on it, its layout
 * made from the plan's slots (`operator.bindings`: [binding, slot, type] each; the slot
 * "input_words" is the input's range again, which a pass reading it in 16-byte quads declares as
 * words, a range may end inside a quad). `shared`: for a pass whose input and output lie in one
 * buffer (WebGPU refuses a buffer bound read-only and writable in one dispatch), the text being
 * the pass's variant whose input is declared read_write and bound once (two writable bindings
 * must not overlap), its input slot then writable and "input_words" a small buffer no shader
 * declares; made at once on first use.
 */
function pipeline(device, text, shared = false) {
  const cache = device[Symbol.for("dmlgpu.pipelines")] ??= new Map();
  const key = (shared ? "shared\n" : "") + text;
  if (cache.has(key)) return cache.get(key);
  const group = device.createBindGroupLayout({
    entries: operator.bindings.map(([binding, slot, type]) => ({
      binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: shared && slot === "input" ? "storage" : type },
    })),
  });
  const module = device.createShaderModule({ code: text });
  const descriptor = { layout: device.createPipelineLayout({ bindGroupLayouts: [group] }), compute: { module } };
  const made = shared ? { pipeline: device.createComputePipeline(descriptor), group }
    : device.createComputePipelineAsync(descriptor).then((p) => ({ pipeline: p, group }), async (err) => {
      cache.delete(key);
      const notes = (await module.getCompilationInfo()).messages.map((m) => `\n${m.lineNum}:${m.linePos} ${m.message}`);
      fail(`a pass did not compile: ${err.message}${notes.join("")}`);
    });
  cache.set(key, made);
  return made;
}

/** A tensor's bindings held to the rules of dmlgpu's binding.py: [buffer, offset, size, bytes used] each. */
function bound(field, value, tensor, device) {
  const list = Array.isArray(value) ? value : [value];
  if (list.length !== tensor.buffers.length) {
    fail(`${field} is ${list.length} bindings, but this tensor is held in ${tensor.buffers.length} buffers (one binding a buffer)`);
  }
  const align = device.limits.minStorageBufferOffsetAlignment;
  return list.map((b, k) => {
    const name = list.length > 1 ? `${field}[${k}]` : field;
    const need = tensor.buffers[k][2];
    const { buffer, offset = 0, size } = b instanceof GPUBuffer ? { buffer: b } : b ?? {};
    if (!(buffer instanceof GPUBuffer)) fail(`${name} must be a GPUBuffer or {buffer, offset, size}, not ${shown(b)}`);
    if (!(buffer.usage & GPUBufferUsage.STORAGE)) fail(`${name}.buffer has usage ${buffer.usage}, but it needs STORAGE`);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset % align) {
      fail(`${name}.offset is ${offset}, but it must be a multiple of the device's minStorageBufferOffsetAlignment (${align})`);
    }
    const room = buffer.size - offset;
    const bytes = size ?? room;
    if (!(bytes <= room)) fail(`${name}.size is ${bytes}, but its buffer holds ${Math.max(room, 0)} bytes from offset ${offset}`);
    if (!(bytes >= need)) fail(`${name}.size is ${bytes}, but it must be at least ${need} (the tensor's bytes)`);
    return [buffer, offset, bytes, need];
  });
}

class CompiledOperator {
  #device; #pipelines; #uniforms; #last = null;

  constructor(device, pipelines, uniforms) {
    [this.#device, this.#pipelines, this.#uniforms] = [device, pipelines, uniforms];
    this.operator = operator;
    this.bindingProperties = bindingProperties;
  }

  /** The clears, and the (pipeline, bind group, grid) of each pass, of a dispatch on these bindings. */
  #bind({ input, output, temporary } = {}) {
    const key = [input, output, temporary].flat().flatMap((b) => [b?.buffer ?? b, b?.offset, b?.size]);
    if (this.#last?.key.length === key.length && this.#last.key.every((v, i) => v === key[i])) return this.#last;
    const device = this.#device;
    if (!input || !output) fail(`the bindings have no ${input ? "output" : "input"}, but a dispatch needs one`);
    const ins = bound("input", input, operator.input, device);
    const outs = bound("output", output, operator.output, device);
    const named = (field, list) => list.map((b, k) => [list.length > 1 ? `${field}[${k}]` : field, b]);
    const ranges = [...named("input", ins), ...named("output", outs)];
    let scratch = null;
    if (operator.temporaryBytes) {
      const t = operator.temporaryBytes;
      temporary ?? fail(`temporary is ${temporary}, but this operator needs a temporary buffer of ${t} bytes ` +
        "(bindingProperties.temporaryResourceSize)");
      const [b] = bound("temporary", temporary, { buffers: [[0, t, t]] }, device);
      scratch = [b[0], b[1], t];
      ranges.push(["temporary", b]);
    }
    ranges.forEach(([a, [buffer, x, , n]], i) => ranges.slice(i + 1).forEach(([b, [other, y, , m]]) => {
      if (buffer === other && x < y + m && y < x + n) {
        fail(`${a} (bytes [${x}, ${x + n}) of its buffer) and ${b} (bytes [${y}, ${y + m})) overlap, but an ` +
          "operator's input, output and temporary must not");
      }
    }));
    const clears = !operator.clearsOutput ? [] : outs.map(([buffer, offset, , need]) => {
      if (!(buffer.usage & GPUBufferUsage.COPY_DST)) {
        fail(`output.buffer has usage ${buffer.usage}, but HARDMAX clears its output first: it needs COPY_DST too`);
      }
      return [buffer, offset, need];  // (whole words, within the binding: bound())
    });
    // A piece's window of a tensor's bindings, to the binding's end in whole words at most, so
    // that nothing past a binding is read or written (binding.py's bases); null: the temporary.
    const window = (list, w) => {
      if (!w) return scratch;
      const [buffer, base, size] = list[w[0]];
      const start = base + w[1];
      return [buffer, start, Math.min(w[2], base + (size & ~3) - start)];
    };
    const steps = operator.pieces.flatMap((piece, i) => piece.passes.map((pass, j) => {
      const read = pass.reads === "input" ? window(ins, piece.input) : scratch;
      const written = pass.writes === "output" ? window(outs, piece.output) : scratch;
      const shared = read[0] === written[0];
      const made = shared ? pipeline(device, SHADERS[pass.sharedShader], true) : this.#pipelines[pass.shader];
      const noInput = () => device[Symbol.for("dmlgpu.noInput")] ??= device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
      const bound = { params: [this.#uniforms[i][j], 0, pass.params.length * 4], input: read, output: written,
        input_words: shared ? [noInput(), 0, 16] : read };
      const entries = operator.bindings.map(([binding, slot]) => {
        const [buffer, offset, size] = bound[slot];
        return { binding, resource: { buffer, offset, size } };
      });
      return [made.pipeline, device.createBindGroup({ layout: made.group, entries }), pass.grid];
    }));
    return this.#last = { key, clears, steps, outs };
  }

  /**
   * Record the dispatch into the caller's encoder (IDMLCommandRecorder::RecordDispatch): for
   * HARDMAX a clearBuffer of the output's bytes, then a compute pass a dispatch; nothing is
   * submitted. `bindings`: {input, output, temporary}, each a GPUBuffer or {buffer, offset, size}
   * (an array of them for a tensor held in several buffers). `timestampWrites` ({querySet,
   * beginningOfPassWriteIndex, endOfPassWriteIndex}): the first index on the first pass, the
   * last on the last.
   */
  record(encoder, bindings, timestampWrites) {
    if (!(encoder instanceof GPUCommandEncoder)) fail(`encoder must be a GPUCommandEncoder, not ${shown(encoder)}`);
    const { clears, steps } = this.#bind(bindings);
    clears.forEach(([buffer, offset, size]) => encoder.clearBuffer(buffer, offset, size));
    steps.forEach(([pipe, group, grid], k) => {
      const writes = timestampWrites && { querySet: timestampWrites.querySet };
      if (writes && k === 0) writes.beginningOfPassWriteIndex = timestampWrites.beginningOfPassWriteIndex;
      if (writes && k === steps.length - 1) writes.endOfPassWriteIndex = timestampWrites.endOfPassWriteIndex;
      const pass = encoder.beginComputePass(writes ? { timestampWrites: writes } : {});
      pass.setPipeline(pipe);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(...grid);
      pass.end();
    });
  }

  /**
   * Record, submit, and resolve to the output tensor's bytes read back as a typed array of its
   * type (FLOAT16: a Uint16Array of the bits; 64-bit: BigInt64Array, BigUint64Array). The
   * output's buffers need COPY_SRC usage.
   */
  async run(bindings) {
    const device = this.#device;
    const encoder = device.createCommandEncoder();
    this.record(encoder, bindings);
    const { bytes, typedArray, buffers } = operator.output;
    // Each output buffer's bytes go to a place of their own in the staging buffer (a copy's
    // offsets are whole words, and a buffer's first byte in the tensor need not be: a FLOAT16
    // tensor cut between two elements of a word), then to the tensor's bytes in order, a later
    // buffer's over an earlier's where their spans meet (as the Python runner reads them).
    const places = [];
    let staged = 0;
    this.#last.outs.forEach(([buffer, offset, , need]) => {
      if (!(buffer.usage & GPUBufferUsage.COPY_SRC)) fail(`output.buffer has usage ${buffer.usage}, but run() needs COPY_SRC`);
      places.push([buffer, offset, staged, need]);
      staged += need;
    });
    const staging = device.createBuffer({ size: round(staged || 16, 16), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    try {
      places.forEach(([buffer, offset, at, size]) => encoder.copyBufferToBuffer(buffer, offset, staging, at, size));
      device.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const mapped = new Uint8Array(staging.getMappedRange());
      const tensor = new Uint8Array(bytes);
      places.forEach(([, , at, size], k) => {
        const first = buffers[k][0];
        tensor.set(mapped.subarray(at, at + Math.min(size, bytes - first)), first);
      });
      const Typed = globalThis[typedArray];
      return new Typed(tensor.buffer, 0, Math.floor(bytes / Typed.BYTES_PER_ELEMENT));
    } finally {
      staging.destroy();
    }
  }

  /**
   * The whole call on buffers of its own: `data` (an ArrayBuffer or a typed array) holds the
   * input tensor's bytes as its descriptor lays them out; resolves as run() does.
   */
  async compute(data) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
        : fail(`data must be an ArrayBuffer or a typed array, not ${shown(data)}`);
    const want = operator.input.bytes;
    if (bytes.length > want || bytes.length < want - 3) {
      fail(`data holds ${bytes.length} bytes, but the input tensor's total_tensor_size_in_bytes is ${want} (less up to 3 of padding)`);
    }
    const device = this.#device;
    const made = [];
    const buffer = (size, usage) => made[made.push(device.createBuffer({ size: round(size || 16, 16), usage })) - 1];
    const { STORAGE, COPY_DST, COPY_SRC } = GPUBufferUsage;
    try {
      const input = operator.input.buffers.map(([first, size]) => {
        const b = buffer(size, STORAGE | COPY_DST);
        const part = new Uint8Array(round(size, 4));
        part.set(bytes.subarray(first, first + size));
        device.queue.writeBuffer(b, 0, part);
        return b;
      });
      const output = operator.output.buffers.map(([, size]) => buffer(size, STORAGE | COPY_SRC | COPY_DST));
      const temporary = operator.temporaryBytes ? buffer(operator.temporaryBytes, STORAGE) : undefined;
      return await this.run({ input, output, temporary });
    } finally {
      this.#last = null;
      made.forEach((b) => b.destroy());
    }
  }

  /** Destroy the parameter buffers (the pipelines stay cached on the device, for other modules). */
  destroy() {
    this.#uniforms.flat().forEach((b) => b.destroy());
    this.#last = null;
  }
}

/**
 * Compile the operator on the caller's GPUDevice: its pipelines (made once per device and WGSL
 * text, shared with every other dmlgpu module on it) and parameter buffers, after checking that
 * the device reaches the limits and has the features the plan needs.
 */
export async function compile(device) {
  if (!globalThis.GPUDevice) webgpu();
  if (!(device instanceof GPUDevice)) fail(`device must be a GPUDevice, not ${shown(device)}`);
  const short = lacking(device);
  if (short) fail(`the device cannot run this operator: ${short} (requestDevice() asks for what it needs)`);
  const used = [...new Set(operator.pieces.flatMap((piece) => piece.passes.map((pass) => pass.shader)))];
  const pipelines = Object.fromEntries(await Promise.all(used.map(async (i) => [i, await pipeline(device, SHADERS[i])])));
  const uniforms = operator.pieces.map((piece) => piece.passes.map(({ params }) => {
    const buffer = device.createBuffer({ size: params.length * 4, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
    new Uint32Array(buffer.getMappedRange()).set(params);
    buffer.unmap();
    return buffer;
  }));
  return new CompiledOperator(device, pipelines, uniforms);
}
