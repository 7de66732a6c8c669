// Array searches that V8 runs without running JavaScript, made interruptible (see
// allocations.js, whose installation wraps them).
//
// `indexOf`, `lastIndexOf`, `includes`: V8 walks every index up to the length in one
// call, asking the object for each without running any JavaScript, so neither the
// running-time limit nor `terminate` can stop it (over an object of length
// 2 ** 53 - 1, leaving a thread-mode session never returned: issue 26). Over
// RT_FEW_ELEMENTS indices the search runs here instead, in a loop the limits can stop;
// under it, an object that is no array is pinned to the length read (rtPinnedLength).
function rtSearchTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const length = rtArrayLength(thisArg);
  const kind = this.kind;
  let from;
  if (kind === "lastIndexOf") {
    from = args.length > 1 ? rtToNumber(args[1]) : length - 1;
  } else {
    from = args.length > 1 ? rtToNumber(args[1]) : 0;
  }
  const given = [args[0], from];
  if (length <= RT_FEW_ELEMENTS) {
    const receiver = rtArrayIsArray(thisArg) ? thisArg : rtPinnedLength(thisArg, length);
    return rtReflectApply(target, receiver, given);
  }
  return rtSearch(kind, thisArg, length, args[0], from);
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
