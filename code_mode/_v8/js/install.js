// What the prelude does once the runtime is defined (before buffers.js installs its
// accounting): it hides the globals a program must not have, defines the ones it does,
// and installs the stack-trace formatter.

for (const name of ["console", "Atomics", "SharedArrayBuffer", "WebAssembly"]) {
  delete rtGlobal[name];
}
rtDefineGlobals(); // see globals.js
rtObjectDefineProperty(rtError, "prepareStackTrace", {
  value: rtPrepareStackTrace,
  writable: true,
  configurable: true,
  enumerable: false,
});
