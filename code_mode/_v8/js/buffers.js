// ArrayBuffer accounting: `memory_limit_bytes` for the memory V8's heap limit misses.
//
// V8's hard limit (mr_set_hard_memory_limit) covers the V8 heap only; the backing stores
// of ArrayBuffers, and so of every typed array, live outside it. The runtime counts
// them per cell against the same number of bytes (separately from the heap). Every way a
// program can make V8 allocate a backing store goes through a wrapper that checks the
// size *before* the allocation. A cell that would go over fails: the host hears a
// `memory` message and ends the cell with the limit's name and value, and the program
// gets a RangeError it cannot recover from (every later effect of the cell is dropped
// and the host stops it).
//
// Counted, per live buffer: the `byteLength` of a fixed-length buffer of more than 64
// bytes (smaller typed arrays live on the V8 heap, which the heap limit covers), and for
// a resizable buffer its `maxByteLength` rounded up to pages, from the start: V8
// reserves that much address space at once, in a sandbox that every isolate of the
// process shares, so `resize` needs no check of its own.
//
// The allocation paths:
// * the `ArrayBuffer` and typed-array constructors: the globals are replaced by
//   wrappers (bound functions, so they print as native code) that are also each
//   prototype's `constructor`, and so every species default a program can name; the
//   originals stay in this closure. `%TypedArray%.from` / `of`, `subarray` and a
//   `class X extends Uint8Array` construct through them;
// * methods that allocate with the original constructor whatever the program does:
//   `ArrayBuffer.prototype.transfer` / `transferToFixedLength`,
//   `%TypedArray%.prototype.toReversed` / `toSorted` / `with`,
//   `Uint8Array.fromBase64` / `fromHex`;
// * species methods, which fall back to the original constructor when a program hides
//   the species (`constructor` set to `undefined`, a null prototype...):
//   `ArrayBuffer.prototype.slice`, `%TypedArray%.prototype.slice` / `map` / `filter`.
//   Their result size is checked ahead; a result made by the original constructor is
//   counted when the method returns.
// The methods are replaced by proxies of the originals (same name, length, `toString`).
// A program may overwrite any of these on the prototypes or the global object: it only
// loses the built-in, never reaches the original.
//
// Credit: each counted buffer has a WeakRef, which V8 empties when a collection finds
// the buffer dead. The runtime walks them now and then (as its list of records doubles)
// and, before failing a check, forces a full collection (V8's gc extension under a
// private name, see V8_FLAGS in _native_library.py) and walks them again. A WeakRef
// keeps its target alive until the current job ends, so buffers dropped since the
// program last waited for the host (a tool call, a timer) still count: churning more
// than the limit without ever awaiting one fails the cell. (A FinalizationRegistry
// would not credit sooner, its callbacks run as tasks between host commands too, and
// V8 reports them on stderr when the end of a cell cuts them short.)
//
// This file installs the wrappers and settles the common cases that allocate nothing
// to count (tiny typed arrays, views of a buffer). The rest, in buffers_impl.js, is
// compiled on first use (rtCompileLazy): _prelude.py places its source in a comment, in
// the body of `rtBuffersImplSource`, after the files of the prelude.

const rtTypedArrayPrototype = rtObjectGetPrototypeOf(rtUint8Array.prototype);
const rtBufferPrototype = rtArrayBuffer.prototype;
// Compiled ahead, as every function the prelude itself calls (see "Compiled ahead" in
// builtins.js): a function declared plainly is pre-parsed with the prelude and parsed
// again at its first call, here while the prelude runs.
const rtGetter = (function rtGetter(object, key) {
  return rtObjectGetOwnPropertyDescriptor(object, key).get;
});
const rtBufferByteLength = rtGetter(rtBufferPrototype, "byteLength");
const rtTypedArrayTag = rtGetter(rtTypedArrayPrototype, Symbol.toStringTag);

let rtMemoryLimitBytes = Infinity; // memory_limit_bytes, set by the start command
const RT_ELEMENT_SIZE = { __proto__: null }; // typed-array name -> bytes per element
const RT_MEMORY_MESSAGE = '{"t":"memory"}';

