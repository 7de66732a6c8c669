// Array methods that walk every index up to a length, over an object that may have
// none of them: the generic receivers (installed by allocations.js, whose table
// wraps them).
//
// `Array.prototype.forEach.call({ length: 2 ** 53 - 1 }, f)` asks the object for each
// index without running any JavaScript when it has no elements (the callback runs
// only for those present), so neither the running-time limit nor `terminate` can stop
// it: in thread mode the isolate's thread went on walking after its session had closed
// (issue 26). The same for an array of length 2 ** 32 - 1 and a few elements, and for
// the methods without a callback (`join`, `reverse`, `sort`, `copyWithin`, `splice`...).
// So such a walk is handed an object (rtWalker) whose every `has` and `get` runs a
// trap here, in JavaScript, where the limits stop it, and which answers `length` with
// the one read here, once (a getter or a Proxy may answer V8 more the second time).
// Everything else is V8's own method, unchanged: the order of reads and writes, the
// errors, the result (the receiver itself where V8 returns the walker).
//
// Which receivers: every object that is not an array (`Array.isArray`), and an array
// longer than the element budget (rtElementBudget: 16 Mi elements at most, more than
// an array within the memory limit can hold, so such an array is mostly holes). An
// array within it is handed to V8 as it is: its fast paths stay (a walker costs 5 to
// 100 times V8's time on a dense array), and V8 walks an array of 16 Mi holes in 12
// to 470 ms (measured: `forEach` 25, `join` 134, `sort` 157, `copyWithin` 470). (A
// Proxy of an array, indistinguishable from one, whose `length` answers more to V8
// than here is not covered: see docs/security.md.)

// The methods and, for those that take a callback, the position of the object among
// the callback's arguments (the callback is called with the receiver there, not the
// walker); -1: no callback.
const RT_WALKS = {
  __proto__: null,
  forEach: 2,
  map: 2,
  filter: 2,
  some: 2,
  every: 2,
  find: 2,
  findIndex: 2,
  findLast: 2,
  findLastIndex: 2,
  flatMap: 2,
  reduce: 3,
  reduceRight: 3,
  join: -1,
  toLocaleString: -1,
  copyWithin: -1,
  reverse: -1,
  sort: -1,
  splice: -1,
  slice: -1,
  flat: -1,
  shift: -1,
  unshift: -1,
};

// The traps of a walker: `target` is the receiver, `length` the length read once.
// Reads and writes reach the receiver with the receiver as `this` (its getters and
// setters see it, never the walker).
const RT_WALKER_TRAPS = {
  __proto__: null,
  has(target, key) {
    return key in target;
  },
  get(target, key) {
    return key === "length" ? this.length : rtReflectGet(target, key, target);
  },
  // An assignment (strict code): a failure throws V8's own TypeError, not a Proxy's.
  set(target, key, value) {
    target[key] = value;
    if (key === "length") this.length = value;
    return true;
  },
};

function rtWalker(object, length) {
  const handler = { __proto__: RT_WALKER_TRAPS, length };
  return new rtProxy(object, handler);
}

// The walkers of the `join`s and `toLocaleString`s under way, by receiver: V8 ends a
// cycle (an array among its own elements) when it meets the same receiver again, so a
// receiver met again is handed the same walker.
const rtJoining = [];

function rtWalkTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const kind = this.kind;
  // `sort` checks its comparator before it reads the length.
  if (kind === "sort" && args[0] !== undefined && typeof args[0] !== "function") {
    return rtReflectApply(target, thisArg, args);
  }
  const length = rtLength(thisArg.length);
  if (length <= rtElementBudget() && rtArrayIsArray(thisArg)) {
    return rtReflectApply(target, thisArg, args);
  }
  const at = RT_WALKS[kind];
  let given = args;
  if (at >= 0 && typeof args[0] === "function") {
    given = [];
    for (let i = 0; i < args.length; i++) given[i] = args[i];
    given[0] = rtWalkCallback(args[0], thisArg, at);
  }
  if (kind === "sort") return rtWalkSort(thisArg, length, args[0]);
  if (kind !== "join" && kind !== "toLocaleString") {
    const walker = rtWalker(thisArg, length);
    const result = rtReflectApply(target, walker, given);
    return result === walker ? thisArg : result;
  }
  for (let i = 0; i < rtJoining.length; i += 2) {
    if (rtJoining[i] === thisArg) return rtReflectApply(target, rtJoining[i + 1], given);
  }
  const depth = rtJoining.length;
  rtJoining[depth] = thisArg;
  rtJoining[depth + 1] = rtWalker(thisArg, length);
  try {
    return rtReflectApply(target, rtJoining[depth + 1], given);
  } finally {
    rtJoining.length = depth;
  }
}

// The callback V8 is handed: the program's, called with the receiver where V8 passes
// the walker (the third argument, or the fourth of `reduce`'s).
function rtWalkCallback(callback, object, at) {
  if (at === 2) {
    return function (value, index) {
      return rtReflectApply(callback, this, [value, index, object]);
    };
  }
  return function (accumulator, value, index) {
    return rtReflectApply(callback, this, [accumulator, value, index, object]);
  };
}

// `sort`, as the specification writes it (SortIndexedProperties, skipping holes): V8's
// own, handed an object of a huge length, allocates for that length and the process
// dies of it (in thread mode, the host's), or walks a sparse array's indices without
// running JavaScript. The elements present are collected here and sorted by V8 as an
// array of their own (its sort, comparator and `undefined`s last included), written
// back, and every index after them deleted.
function rtWalkSort(object, length, compare) {
  const items = [];
  for (let k = 0; k < length; k++) {
    if (k in object) items[items.length] = object[k];
  }
  rtReflectApply(rtArraySort, items, [compare]);
  let k = 0;
  for (; k < items.length; k++) object[k] = items[k];
  for (; k < length; k++) delete object[k];
  return object;
}

// `String.raw`: V8 appends every segment up to the length of `raw` in one call, and an
// absent one is "undefined": over an object of a huge length it ran for seconds
// before the string outgrew V8's largest (measured 5 s after the time limit). The
// length is read here, once; over RT_FEW_ELEMENTS segments the loop runs here.
function rtStringRawTrap(target, thisArg, args) {
  const cooked = args[0];
  if (!rtIsObject(cooked)) return rtReflectApply(target, thisArg, args);
  const raw = cooked.raw;
  if (!rtIsObject(raw)) return rtReflectApply(target, thisArg, args);
  const length = rtLength(raw.length);
  if (length <= RT_FEW_ELEMENTS) {
    const given = [{ raw: rtPinnedLength(raw, length) }];
    for (let i = 1; i < args.length; i++) given[i] = args[i];
    return rtReflectApply(target, thisArg, given);
  }
  let text = "";
  for (let i = 0; ; i++) {
    text += rtToString(raw[i]);
    if (i + 1 === length) return text;
    if (i + 1 < args.length) text += rtToString(args[i + 1]);
  }
}
