#!/usr/bin/env node
// Runs poolgpu bundles under Node with the `webgpu` package (Dawn):
//
//   node js/run-node.mjs BUNDLE INPUTS OUTPUTS [BUNDLE INPUTS OUTPUTS ...]
//
// For each bundle directory, reads INPUTS/<role>.bin for every input of its manifest (the
// tensor's DirectML bytes), runs it, and writes OUTPUTS/<role>.bin for every output. Several
// bundles share one process and device. A bundle that fails writes OUTPUTS/error.txt, the
// others go on; the exit status is 1 if any failed, 2 for a usage error, 3 where no WebGPU
// adapter is found.
//
// Set-up: `npm install` in js/. Dawn's Vulkan backend needs Mesa >= 25 for the software
// driver (lavapipe): where the system's drivers give no adapter, this script retries with the
// Mesa that scripts/mesa25.sh unpacks into .cache/mesa25 (or POOLGPU_MESA_DIR), and otherwise
// says what to run.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadBundle, readBundle, requiredLimits } from './poolgpu.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const RETRIED = 'POOLGPU_NODE_MESA_RETRY';

function usage(message) {
  console.error(`run-node: ${message}\nusage: node js/run-node.mjs BUNDLE INPUTS OUTPUTS [BUNDLE INPUTS OUTPUTS ...]`);
  process.exit(2);
}

// The environment that points the Vulkan loader at a private Mesa (its lavapipe ICD first,
// its libraries first), or null where there is none.
function privateMesa() {
  const directory = process.env.POOLGPU_MESA_DIR || resolve(HERE, '..', '.cache', 'mesa25');
  const icd = join(directory, 'lvp_icd.json');
  if (!existsSync(icd)) return null;
  const libraries = [];
  const walk = (path) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.name === 'libvulkan_lvp.so') libraries.push(path);
    }
  };
  if (existsSync(join(directory, 'root'))) walk(join(directory, 'root'));
  const path = [...libraries, ...(process.env.LD_LIBRARY_PATH || '').split(':').filter(Boolean)].join(':');
  return { VK_ICD_FILENAMES: icd, VK_DRIVER_FILES: icd, LD_LIBRARY_PATH: path, directory };
}

// Dawn's instance and adapter must outlive the device (collected early, they crash it)
let gpu;
let adapter;

// Sets `adapter`, or exits saying what to install.
async function findAdapter(webgpu) {
  gpu = webgpu.create([]);
  adapter = await gpu.requestAdapter();
  if (!adapter) {
    const mesa = process.env[RETRIED] ? null : privateMesa();
    if (mesa) {
      // the loader reads these when the process starts: run again with them
      console.error(`run-node: no WebGPU adapter with the system's drivers; retrying with the Mesa in ${mesa.directory}`);
      const { directory, ...env } = mesa;
      const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
                              { stdio: 'inherit', env: { ...process.env, ...env, [RETRIED]: '1' } });
      process.exit(child.status ?? 1);
    }
    console.error(
      'run-node: no WebGPU adapter. Dawn needs a Vulkan driver (Metal on macOS, D3D12 on Windows); ' +
      'its software Vulkan driver (lavapipe) needs Mesa >= 25.\n' +
      'run-node: on Debian 12, `bash scripts/mesa25.sh` unpacks Mesa 25 into .cache/mesa25 (used here ' +
      'automatically); elsewhere install Mesa >= 25 (mesa-vulkan-drivers) or a GPU driver, or point ' +
      'VK_ICD_FILENAMES at a driver\'s ICD file.');
    process.exit(3);
  }
}

// The limits to request so that the device runs every bundle the adapter can run: the
// largest maxima and the smallest alignment they ask for, within the adapter's.
function deviceLimits(adapter, manifests) {
  const limits = {};
  for (const manifest of manifests) {
    for (const [name, value] of Object.entries(requiredLimits(manifest))) {
      const alignment = name.startsWith('min');
      const merged = !(name in limits) ? value : alignment ? Math.min(limits[name], value) : Math.max(limits[name], value);
      limits[name] = alignment ? Math.max(merged, adapter.limits[name]) : Math.min(merged, adapter.limits[name]);
    }
  }
  return limits;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length === 0 || args.length % 3 !== 0) usage('expected BUNDLE INPUTS OUTPUTS, one triple per bundle');
  let webgpu;
  try {
    webgpu = await import('webgpu');
  } catch (error) {
    console.error(`run-node: cannot load the \`webgpu\` package (${error.message}); run \`npm install\` in ${HERE}`);
    process.exit(2);
  }
  const jobs = [];
  for (let i = 0; i < args.length; i += 3) jobs.push(args.slice(i, i + 3).map((p) => resolve(p)));
  const bundles = [];
  for (const [bundle] of jobs) {
    bundles.push(await readBundle((name) => readFile(join(bundle, name), 'utf8')).catch((error) => error));
  }
  await findAdapter(webgpu);
  const limits = deviceLimits(adapter, bundles.filter((b) => !(b instanceof Error)).map((b) => b.manifest));
  const gpuDevice = await adapter.requestDevice({ requiredLimits: limits });
  gpuDevice.addEventListener?.('uncapturederror', (event) => console.error(`run-node: WebGPU error: ${event.error.message}`));
  let failures = 0;
  for (const [index, [bundle, inputs, outputs]] of jobs.entries()) {
    let op;
    try {
      if (bundles[index] instanceof Error) throw bundles[index];
      op = await loadBundle(gpuDevice, bundles[index]);
      const given = {};
      for (const t of op.inputs) {
        const bytes = await readFile(join(inputs, `${t.role}.bin`));
        given[t.role] = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      }
      const results = await op.run(given);
      await mkdir(outputs, { recursive: true });
      for (const [role, bytes] of Object.entries(results)) await writeFile(join(outputs, `${role}.bin`), new Uint8Array(bytes));
    } catch (error) {
      failures += 1;
      console.error(`run-node: ${bundle}: ${error.message}`);
      await mkdir(outputs, { recursive: true });
      await writeFile(join(outputs, 'error.txt'), `${error.message}\n`);
    } finally {
      op?.destroy();
    }
  }
  gpuDevice.destroy();
  process.exitCode = failures ? 1 : 0;
}

await main();