// The cell is over its budget: tell the host (which fails the cell, naming the limit
// and its value) and refuse the allocation. The message is queued before the cell is
// marked finished, so at the edge of the stack, where even that can fail, nothing is
// lost: a later allocation tries again.
function rtBufferBreach() {
  if (!rtFinished) {
    rtEnqueue(RT_MEMORY_MESSAGE, true);
    rtFinished = true;
    try {
      rtFlush();
    } catch {
      // Out of stack: the message stays queued for the next flush (the host's probe).
    }
  }
  throw new rtRangeError("Array buffer allocation failed");
}

function rtIsArrayBuffer(value) {
  return rtBranded(rtBufferByteLength, value);
}

// Whether a built-in `method` that checks its receiver's internal slots accepts `value`
// (an ArrayBuffer's `byteLength`, a `String` object's `valueOf`, ...).
function rtBranded(method, value) {
  try {
    rtReflectApply(method, value, []);
    return true;
  } catch {
    return false;
  }
}

// What buffers_impl.js works with, captured now: by the time it is compiled, the program
// may have replaced any global, prototype method or accessor.
const RT_BUFFER_DEPS = {
  __proto__: null,
  reflectApply: rtReflectApply,
  reflectConstruct: rtReflectConstruct,
  mathTrunc: rtMathTrunc,
  mathCeil: rtMathCeil,
  mathFloor: rtMathFloor,
  arrayIsArray: rtArrayIsArray,
  objectSetPrototypeOf: rtObjectSetPrototypeOf,
  typeError: rtTypeError,
  string: rtString,
  weakRef: rtWeakRef,
  weakRefDeref: rtWeakRefDeref,
  symbolIterator: Symbol.iterator,
  arrayValues: rtArrayValues,
  typedArrayTag: rtTypedArrayTag,
  typedArrayLength: rtGetter(rtTypedArrayPrototype, "length"),
  typedArrayByteLength: rtGetter(rtTypedArrayPrototype, "byteLength"),
  typedArrayBuffer: rtGetter(rtTypedArrayPrototype, "buffer"),
  bufferByteLength: rtBufferByteLength,
  bufferMaxByteLength: rtGetter(rtBufferPrototype, "maxByteLength"),
  bufferResizable: rtGetter(rtBufferPrototype, "resizable"),
  isArrayBuffer: rtIsArrayBuffer,
  newList: rtNewQueue,
  breach: rtBufferBreach,
  heapBreach: () => rtHeapBreach(), // allocations.js
  collectGarbage: rtCollectGarbage,
  elementSize: RT_ELEMENT_SIZE,
  limit: Infinity, // set from rtMemoryLimitBytes on first use (after the start command)
};

// A file compiled on first use (buffers_impl.js, allocations_impl.js): _prelude.py puts
// its source in a comment that is the whole body of `holder` (`function rtXSource() {/*`,
// the file's lines, `*/}`), which V8's parser skips; here it becomes the body of
// `function (rt)`, called with `deps`. The caller keeps only a complete compilation:
// one cut short (out of stack) throws, and is tried again at the next use.
function rtCompileLazy(holder, deps) {
  const text = rtReflectApply(rtFunctionToString, holder, []);
  const start = rtReflectApply(rtStringIndexOf, text, ["/*"]) + 2;
  const source = rtReflectApply(rtStringSlice, text, [start, text.length - 3]);
  return rtReflectApply(new rtFunction("rt", source), undefined, [deps]);
}

// The accounting proper (buffers_impl.js), compiled the first time it is needed.
let rtBuffersImpl = null;

function rtBuffers() {
  if (rtBuffersImpl !== null) return rtBuffersImpl;
  RT_BUFFER_DEPS.limit = rtMemoryLimitBytes;
  rtBuffersImpl = rtCompileLazy(rtBuffersImplSource, RT_BUFFER_DEPS);
  return rtBuffersImpl;
}

// ---------------------------------------------------------------------------
// Installation.

const rtDefine = (function rtDefine(object, key, value, writable) {
  rtObjectDefineProperty(object, key, {
    __proto__: null,
    value,
    writable,
    enumerable: false,
    configurable: true,
  });
});

const rtWrapMethod = (function rtWrapMethod(object, key, apply) {
  const descriptor = rtObjectGetOwnPropertyDescriptor(object, key);
  if (descriptor === undefined) return; // not in this V8
  // No prototype: a program's `Object.prototype.get` is no trap.
  rtDefine(object, key, new rtProxy(descriptor.value, { __proto__: null, apply }), true);
});

