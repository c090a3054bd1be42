// poolgpu.mjs: runs a poolgpu bundle (manifest.json and its .wgsl files, written by
// op.export or pg.export in Python) on a WebGPU GPUDevice. No dependencies: it runs in
// browsers, in Node with the `webgpu` package (see run-node.mjs), in Deno.
//
//   import { loadBundle } from './poolgpu.mjs';
//   const op = await loadBundle(device, 'bundle/');            // a URL, or a reader function
//   const { output } = await op.run({ input: bytes });          // ArrayBuffers of DirectML bytes
//
// Tensors are their DirectML buffer bytes: the elements at their strides, little-endian,
// padded to 4 bytes (the manifest's byte_size). The format is documented in docs/portable.md.

export const FORMAT = 'poolgpu-bundle/1';

// WebGPU's flag values (fixed by the specification), so that no globals are needed.
const BUFFER = { MAP_READ: 0x1, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80 };
const MAP_READ = 0x1;
const COMPUTE = 0x4;
const ALIGNMENT = 'minStorageBufferOffsetAlignment';
// WebGPU's default limits: a bundle asking for no more runs on every device.
const DEFAULT_LIMITS = {
  minStorageBufferOffsetAlignment: 256,
  maxStorageBufferBindingSize: 134217728,
  maxBufferSize: 268435456,
  maxStorageBuffersPerShaderStage: 8,
  maxComputeWorkgroupsPerDimension: 65535,
  maxComputeWorkgroupSizeX: 256,
  maxComputeWorkgroupSizeY: 256,
  maxComputeWorkgroupSizeZ: 64,
  maxComputeInvocationsPerWorkgroup: 256,
};

/** A bundle's manifest and shader sources: `{manifest, shaders: Map(file -> WGSL)}`.
 *  `source`: the bundle directory's URL (a string or URL; fetched), a function
 *  `name => Promise<string>` reading a file of the bundle, or an already read bundle. */
export async function readBundle(source) {
  if (source && typeof source === 'object' && source.manifest && source.shaders) return source;
  const read = reader(source);
  const manifest = JSON.parse(await read('manifest.json'));
  if (manifest.format !== FORMAT) {
    throw new Error(`not a ${FORMAT} bundle (format: ${JSON.stringify(manifest.format)}); ` +
                    'export it again with this version of poolgpu');
  }
  const shaders = new Map(await Promise.all(manifest.shaders.map(async (file) => [file, await read(file)])));
  return { manifest, shaders };
}

/** The `requiredLimits` to ask `adapter.requestDevice` for so that the device runs this
 *  bundle: only those beyond WebGPU's defaults. */
export function requiredLimits(manifest) {
  const limits = {};
  for (const [name, value] of Object.entries(manifest.limits ?? {})) {
    const beyond = name === ALIGNMENT ? value < DEFAULT_LIMITS[name] : value > (DEFAULT_LIMITS[name] ?? 0);
    if (beyond) limits[name] = value;
  }
  return limits;
}

/** Compile a bundle on `device` (its shaders, pipelines and uniform buffers). Resolves to a
 *  BundleOp; rejects naming the shader that fails to compile or the limit the device lacks. */
export async function loadBundle(device, source) {
  const { manifest, shaders } = await readBundle(source);
  checkLimits(device, manifest.limits ?? {});
  device.pushErrorScope('validation');
  let planned;
  let uniforms;
  let scopeError;
  try {
    ({ planned, uniforms } = await build(device, manifest, shaders));
  } finally {
    scopeError = await device.popErrorScope();
  }
  if (scopeError) throw new Error(`the bundle's pipelines do not build on this device: ${scopeError.message}`);
  return new BundleOp(device, manifest, planned, uniforms);
}

