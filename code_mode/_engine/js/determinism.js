// A cell's nondeterminism through one hook, for a journal to record and a replay to feed
// back; and FinalizationRegistry callbacks that cannot reach the worker's output.
//
// Replaying a cell (running its program again from the start on another isolate) must
// see the same values it saw the first time. Two sources of values come from outside
// the program and its inputs:
// * `Math.random()`: a seeded generator per cell (xoshiro128**, 32-bit words, two
//   outputs make a double's 53 bits). The start command's `random_seed` (an integer,
//   0 <= seed < 2 ** 53) seeds it; without one, the cell draws a seed from V8's own
//   generator. The seed in use is `rtRandomSeed`: a host that records it and passes
//   it again replays the same sequence.
// * the clock: `Date.now()`, `new Date()` (no argument) and `Date()` all read
//   rtClockNow(), the one hook. The start command's `clock` chooses its mode:
//     absent or {"mode": "live"}       the real clock;
//     {"mode": "record"}               the real clock, and each value returned is also
//                                      appended to `rtClockLog` (in order);
//     {"mode": "replay", "values": [..]} the recorded values in order, then (when they
//                                      run out, the program has gone past the point
//                                      where it was recorded) the real clock, recorded.
//   The journal that carries `rtClockLog` to the host is not built yet (issue 26, item
//   1): the values stay in the isolate until it is.
// (`performance` and `crypto` do not exist in this runtime; `Intl.DateTimeFormat`'s
// `format()` without a date reads V8's clock directly and is not covered.)
//
// FinalizationRegistry: V8 reports an exception thrown by a cleanup callback by printing
// it to the process's stdout, and in process isolation that is the worker's frame pipe
// (a corrupt frame ends the worker and every cell on it). The constructor is replaced
// by a proxy that hands V8 a wrapper of the program's callback, which catches whatever
// it throws: the program's error is dropped (a callback runs outside the program's
// own flow, where nothing could have caught it anyway).


// ---------------------------------------------------------------------------
// The clock.

let rtClockMode = "live";
let rtClockReplay = null; // the values still to replay
let rtClockReplayAt = 0;
let rtClockLog = null; // the values returned, in "record" mode (and after a replay)

const rtClockNow = (function rtClockNow() {
  if (rtClockMode === "live") return rtReflectApply(rtDateNow, rtDate, []);
  if (rtClockMode === "replay") {
    if (rtClockReplayAt < rtClockReplay.length) return rtClockReplay[rtClockReplayAt++];
    rtClockMode = "record"; // ran past the recording: live from here on, recorded
  }
  const now = rtReflectApply(rtDateNow, rtDate, []);
  rtClockLog[rtClockLog.length] = now;
  return now;
});

// The start command's `clock` (see the top of this file).
const rtClockStart = (function rtClockStart(clock) {
  rtClockMode = "live";
  if (clock === null || typeof clock !== "object") return;
  if (clock.mode === "record" || clock.mode === "replay") {
    rtClockMode = clock.mode;
    rtClockLog = [];
  }
  if (clock.mode === "replay") {
    const values = rtArrayIsArray(clock.values) ? clock.values : [];
    rtClockReplay = [];
    for (let i = 0; i < values.length; i++) rtClockReplay[i] = +values[i];
    rtClockReplayAt = 0;
  }
});

// ---------------------------------------------------------------------------
// Math.random: xoshiro128** over four 32-bit words.

let rtRandomSeed = 0;
let rtRandom0 = 0;
let rtRandom1 = 0;
let rtRandom2 = 0;
let rtRandom3 = 0;

// splitmix32 of a word: spreads a seed over the state (compiled ahead: every cell's
// start calls it).
const rtSplitMix = (function rtSplitMix(x) {
  x = (x + 0x9e3779b9) | 0;
  let z = x;
  z = rtMathImul(z ^ (z >>> 16), 0x85ebca6b);
  z = rtMathImul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
});

const rtRandomStart = (function rtRandomStart(seed) {
  if (typeof seed !== "number" || !(seed >= 0 && seed < 9007199254740992)) {
    seed = rtMathFloor(rtReflectApply(rtMathRandom, undefined, []) * 9007199254740992);
  }
  rtRandomSeed = rtMathFloor(seed);
  const low = rtRandomSeed % 4294967296 | 0;
  const high = rtMathFloor(rtRandomSeed / 4294967296) | 0;
  rtRandom0 = rtSplitMix(low);
  rtRandom1 = rtSplitMix(high ^ 0x6a09e667);
  rtRandom2 = rtSplitMix(low ^ 0xbb67ae85);
  rtRandom3 = rtSplitMix(high ^ 0x3c6ef372);
  if ((rtRandom0 | rtRandom1 | rtRandom2 | rtRandom3) === 0) rtRandom0 = 1;
});

function rtRandomWord() {
  const x = rtRandom1 * 5;
  const result = rtMathImul((x << 7) | (x >>> 25), 9) >>> 0;
  const t = rtRandom1 << 9;
  rtRandom2 ^= rtRandom0;
  rtRandom3 ^= rtRandom1;
  rtRandom1 ^= rtRandom2;
  rtRandom0 ^= rtRandom3;
  rtRandom2 ^= t;
  rtRandom3 = (rtRandom3 << 11) | (rtRandom3 >>> 21);
  return result;
}

// A double in [0, 1) from 53 random bits (27 + 26).
function rtRandom() {
  const high = rtRandomWord() >>> 5;
  const low = rtRandomWord() >>> 6;
  return (high * 67108864 + low) / 9007199254740992;
}

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

// ---------------------------------------------------------------------------
// Installation: `Math.random`, `Date.now` and `Date` are replaced by proxies of the
// originals; `Date`'s no-argument forms read the clock.

function rtDateApply(target, thisArg, args) {
  // `Date(...)` ignores its arguments: the current time as a string.
  return rtReflectApply(rtDateToString, new rtDate(rtClockNow()), []);
}

function rtDateConstruct(target, args, newTarget) {
  const given = args.length === 0 ? [rtClockNow()] : args;
  return rtReflectConstruct(target, given, newTarget === this.proxy ? target : newTarget);
}


function rtRandomTrap() {
  return rtRandom();
}

function rtNowTrap() {
  return rtClockNow();
}

const rtInstallDeterminism = (function rtInstallDeterminism() {
  // Proxies of the originals, as the size checks' wrappers (allocations.js): the same
  // name, length and `toString`.
  rtWrapMethod(Math, "random", rtRandomTrap);
  rtWrapMethod(rtDate, "now", rtNowTrap);
  const replace = [
    rtDate, rtDateApply, rtDateConstruct,
    FinalizationRegistry, undefined, rtFinalizationConstruct,
  ];
  for (let i = 0; i < replace.length; i += 3) {
    const original = replace[i];
    const handler = { __proto__: null, construct: replace[i + 2], proxy: null };
    if (replace[i + 1] !== undefined) handler.apply = replace[i + 1];
    const value = new rtProxy(original, handler);
    handler.proxy = value;
    rtDefine(original.prototype, "constructor", value, true);
    rtDefine(rtGlobal, original.name, value, true);
  }
  rtRandomStart(undefined);
});

rtInstallDeterminism();