// Replaces the global constructor `original` with `wrapper`, a bound function of
// `inner` (which then sees `new.target` as the program's subclass, or as `inner`).
// (No program code has run yet: the descriptors read here are plain.)
const rtWrapConstructor = (function rtWrapConstructor(original, inner) {
  const prototype = original.prototype;
  inner.prototype = prototype; // `instanceof` of a bound function asks its target
  rtObjectSetPrototypeOf(inner, rtObjectGetPrototypeOf(original)); // the bound one's, too
  const wrapper = rtReflectApply(rtFunctionBind, inner, [undefined]);
  rtDefine(wrapper, "name", original.name, false);
  rtDefine(wrapper, "length", original.length, false);
  const keys = rtReflectOwnKeys(original);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]; // `prototype` (not writable, not configurable), statics
    if (key !== "length" && key !== "name") {
      rtObjectDefineProperty(wrapper, key, rtObjectGetOwnPropertyDescriptor(original, key));
    }
  }
  rtDefine(prototype, "constructor", wrapper, true);
  rtDefine(rtGlobal, original.name, wrapper, true);
});

// `new.target` is `inner` for `new Uint8Array(...)` itself: the original is then the
// new target (V8's fast path), and the program's subclass otherwise. No argument, a
// length of at most 64 bytes and a view of a buffer allocate nothing to count.
const rtTypedArrayConstructor = (function rtTypedArrayConstructor(original, size) {
  return function inner() {
    // Called without `new`: the original throws its TypeError.
    if (new.target === undefined) return rtReflectApply(original, undefined, arguments);
    const newTarget = new.target === inner ? original : new.target;
    const source = arguments.length > 0 ? arguments[0] : undefined;
    if (
      arguments.length === 0 ||
      (typeof source === "number" && source >= 0 && source * size <= 64) ||
      (typeof source === "object" &&
        source !== null &&
        rtReflectApply(rtTypedArrayTag, source, []) === undefined &&
        !rtArrayIsArray(source) &&
        rtIsArrayBuffer(source))
    ) {
      return rtReflectConstruct(original, arguments, newTarget);
    }
    return rtBuffers().constructTypedArray(original, size, arguments, newTarget);
  };
});

// A method's `apply` trap: the accounting's method of the same name.
const rtLazyTrap = (function rtLazyTrap(name) {
  return (target, thisArg, args) => rtBuffers()[name](target, thisArg, args);
});

const rtInstallBufferAccounting = (function rtInstallBufferAccounting() {
  rtWrapConstructor(rtArrayBuffer, function inner() {
    if (new.target === undefined) return rtReflectApply(rtArrayBuffer, undefined, arguments);
    const newTarget = new.target === inner ? rtArrayBuffer : new.target;
    const length = arguments.length > 0 ? arguments[0] : undefined;
    if (arguments.length < 2 && typeof length === "number" && length >= 0 && length <= 64) {
      return rtReflectConstruct(rtArrayBuffer, arguments, newTarget);
    }
    return rtBuffers().constructArrayBuffer(rtArrayBuffer, arguments, newTarget);
  });
  // Before Uint8Array is replaced: its statics are copied to the wrapper.
  rtWrapMethod(rtUint8Array, "fromBase64", rtLazyTrap("fromBase64"));
  rtWrapMethod(rtUint8Array, "fromHex", rtLazyTrap("fromHex"));
  const names = [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Float16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
  ];
  for (let i = 0; i < names.length; i++) {
    const original = rtGlobal[names[i]];
    if (typeof original !== "function") continue; // Float16Array is recent
    RT_ELEMENT_SIZE[names[i]] = original.BYTES_PER_ELEMENT;
    rtWrapConstructor(original, rtTypedArrayConstructor(original, original.BYTES_PER_ELEMENT));
  }
  rtWrapMethod(rtBufferPrototype, "slice", rtLazyTrap("bufferSlice"));
  rtWrapMethod(rtBufferPrototype, "transfer", rtLazyTrap("transfer"));
  rtWrapMethod(rtBufferPrototype, "transferToFixedLength", rtLazyTrap("transferToFixedLength"));
  const methods = ["slice", "map", "filter", "toReversed", "toSorted", "with"];
  for (let i = 0; i < methods.length; i++) {
    rtWrapMethod(rtTypedArrayPrototype, methods[i], rtLazyTrap(methods[i]));
  }
});

rtInstallBufferAccounting();
