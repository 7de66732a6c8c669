// FinalizationRegistry callbacks that cannot throw. V8 reports an exception thrown by a
// cleanup callback by printing it to the process's stdout, where in process isolation
// nothing of the program should reach (and where, before the frames had a channel of
// their own, it corrupted the worker's frame stream). The constructor is replaced by a
// proxy that hands V8 a wrapper of the program's callback, which catches whatever it
// throws: the error is dropped (a callback runs outside the program's own flow, where
// nothing could have caught it anyway).
// ---------------------------------------------------------------------------
// FinalizationRegistry callbacks that cannot throw.

function rtFinalizationCallback(callback) {
  return function cleanup(held) {
    try {
      rtReflectApply(callback, undefined, [held]);
    } catch {
      // Dropped: see the top of this file.
    }
  };
}

function rtFinalizationConstruct(target, args, newTarget) {
  const callback = args.length > 0 ? args[0] : undefined;
  const given = typeof callback === "function" ? [rtFinalizationCallback(callback)] : args;
  return rtReflectConstruct(target, given, newTarget === this.proxy ? target : newTarget);
}

const rtInstallFinalization = (function rtInstallFinalization() {
  const original = rtFinalizationRegistry;
  const handler = { __proto__: null, construct: rtFinalizationConstruct, proxy: null };
  const value = new rtProxy(original, handler);
  handler.proxy = value;
  rtDefine(original.prototype, "constructor", value, true);
  rtDefine(rtGlobal, "FinalizationRegistry", value, true);
});

rtInstallFinalization();