// The shader modules (their compiler's errors raised), one pipeline per shader, constants
// and binding types, one uniform buffer per distinct uniform block.
async function build(device, manifest, shaders) {
  const modules = new Map();
  for (const [file, code] of shaders) modules.set(file, device.createShaderModule({ label: file, code }));
  for (const [file, module] of modules) {
    const info = module.getCompilationInfo ? await module.getCompilationInfo() : { messages: [] };
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      throw new Error(`${file} does not compile:\n` +
                      errors.map((m) => `  ${file}:${m.lineNum}:${m.linePos}: ${m.message}`).join('\n'));
    }
  }
  const layouts = new Map();
  const pipelines = new Map();
  const uniforms = new Map();
  const planned = [];
  for (const [index, dispatch] of manifest.dispatches.entries()) {
    const types = dispatch.bindings.map((b) => `${b.binding}:${b.type}`).join(',');
    if (!layouts.has(types)) {
      const entries = dispatch.bindings.map((b) => ({ binding: b.binding, visibility: COMPUTE, buffer: { type: b.type } }));
      const group = device.createBindGroupLayout({ entries });
      layouts.set(types, { group, pipeline: device.createPipelineLayout({ bindGroupLayouts: [group] }) });
    }
    const layout = layouts.get(types);
    const key = `${dispatch.shader}|${dispatch.entry_point}|${JSON.stringify(dispatch.constants)}|${types}`;
    if (!pipelines.has(key)) {
      pipelines.set(key, device.createComputePipelineAsync({
        label: `${dispatch.shader} (dispatch ${index})`,
        layout: layout.pipeline,
        compute: { module: modules.get(dispatch.shader), entryPoint: dispatch.entry_point, constants: dispatch.constants },
      }).catch((error) => { throw new Error(`${dispatch.shader}: no pipeline (${error.message})`); }));
    }
    for (const b of dispatch.bindings) {
      if (b.type === 'uniform' && !uniforms.has(b.bytes)) uniforms.set(b.bytes, uniformBuffer(device, b.bytes));
    }
    planned.push({ dispatch, layout: layout.group, key });
  }
  const settled = await Promise.allSettled([...pipelines.values()]);
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  const built = new Map([...pipelines.keys()].map((key, i) => [key, settled[i].value]));
  for (const p of planned) p.pipeline = built.get(p.key);
  return { planned, uniforms };
}

/** A loaded bundle: `run({role: bytes})` resolves to `{role: ArrayBuffer}` of its outputs. */
export class BundleOp {
  constructor(device, manifest, planned, uniforms) {
    this.device = device;
    this.manifest = manifest;
    this.inputs = manifest.tensors.filter((t) => t.kind === 'input');
    this.outputs = manifest.tensors.filter((t) => t.kind === 'output');
    this._planned = planned;
    this._uniforms = uniforms;
    // scratch lives as long as the op (the passes write every scratch byte they read)
    this._scratch = new Map(manifest.tensors.filter((t) => t.kind === 'scratch')
      .map((t) => [t.role, storageBuffer(device, t)]));
  }

  /** Run the operator on `inputs` (role -> ArrayBuffer, typed array or DataView: each
   *  input's DirectML bytes, at most its byte_size). Resolves to role -> ArrayBuffer of
   *  each output's byte_size bytes. */
  async run(inputs) {
    const device = this.device;
    const unknown = Object.keys(inputs).filter((role) => !this.inputs.some((t) => t.role === role));
    if (unknown.length) throw new Error(`run: unknown input(s) ${unknown.join(', ')}; this op takes ${this._roles()}`);
    const given = this.inputs.map((t) => {
      if (!(t.role in inputs)) throw new Error(`run: no bytes for input ${t.role}; this op takes ${this._roles()}`);
      return [t, asBytes(inputs[t.role], t)];
    });
    const buffers = new Map(this._scratch);
    const made = [];
    try {
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      let readbacks;
      try {
        readbacks = this._submit(given, buffers, made);
      } finally {
        const invalid = await device.popErrorScope();
        const memory = await device.popErrorScope();
        if (invalid || memory) throw new Error(`run: ${(invalid || memory).message}`);
      }
      const results = {};
      await Promise.all(readbacks.map(async ([t, staging]) => {
        await staging.mapAsync(MAP_READ);
        results[t.role] = staging.getMappedRange().slice(0, t.byte_size);
        staging.unmap();
      }));
      return results;
    } finally {
      for (const buffer of made) buffer.destroy();
    }
  }

