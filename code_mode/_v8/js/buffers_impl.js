// The body of the ArrayBuffer accounting (see buffers.js), compiled on first use.
//
// This is the body of `function (rt)`, compiled with the `Function` constructor the
// first time a program allocates something other than a tiny typed array: a cell that
// never does pays nothing for it (V8 compiles the prelude eagerly, see V8_FLAGS in
// _native_library.py). The program may have replaced any global by then, so this code names
// none: everything comes in `rt`, captured by buffers.js before the program ran.
// (`undefined` and `Infinity` cannot be replaced; literals and syntax use the
// intrinsics whatever the globals are.)
"use strict";

const {
  reflectApply,
  reflectConstruct,
  mathTrunc,
  mathCeil,
  mathFloor,
  arrayIsArray,
  objectSetPrototypeOf,
  typeError,
  string,
  weakRef,
  weakRefDeref,
  symbolIterator,
  arrayValues,
  typedArrayTag,
  typedArrayLength,
  typedArrayByteLength,
  typedArrayBuffer,
  bufferByteLength,
  bufferMaxByteLength,
  bufferResizable,
  isArrayBuffer,
  newList,
  breach,
  heapBreach,
  collectGarbage,
  elementSize,
  limit,
} = rt;

const TINY = 64; // V8 keeps typed arrays of up to 64 bytes on its heap
const PAGE = 4096;
const MAX_INDEX = 9007199254740991; // 2 ** 53 - 1, the largest ToIndex allows

// ---------------------------------------------------------------------------
// The count.

let counted = 0; // bytes of live buffers and of allocations under way
// A record { bytes, ref } per counted buffer, in a list that `scan` walks to take back
// the bytes of buffers V8 collected, and on the buffer itself as a private field (a
// WeakMap would cost each allocation more: its entries are ephemerons for the GC).
// Records never leave this closure; only their own properties are read or written.
class StampBase {
  constructor(object) {
    return object;
  }
}
class Stamp extends StampBase {
  #record;
  constructor(object, record) {
    super(object);
    this.#record = record;
  }
  static recordOf(object) {
    return #record in object ? object.#record : undefined;
  }
}
const recordOf = Stamp.recordOf;
let records = newList();
let nextScan = 4096; // list length at which the next scan runs (then: twice the live)

function forget(record) {
  counted -= record.bytes;
  record.bytes = 0;
  record.ref = null;
}

// Takes back the bytes of every counted buffer that V8 collected (a WeakRef is empty
// after the collection that found its target dead) and drops their records.
function scan() {
  const list = records;
  const kept = newList();
  let count = 0;
  for (let i = 0; i < list.length; i++) {
    const record = list[i];
    if (record.bytes === 0) continue; // forgotten (detached by `transfer`)
    if (reflectApply(weakRefDeref, record.ref, []) === undefined) {
      forget(record);
      continue;
    }
    kept[count++] = record;
  }
  records = kept;
  nextScan = 2 * count + 4096;
}

function track(buffer, bytes) {
  const record = { bytes, ref: new weakRef(buffer) };
  try {
    new Stamp(buffer, record);
  } catch {
    // Not stampable (a future V8 may refuse private fields on non-extensible objects):
    // still counted and credited, only not recognised when it comes back.
  }
  records[records.length] = record;
  if (records.length >= nextScan) scan();
}

// Makes room for `bytes` more (after collecting garbage if need be), or fails the cell.
function room(bytes) {
  if (counted + bytes <= limit) return;
  if (collectGarbage !== null) reflectApply(collectGarbage, undefined, []);
  scan();
  if (counted + bytes <= limit) return;
  breach();
}

function pageRound(bytes) {
  return mathCeil(bytes / PAGE) * PAGE;
}

// What a buffer costs: see buffers.js.
function cost(buffer) {
  if (reflectApply(bufferResizable, buffer, [])) {
    return pageRound(reflectApply(bufferMaxByteLength, buffer, []));
  }
  return reflectApply(bufferByteLength, buffer, []);
}

