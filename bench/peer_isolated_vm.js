// The peer isolated-vm (V8 isolates inside Node.js), measured on the workloads of
// bench.peers. Run by bench.peers with Node.js, NODE_PATH naming a node_modules folder
// that holds isolated-vm; prints one JSON line.
//
//   node bench/peer_isolated_vm.js '{"cells": 40, "gap": 0.025, ...}'
//
// A W1 cell is a fresh isolate and context, "done" evaluated, the isolate disposed of
// (as each of our cells gets a fresh isolate). W2 calls a host function from inside the
// isolate (an asynchronous ivm.Callback; a synchronous one as well, for reference). W3 is how far a busy loop overshoots a 50 ms
// evaluation timeout.
"use strict";

const ivm = require("isolated-vm");
const { performance } = require("node:perf_hooks");

const STOP_AFTER_MS = 50;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function sleep(seconds) {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

function cell() {
  const start = performance.now();
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  const context = isolate.createContextSync();
  const value = context.evalSync('"done"');
  isolate.dispose();
  const elapsed = (performance.now() - start) / 1000;
  if (value !== "done") throw new Error(`isolated-vm returned ${value}`);
  return elapsed;
}

async function main(params) {
  for (let i = 0; i < 5; i++) cell();
  const paced = [];
  for (let i = 0; i < params.cells; i++) {
    await sleep(params.gap);
    paced.push(cell());
  }
  const burst = [];
  for (let i = 0; i < params.burst_cells; i++) burst.push(cell());

  // A host function called asynchronously (in Node's event loop, while the isolate
  // awaits a promise, as a program awaits a tool), and a synchronous one.
  const perCall = [];
  const perSyncCall = [];
  for (let rep = 0; rep < params.reps; rep++) {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    context.global.setSync("echo", new ivm.Callback((value) => value, { async: true }));
    context.global.setSync("echoSync", new ivm.Callback((value) => value));
    const code = `(async () => { for (let i = 0; i < ${params.calls}; i++) await echo(i); return "done"; })()`;
    let start = performance.now();
    const value = await context.eval(code, { promise: true });
    if (value !== "done") throw new Error("the call loop did not finish");
    perCall.push((performance.now() - start) / 1000 / params.calls);
    const syncCode = `for (let i = 0; i < ${params.calls}; i++) echoSync(i); "done"`;
    start = performance.now();
    if (context.evalSync(syncCode) !== "done") throw new Error("the call loop did not finish");
    perSyncCall.push((performance.now() - start) / 1000 / params.calls);
    isolate.dispose();
  }

  const overshoot = [];
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  const context = isolate.createContextSync();
  for (let rep = 0; rep < params.stop_reps; rep++) {
    const start = performance.now();
    try {
      context.evalSync("while (true) {}", { timeout: STOP_AFTER_MS });
      throw new Error("the busy loop was not stopped");
    } catch (error) {
      if (!/timed out/i.test(String(error))) throw error;
    }
    overshoot.push((performance.now() - start - STOP_AFTER_MS) / 1000);
  }
  isolate.dispose();

  return {
    w1_paced: median(paced),
    w1_burst: median(burst),
    w2: median(perCall),
    w2_sync: median(perSyncCall),
    w3: median(overshoot),
    w3_how: `overshoot of a ${STOP_AFTER_MS} ms evaluation timeout`,
    version: require("isolated-vm/package.json").version,
  };
}

main(JSON.parse(process.argv[2])).then(
  (result) => console.log(JSON.stringify(result)),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
