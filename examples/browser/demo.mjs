// The page's logic: load a poolgpu bundle (bundle/, or ?bundle=URL), turn an image's pixels
// into its input tensor, run it on this browser's WebGPU device, and show the result.
// The bundle's input and output are images: {1, C, H, W} with C from 1 to 4 (gray, RGB,
// RGBA), UINT8 (0 to 255) or FLOAT32 (0 to 1), at any strides.
import { loadBundle, readBundle, requiredLimits } from '../../js/poolgpu.mjs';

const RUNS = 5;
const bundleUrl = new URL(new URLSearchParams(location.search).get('bundle') ?? 'bundle/', location.href);
const status = document.getElementById('status');

function show(text, error = false) {
  status.textContent = text;
  status.className = error ? 'error' : '';
}

async function setUp() {
  if (!navigator.gpu) {
    throw new Error('this browser offers no WebGPU (navigator.gpu): use a recent Chrome, Edge, Safari or Firefox, ' +
                    'served from http://localhost or https');
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('WebGPU found no adapter on this machine');
  const bundle = await readBundle(bundleUrl);
  const device = await adapter.requestDevice({ requiredLimits: requiredLimits(bundle.manifest) });
  const started = performance.now();
  const op = await loadBundle(device, bundle);
  const loadMs = performance.now() - started;
  const [input] = op.inputs;
  const [output] = op.outputs;
  for (const t of [input, output]) {
    if (t.sizes.length !== 4 || t.sizes[0] !== 1 || t.sizes[1] > 4 || !(t.data_type in CODECS)) {
      throw new Error(`${t.role} is ${t.data_type} ${JSON.stringify(t.sizes)}: this page shows images, ` +
                      '{1, C, H, W} with C from 1 to 4, UINT8 or FLOAT32');
    }
  }
  const info = adapter.info ?? {};
  const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'this GPU';
  return { op, input, output, loadMs, name };
}

// Element values <-> pixel bytes, by data type (little-endian, as DirectML lays them out).
const CODECS = {
  UINT8: { put: (view, e, byte) => view.setUint8(e, byte), get: (view, e) => view.getUint8(e) },
  FLOAT32: {
    put: (view, e, byte) => view.setFloat32(4 * e, byte / 255, true),
    get: (view, e) => Math.round(Math.min(Math.max(view.getFloat32(4 * e, true), 0), 1) * 255),
  },
};

function toTensor(pixels, t) {
  const [, channels, height, width] = t.sizes;
  const [, sc, sh, sw] = t.strides;
  const bytes = new ArrayBuffer(t.byte_size);
  const view = new DataView(bytes);
  const { put } = CODECS[t.data_type];
  for (let h = 0; h < height; h++) {
    for (let w = 0; w < width; w++) {
      const p = 4 * (h * width + w);
      const rgba = pixels.data;
      for (let c = 0; c < channels; c++) {
        const value = channels === 1 ? Math.round((rgba[p] + rgba[p + 1] + rgba[p + 2]) / 3) : rgba[p + c];
        put(view, c * sc + h * sh + w * sw, value);
      }
    }
  }
  return bytes;
}

function toPixels(bytes, t) {
  const [, channels, height, width] = t.sizes;
  const [, sc, sh, sw] = t.strides;
  const view = new DataView(bytes);
  const { get } = CODECS[t.data_type];
  const image = new ImageData(width, height);
  for (let h = 0; h < height; h++) {
    for (let w = 0; w < width; w++) {
      const p = 4 * (h * width + w);
      const at = (c) => get(view, c * sc + h * sh + w * sw);
      const rgb = channels >= 3 ? [at(0), at(1), at(2)] : Array(3).fill(at(0));
      image.data.set([...rgb, channels === 4 ? at(3) : channels === 2 ? at(1) : 255], p);
    }
  }
  return image;
}

function base64(bytes) {
  const array = new Uint8Array(bytes);
  let text = '';
  for (let i = 0; i < array.length; i += 0x8000) text += String.fromCharCode(...array.subarray(i, i + 0x8000));
  return btoa(text);
}

function describe(manifest) {
  const fields = manifest.description.fields;
  const times = (values) => values.join(' × ');
  const geometry = fields.window_size ? `, ${times(fields.window_size)} windows, strides ${times(fields.strides)}` : '';
  return `${manifest.operator}${geometry}`;
}

// Draw `source` (an image or bitmap) over the input canvas, cropped to its aspect; run the
// op RUNS times on its pixels; show the result. Returns what the tests check.
async function pool(demo, source) {
  const { op, input, output } = demo;
  const [, , height, width] = input.sizes;
  const canvas = document.getElementById('input');
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext('2d', { willReadFrequently: true });
  const scale = Math.max(width / source.width, height / source.height);
  const w = source.width * scale;
  const h = source.height * scale;
  context.clearRect(0, 0, width, height);
  context.drawImage(source, (width - w) / 2, (height - h) / 2, w, h);
  const tensor = toTensor(context.getImageData(0, 0, width, height), input);
  let result;
  const times = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    result = await op.run({ [input.role]: tensor });
    times.push(performance.now() - started);
  }
  const milliseconds = times.sort((a, b) => a - b)[Math.floor(RUNS / 2)];
  const out = document.getElementById('output');
  out.width = output.sizes[3];
  out.height = output.sizes[2];
  out.getContext('2d').putImageData(toPixels(result[output.role], output), 0, 0);
  document.getElementById('input-caption').textContent = `Input: ${width} × ${height}, ${input.data_type}`;
  document.getElementById('output-caption').textContent =
    `Result: ${output.sizes[3]} × ${output.sizes[2]} (${describe(op.manifest)})`;
  show(`Pooled on ${demo.name} in ${milliseconds.toFixed(2)} ms per run (median of ${RUNS}, upload and ` +
       `read-back included); loading and compiling the bundle took ${demo.loadMs.toFixed(0)} ms.`);
  return { input: base64(tensor), output: base64(result[output.role]), milliseconds, adapter: demo.name };
}

async function sample() {
  const image = new Image();
  image.src = 'sample.png';
  await image.decode();
  return image;
}

const ready = setUp();
// The sample's run, for the tests (and the page's first picture).
window.poolgpuDemo = ready.then(async (demo) => pool(demo, await sample()));
window.poolgpuDemo.catch((error) => show(`Could not run the bundle: ${error.message}`, true));

document.getElementById('sample').addEventListener('click', async () => {
  try {
    await pool(await ready, await sample());
  } catch (error) {
    show(`Could not run the bundle: ${error.message}`, true);
  }
});
document.getElementById('file').addEventListener('change', async (event) => {
  const [file] = event.target.files;
  if (!file) return;
  try {
    await pool(await ready, await createImageBitmap(file));
  } catch (error) {
    show(`Could not pool ${file.name}: ${error.message}`, true);
  }
});