// A buffer that a built-in returned, with `reserved` bytes counted ahead for it (0 if
// the check was made without counting): count what it holds, once. It may be a buffer
// counted already (made by a wrapper, or an old one that a species returned).
function settleBuffer(buffer, reserved) {
  counted -= reserved;
  if (recordOf(buffer) !== undefined) return buffer;
  const bytes = cost(buffer);
  if (bytes <= TINY) return buffer;
  counted += bytes;
  track(buffer, bytes);
  // Over only if the engine allocated more than was checked ahead: a program that
  // changed a size, or hid a species, from code of its own that the built-in ran.
  if (counted > limit) room(0);
  return buffer;
}

function settleView(view, reserved) {
  if (reflectApply(typedArrayByteLength, view, []) <= TINY) {
    counted -= reserved;
    return view;
  }
  settleBuffer(reflectApply(typedArrayBuffer, view, []), reserved);
  return view;
}

// ---------------------------------------------------------------------------
// Conversions, as the engine makes them; on primitives they run no program code.

function isObject(value) {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

// ToIndex of a number, or -1 where the engine throws a RangeError (allocating nothing).
function toIndex(number) {
  const n = mathTrunc(number);
  if (n !== n) return 0;
  if (n < 0 || n > MAX_INDEX) return -1;
  return n + 0;
}

function toLength(value) {
  const n = mathTrunc(+value);
  if (!(n > 0)) return 0;
  return n > MAX_INDEX ? MAX_INDEX : n;
}

// A relative start or end (already a number), clamped to [0, length].
function relative(number, length) {
  let n = mathTrunc(number);
  if (n !== n) n = 0;
  if (n < 0) {
    n += length;
    return n < 0 ? 0 : n;
  }
  return n > length ? length : n;
}

// ---------------------------------------------------------------------------
// Constructors.

function newBuffer(target, args, newTarget, bytes) {
  if (bytes <= TINY) return reflectConstruct(target, args, newTarget);
  room(bytes);
  counted += bytes;
  let buffer;
  try {
    buffer = reflectConstruct(target, args, newTarget);
  } catch (error) {
    counted -= bytes;
    throw error;
  }
  track(buffer, bytes);
  return buffer;
}

function constructArrayBuffer(target, args, newTarget) {
  const count = args.length;
  // ToIndex(length), then the `maxByteLength` option, each read once (they may be
  // objects of the program); the original gets the numbers.
  const length = +(count > 0 ? args[0] : undefined);
  const byteLength = toIndex(length);
  if (byteLength < 0) return reflectConstruct(target, [length], newTarget);
  const options = count > 1 ? args[1] : undefined;
  let max;
  if (isObject(options)) {
    const raw = options.maxByteLength;
    if (raw !== undefined) max = +raw;
  }
  if (max === undefined) return newBuffer(target, [length], newTarget, byteLength);
  const passed = [length, { __proto__: null, maxByteLength: max }];
  const maxByteLength = toIndex(max);
  if (maxByteLength < 0 || byteLength > maxByteLength) {
    return reflectConstruct(target, passed, newTarget); // the engine's RangeError
  }
  return newBuffer(target, passed, newTarget, maxByteLength === 0 ? 0 : pageRound(maxByteLength));
}

// A new typed array of `bytes` (checked first); `args` may need program code to run
// (for the elements of a copy), which `settleView` catches up with.
function newView(target, args, newTarget, bytes) {
  if (bytes <= TINY) return settleView(reflectConstruct(target, args, newTarget), 0);
  room(bytes);
  counted += bytes;
  let view;
  try {
    view = reflectConstruct(target, args, newTarget);
  } catch (error) {
    counted -= bytes;
    throw error;
  }
  if (reflectApply(typedArrayByteLength, view, []) !== bytes) return settleView(view, bytes);
  track(reflectApply(typedArrayBuffer, view, []), bytes); // always a new buffer
  return view;
}

// The values of an iterable, read as the typed-array constructor reads them, into a list
// without a prototype, which the original then reads as an array-like without running
// code of the program. (A spread reads `source[Symbol.iterator]` once more: seen only by
// a program's getter or proxy, and what is counted is the list passed on either way.)
function iterableValues(source, method) {
  let list;
  if (method === arrayValues) {
    list = [...source];
  } else {
    list = [];
    const iterator = reflectApply(method, source, []);
    if (!isObject(iterator)) {
      throw new typeError("Result of the Symbol.iterator method is not an object");
    }
    const next = iterator.next;
    for (let count = 0; ; count++) {
      const result = reflectApply(next, iterator, []);
      if (!isObject(result)) {
        throw new typeError("Iterator result " + string(result) + " is not an object");
      }
      if (result.done) break;
      list[count] = result.value;
    }
  }
  objectSetPrototypeOf(list, null);
  return list;
}

// What buffers.js did not settle on the spot (a length, another typed array, an
// iterable or an array-like; a buffer is a view, made there).
function constructTypedArray(target, size, args, newTarget) {
  if (args.length === 0) return reflectConstruct(target, args, newTarget);
  const source = args[0];
  if (typeof source === "number" && source >= 0 && source <= MAX_INDEX) {
    return newView(target, args, newTarget, mathTrunc(source) * size);
  }
  if (!isObject(source)) {
    const type = typeof source;
    if (type === "bigint" || type === "symbol") return reflectConstruct(target, args, newTarget);
    const length = toIndex(+source);
    if (length < 0) return reflectConstruct(target, args, newTarget); // the engine's RangeError
    return newView(target, args, newTarget, length * size);
  }
  if (reflectApply(typedArrayTag, source, []) !== undefined) {
    // A copy of another typed array.
    const length = reflectApply(typedArrayLength, source, []);
    return newView(target, args, newTarget, length * size);
  }
  if (!arrayIsArray(source) && isArrayBuffer(source)) {
    return reflectConstruct(target, args, newTarget); // a view: allocates nothing
  }
  const method = source[symbolIterator];
  if (method !== undefined && method !== null) {
    if (typeof method !== "function") {
      // The engine's own TypeError, from a stand-in that holds the same value.
      const standIn = { __proto__: null, [symbolIterator]: method };
      return reflectConstruct(target, [standIn], newTarget);
    }
    const list = iterableValues(source, method);
    return newView(target, [list], newTarget, list.length * size);
  }
  // An array-like: its length, then each element in turn (read, then converted).
  const length = toLength(source.length);
  const view = newView(target, [length], newTarget, length * size);
  for (let k = 0; k < length; k++) view[k] = source[k];
  return view;
}

// ---------------------------------------------------------------------------
// Methods.

function bufferSlice(target, buffer, args) {
  if (!isArrayBuffer(buffer)) return reflectApply(target, buffer, args);
  const count = args.length;
  const start = +(count > 0 ? args[0] : undefined);
  const endArg = count > 1 ? args[1] : undefined;
  const end = endArg === undefined ? undefined : +endArg;
  const length = reflectApply(bufferByteLength, buffer, []);
  const first = relative(start, length);
  const final = end === undefined ? length : relative(end, length);
  if (final - first > TINY) room(final - first);
  // The species constructor counts what it allocates; if a program hid the species,
  // the original one made the result, counted here.
  return settleBuffer(reflectApply(target, buffer, [start, end]), 0);
}

function bufferTransfer(target, buffer, args, keepResizable) {
  if (!isArrayBuffer(buffer)) return reflectApply(target, buffer, args);
  const lengthArg = args.length > 0 ? args[0] : undefined;
  const newLength = lengthArg === undefined ? undefined : +lengthArg;
  let bytes;
  if (keepResizable && reflectApply(bufferResizable, buffer, [])) {
    bytes = pageRound(reflectApply(bufferMaxByteLength, buffer, []));
  } else if (newLength === undefined) {
    bytes = reflectApply(bufferByteLength, buffer, []);
  } else {
    bytes = toIndex(newLength);
    if (bytes < 0) return reflectApply(target, buffer, [newLength]); // the engine's RangeError
  }
  const record = recordOf(buffer);
  const freed = record === undefined ? 0 : record.bytes;
  if (bytes > TINY && bytes > freed) room(bytes - freed);
  const result = reflectApply(target, buffer, [newLength]);
  // The old buffer is detached: its memory moved to (or was copied into) the new one.
  if (record !== undefined && record.bytes !== 0) forget(record);
  return settleBuffer(result, 0);
}

function viewSize(view) {
  const tag = reflectApply(typedArrayTag, view, []);
  return tag === undefined ? 0 : elementSize[tag];
}

function viewSlice(target, view, args) {
  const size = viewSize(view);
  if (size === 0) return reflectApply(target, view, args); // the engine's TypeError
  const count = args.length;
  const start = +(count > 0 ? args[0] : undefined);
  const endArg = count > 1 ? args[1] : undefined;
  const end = endArg === undefined ? undefined : +endArg;
  const length = reflectApply(typedArrayLength, view, []);
  const first = relative(start, length);
  const final = end === undefined ? length : relative(end, length);
  const bytes = (final - first) * size;
  if (bytes > TINY) room(bytes);
  return settleView(reflectApply(target, view, [start, end]), 0);
}

function viewMap(target, view, args) {
  const size = viewSize(view);
  if (size === 0) return reflectApply(target, view, args);
  const bytes = reflectApply(typedArrayLength, view, []) * size;
  if (bytes > TINY) room(bytes);
  return settleView(reflectApply(target, view, args), 0);
}

// `filter` allocates its result after the last call of the callback, once it knows how
// many elements it keeps: the callback is wrapped to count them and check then.
function viewFilter(target, view, args) {
  const size = viewSize(view);
  const callback = args.length > 0 ? args[0] : undefined;
  if (size === 0 || typeof callback !== "function") return reflectApply(target, view, args);
  const thisArg = args.length > 1 ? args[1] : undefined;
  const last = reflectApply(typedArrayLength, view, []) - 1;
  let kept = 0;
  const counting = (value, index, array) => {
    const keep = reflectApply(callback, thisArg, [value, index, array]);
    if (keep) kept += 1;
    if (index === last && kept * size > TINY) room(kept * size);
    return keep;
  };
  return settleView(reflectApply(target, view, [counting]), 0);
}

// A result that the original built-in always makes itself, of at most `bytes`:
// `toReversed`, `toSorted`, `with` (same type and length), `Uint8Array.fromBase64` /
// `fromHex`.
function copy(target, thisArg, args, bytes) {
  if (bytes <= TINY) return settleView(reflectApply(target, thisArg, args), 0);
  room(bytes);
  counted += bytes;
  let view;
  try {
    view = reflectApply(target, thisArg, args);
  } catch (error) {
    counted -= bytes;
    throw error;
  }
  return settleView(view, bytes);
}

function viewCopy(target, view, args) {
  const size = viewSize(view);
  if (size === 0) return reflectApply(target, view, args);
  return copy(target, view, args, reflectApply(typedArrayLength, view, []) * size);
}

// At most 3 bytes per 4 characters of base64, or 1 per 2 hex digits.
function fromText(target, thisArg, args, perChar) {
  const text = args.length > 0 ? args[0] : undefined;
  if (typeof text !== "string") return reflectApply(target, thisArg, args);
  return copy(target, thisArg, args, mathFloor(text.length * perChar));
}

// An object that holds memory outside the V8 heap which no ArrayBuffer accounts for
// (the ICU objects behind `Intl`, see allocations.js): `bytes` (an estimate) counted
// from now until V8 collects it, against the same budget as ArrayBuffers; over it, the
// cell fails with the plain memory-limit message.
function countObject(object, bytes) {
  if (counted + bytes > limit) {
    if (collectGarbage !== null) reflectApply(collectGarbage, undefined, []);
    scan();
    if (counted + bytes > limit) heapBreach();
  }
  counted += bytes;
  track(object, bytes);
  return object;
}

return {
  __proto__: null,
  countObject,
  constructArrayBuffer,
  constructTypedArray,
  bufferSlice,
  transfer: (target, buffer, args) => bufferTransfer(target, buffer, args, true),
  transferToFixedLength: (target, buffer, args) => bufferTransfer(target, buffer, args, false),
  slice: viewSlice,
  map: viewMap,
  filter: viewFilter,
  toReversed: viewCopy,
  toSorted: viewCopy,
  with: viewCopy,
  fromBase64: (target, thisArg, args) => fromText(target, thisArg, args, 3 / 4),
  fromHex: (target, thisArg, args) => fromText(target, thisArg, args, 1 / 2),
};
