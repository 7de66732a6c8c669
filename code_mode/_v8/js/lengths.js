// Array methods whose lengths V8 reads again, after the check (see allocations.js, whose
// installation wraps them): the searches and `concat`.
//
// `Array.isArray` is true for a Proxy of an array, whose `length` trap may answer the
// check small and V8 huge; a `Symbol.isConcatSpreadable` or `length` getter the same.
// V8 then walks every index up to its own length in one call, without running
// JavaScript (a trap that removes itself once it has answered): neither the running
// time limit nor `terminate` can stop it (issue 26). So every length is read here,
// once, and V8 is handed something whose length is that one: a copy of the array
// (`toSpliced(length, Infinity)`, which copies at most `length` elements whatever V8
// reads, with V8's fast copy for an ordinary array), or, where a copy would differ (a
// hole becomes `undefined`), an empty array whose prototype is the receiver and whose
// own `length` is the one read (every element is read through to the receiver, more
// slowly). Measured on a real array of 10 to 65536 elements: a copy costs 1.5 to 2
// times V8's own search; the prototype way 15 to 40 times (docs/security.md).

// An array of `length` elements read from `items` (an object): a copy when it holds
// no `undefined` (so no hole either), else an array that reads through to `items`.
function rtFixedLength(items, length) {
  const copy = rtReflectApply(rtArrayToSpliced, items, [length, Infinity]);
  return rtReflectApply(rtArrayIncludes, copy, [undefined]) ? rtThrough(items, length) : copy;
}

// `indexOf`, `lastIndexOf`, `includes`: V8 walks every index up to the length in one
// call, asking the object for each without running any JavaScript. Over
// RT_FEW_ELEMENTS indices the search runs here instead, in a loop the limits can stop
// (over an object of length 2 ** 53 - 1, leaving a thread-mode session never
// returned); under it, an array is searched in a copy of that length (or, for an
// `indexOf` of `undefined`, which a hole does not match, through rtThrough), any other
// object pinned to the length read (rtPinnedLength), and `lastIndexOf` starts at an
// index within that length (V8 walks down from it, whatever length it reads).
function rtSearchTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const length = rtArrayLength(thisArg);
  const kind = this.kind;
  const wanted = args.length > 0 ? args[0] : undefined;
  let from;
  if (kind === "lastIndexOf") {
    from = args.length > 1 ? rtToNumber(args[1]) : length - 1;
  } else {
    from = args.length > 1 ? rtToNumber(args[1]) : 0;
  }
  if (length > RT_FEW_ELEMENTS) return rtSearch(kind, thisArg, length, wanted, from);
  if (length === 0) return kind === "includes" ? false : -1;
  if (kind === "lastIndexOf") {
    let k = rtMathTrunc(from);
    if (k !== k) k = 0;
    k = k < 0 ? length + k : k > length - 1 ? length - 1 : k;
    return k < 0 ? -1 : rtReflectApply(target, thisArg, [wanted, k]);
  }
  let receiver;
  if (!rtArrayIsArray(thisArg)) receiver = rtPinnedLength(thisArg, length);
  else if (wanted === undefined && kind === "indexOf") receiver = rtThrough(thisArg, length);
  else receiver = rtReflectApply(rtArrayToSpliced, thisArg, [length, Infinity]);
  return rtReflectApply(target, receiver, [wanted, from]);
}

function rtThrough(items, length) {
  const through = [];
  through.length = length;
  rtObjectSetPrototypeOf(through, items);
  return through;
}

// The search of rtSearchTrap, as the specification writes it.
function rtSearch(kind, object, length, wanted, fromNumber) {
  let k = rtMathTrunc(fromNumber);
  if (k !== k) k = 0;
  if (kind === "lastIndexOf") {
    k = k < 0 ? length + k : k > length - 1 ? length - 1 : k;
    for (; k >= 0; k--) {
      if (k in object && object[k] === wanted) return k;
    }
    return -1;
  }
  if (k < 0) k = k + length < 0 ? 0 : k + length;
  for (; k < length; k++) {
    if (kind === "includes") {
      const value = object[k];
      if (value === wanted || (value !== value && wanted !== wanted)) return true;
    } else if (k in object && object[k] === wanted) {
      return k;
    }
  }
  return kind === "includes" ? false : -1;
}

// `concat`: whether each item is spread (its `Symbol.isConcatSpreadable`, else
// `Array.isArray`) and its length are read here, once, and checked; V8 is handed each
// spread item at that length (rtFixedLength; an object that is no array, pinned to
// it and marked spreadable), and each object not spread as a placeholder V8 cannot
// spread, which the object replaces in the result afterwards. The receiver keeps what
// V8 makes the result of (its `constructor`): an array of another prototype (a
// subclass) is handed over through rtThrough.
// (The result is allocated at once, in a space V8 lets a first object of any size
// into: a doubling `a = a.concat(a)` would outrun the heap limit.)
function rtConcatTrap(target, thisArg, args) {
  if (thisArg === null || thisArg === undefined) return rtReflectApply(target, thisArg, args);
  const items = [rtIsObject(thisArg) ? thisArg : rtObject(thisArg)];
  for (let i = 0; i < args.length; i++) items[i + 1] = args[i];
  const lengths = [];
  let count = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    lengths[i] = -1; // not spread
    if (rtIsObject(item)) {
      const flag = item[Symbol.isConcatSpreadable];
      if (flag !== undefined ? !!flag : rtArrayIsArray(item)) lengths[i] = rtLength(item.length);
    }
    count += lengths[i] < 0 ? 1 : lengths[i];
  }
  if (count > RT_FEW_ELEMENTS) rtCheckElements(count);
  const given = [];
  const placed = [];
  let at = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const length = lengths[i];
    if (length < 0) {
      given[i] = rtIsObject(item) ? rtConcatPlaceholder(item, i) : item;
      if (rtIsObject(item)) placed[placed.length] = at;
      at++;
    } else if (!rtArrayIsArray(item)) {
      given[i] = { __proto__: item, length, [Symbol.isConcatSpreadable]: true };
      at += length;
    } else {
      const plain = i > 0 || rtObjectGetPrototypeOf(item) === rtArrayPrototype;
      given[i] = plain ? rtFixedLength(item, length) : rtThrough(item, length);
      at += length;
    }
  }
  const rest = [];
  for (let i = 1; i < given.length; i++) rest[i - 1] = given[i];
  const result = rtReflectApply(target, given[0], rest);
  for (let i = 0, j = 0; i < items.length; i++) {
    if (lengths[i] < 0 && rtIsObject(items[i])) {
      rtObjectDefineProperty(result, placed[j++], {
        __proto__: null,
        value: items[i],
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  }
  return result;
}

// An object V8 does not spread, in place of `item`: for an array receiver, an array
// whose `constructor` is read through to it (V8 makes the result of it), else an
// object of no prototype (no flag to read, no array).
function rtConcatPlaceholder(item, index) {
  if (index > 0 || !rtArrayIsArray(item)) return rtObjectCreate(null);
  const through = rtThrough(item, 0);
  rtObjectDefineProperty(through, Symbol.isConcatSpreadable, { __proto__: null, value: false });
  return through;
}