  // Upload the inputs, record every dispatch and the outputs' copies into one command
  // buffer, submit it; returns [tensor, staging buffer] per output.
  _submit(given, buffers, made) {
    const device = this.device;
    const buffer = (t) => {
      const created = storageBuffer(device, t);
      buffers.set(t.role, created);
      made.push(created);
      return created;
    };
    for (const [t, bytes] of given) device.queue.writeBuffer(buffer(t), 0, bytes);
    for (const t of this.outputs) buffer(t);
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const { dispatch, layout, pipeline } of this._planned) {
      const entries = dispatch.bindings.map((b) => ({
        binding: b.binding,
        resource: b.type === 'uniform'
          ? { buffer: this._uniforms.get(b.bytes) }
          : { buffer: buffers.get(b.tensor), offset: b.offset, size: b.size },
      }));
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, device.createBindGroup({ layout, entries }));
      pass.dispatchWorkgroups(...dispatch.workgroups);
    }
    pass.end();
    const readbacks = this.outputs.map((t) => {
      const size = round(t.byte_size, 4);
      const staging = device.createBuffer({ size, usage: BUFFER.MAP_READ | BUFFER.COPY_DST });
      encoder.copyBufferToBuffer(buffers.get(t.role), 0, staging, 0, size);
      made.push(staging);
      return [t, staging];
    });
    device.queue.submit([encoder.finish()]);
    return readbacks;
  }

  /** Free the op's uniform and scratch buffers. */
  destroy() {
    for (const buffer of [...this._uniforms.values(), ...this._scratch.values()]) buffer.destroy();
  }

  _roles() {
    return this.inputs.map((t) => t.role).join(', ');
  }
}

function reader(source) {
  if (typeof source === 'function') return source;
  if (typeof source !== 'string' && !(source instanceof URL)) {
    throw new TypeError('a bundle source is a URL (string or URL), a function name => Promise<string>, or readBundle()\'s result');
  }
  let text = String(source);
  if (text.endsWith('manifest.json')) text = text.slice(0, -'manifest.json'.length);
  if (!text.endsWith('/')) text += '/';
  const base = new URL(text, globalThis.location?.href);
  return async (name) => {
    const url = new URL(name, base);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.text();
  };
}

function checkLimits(device, limits) {
  for (const [name, value] of Object.entries(limits)) {
    const has = device.limits[name];
    if (has === undefined) continue;
    const ok = name === ALIGNMENT ? value % has === 0 : value <= has;
    if (!ok) {
      throw new Error(`the device's ${name} is ${has}, the bundle needs ${value}: request the device with ` +
                      'requiredLimits: requiredLimits(manifest) (or export the bundle for smaller limits)');
    }
  }
}

function storageBuffer(device, t) {
  return device.createBuffer({ label: t.role, size: t.buffer_size, usage: BUFFER.STORAGE | BUFFER.COPY_SRC | BUFFER.COPY_DST });
}

function uniformBuffer(device, hex) {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(2 * i, 2), 16);
  const buffer = device.createBuffer({ size: bytes.length, usage: BUFFER.UNIFORM | BUFFER.COPY_DST, mappedAtCreation: true });
  new Uint8Array(buffer.getMappedRange()).set(bytes);
  buffer.unmap();
  return buffer;
}

// An input's bytes, zero-padded to a multiple of 4 (what writeBuffer takes).
function asBytes(value, t) {
  let bytes;
  if (value instanceof ArrayBuffer) bytes = new Uint8Array(value);
  else if (ArrayBuffer.isView(value)) bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  else throw new TypeError(`run: ${t.role} must be an ArrayBuffer, a typed array or a DataView`);
  const needed = (t.sizes.reduce((sum, size, d) => sum + (size - 1) * t.strides[d], 0) + 1) * t.element_size;
  if (bytes.byteLength < needed || bytes.byteLength > t.byte_size) {
    const range = needed === t.byte_size ? `${needed}` : `${needed} to ${t.byte_size}`;
    throw new RangeError(`run: ${t.role} has ${bytes.byteLength} bytes; its ${t.data_type} elements ` +
                         `${JSON.stringify(t.sizes)} at strides ${JSON.stringify(t.strides)} take ${range}`);
  }
  if (bytes.byteLength % 4 === 0) return bytes;
  const padded = new Uint8Array(round(bytes.byteLength, 4));
  padded.set(bytes);
  return padded;
}

function round(n, multiple) {
  return Math.ceil(n / multiple) * multiple;
}
