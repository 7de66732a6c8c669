// What a replay must see again (the host's journal, _engine/journal.py): a program is
// replayed from its start on a new isolate when its worker process dies while it
// waits, and must then take the same branches it took the first time.
//
// * Math.random draws from a generator seeded by the start command (xoshiro128**,
//   seeded through splitmix32), so the same seed gives the same numbers.
// * Every reading of the clock (Date.now(), new Date(), Date(), Temporal.Now.*) goes
//   through rtNow: live, it reads the real clock and reports the value to the host
//   (rtClockReadings, sent with the next batch: channel.js); in a replay, it hands back
//   the recorded values first, in order (the `replay` command), then reads live again.
//
// The originals stay where a program finds them, wrapped in proxies, as the memory
// checks wrap theirs (allocations.js): `Date.now.name` is "now", `new Date(0)` and every
// other call with arguments reach the real constructor unchanged.

const RT_CLOCK_BATCH = 1024; // readings per message (the host's MAX_CLOCK_READINGS)
let rtClockReplay = null;
let rtClockNext = 0;

function rtReplayClock(readings) {
  if (rtArrayIsArray(readings)) {
    rtClockReplay = readings;
    rtClockNext = 0;
  }
}

const rtNow = (function rtNow() {
  const replay = rtClockReplay;
  if (replay !== null) {
    if (rtClockNext < replay.length) return replay[rtClockNext++];
    rtClockReplay = null;
  }
  const now = rtReflectApply(rtDateNow, rtDate, []);
  if (rtClockReadings === null) rtClockReadings = rtNewQueue();
  rtReflectApply(rtArrayPush, rtClockReadings, [now]);
  if (rtClockReadings.length >= RT_CLOCK_BATCH) {
    rtQueueClock();
    if (rtQueueChars > RT_FLUSH_CHARS) {
      try {
        rtFlush();
      } catch {
        // Out of stack: sent by the next flush.
      }
    }
  }
  return now;
});

let rtRandomA = 0;
let rtRandomB = 0;
let rtRandomC = 0;
let rtRandomD = 0;

const rtSeedRandom = (function rtSeedRandom(seed) {
  let state = seed >>> 0;
  const words = [0, 0, 0, 0];
  for (let i = 0; i < 4; i++) {
    state = (state + 0x9e3779b9) | 0;
    let z = state;
    z = rtMathImul(z ^ (z >>> 16), 0x85ebca6b);
    z = rtMathImul(z ^ (z >>> 13), 0xc2b2ae35);
    words[i] = (z ^ (z >>> 16)) >>> 0;
  }
  rtRandomA = words[0];
  rtRandomB = words[1];
  rtRandomC = words[2];
  rtRandomD = words[3];
});

const rtRandom32 = (function rtRandom32() {
  const product = rtMathImul(rtRandomB, 5);
  const result = rtMathImul((product << 7) | (product >>> 25), 9) >>> 0;
  const shifted = rtRandomB << 9;
  rtRandomC ^= rtRandomA;
  rtRandomD ^= rtRandomB;
  rtRandomB ^= rtRandomC;
  rtRandomA ^= rtRandomD;
  rtRandomC ^= shifted;
  rtRandomD = (rtRandomD << 11) | (rtRandomD >>> 21);
  return result;
});

// 53 random bits, as V8's own Math.random gives: a double in [0, 1).
const rtRandomTrap = (function rtRandomTrap() {
  const high = rtRandom32() >>> 5;
  const low = rtRandom32() >>> 6;
  return (high * 67108864 + low) / 9007199254740992;
});

const rtNowTrap = (function rtNowTrap() {
  return rtNow();
});

const rtDateHandler = {
  __proto__: null,
  proxy: null,
  apply: function rtDateApply() {
    return rtReflectApply(rtDateToString, new rtDate(rtNow()), []);
  },
  construct: function rtDateConstruct(target, args, newTarget) {
    const real = newTarget === this.proxy ? target : newTarget;
    if (args.length === 0) return rtReflectConstruct(target, [rtNow()], real);
    return rtReflectConstruct(target, args, real);
  },
};

const rtInstallClock = (function rtInstallClock() {
  rtWrapMethod(Math, "random", rtRandomTrap);
  rtWrapMethod(rtDate, "now", rtNowTrap);
  const proxy = new rtProxy(rtDate, rtDateHandler);
  rtDateHandler.proxy = proxy;
  rtDefine(rtDate.prototype, "constructor", proxy, true);
  rtDefine(rtGlobal, "Date", proxy, true);
  if (rtTemporal === null) return;
  const now = rtTemporal.Now;
  const fromMs = rtTemporal.Instant.fromEpochMilliseconds;
  const instantClass = rtTemporal.Instant;
  const toZoned = rtTemporal.Instant.prototype.toZonedDateTimeISO;
  const zonedClass = rtTemporal.ZonedDateTime.prototype;
  const timeZoneId = now.timeZoneId;
  const instant = function () {
    return rtReflectApply(fromMs, instantClass, [rtNow()]);
  };
  const zoned = function (zone) {
    const id = zone === undefined ? rtReflectApply(timeZoneId, now, []) : zone;
    return rtReflectApply(toZoned, instant(), [id]);
  };
  const part = (function part(method) {
    return function (target, thisArg, args) {
      return rtReflectApply(method, zoned(args[0]), []);
    };
  });
  rtWrapMethod(now, "instant", instant);
  rtWrapMethod(now, "zonedDateTimeISO", function (target, thisArg, args) {
    return zoned(args[0]);
  });
  rtWrapMethod(now, "plainDateTimeISO", part(zonedClass.toPlainDateTime));
  rtWrapMethod(now, "plainDateISO", part(zonedClass.toPlainDate));
  rtWrapMethod(now, "plainTimeISO", part(zonedClass.toPlainTime));
});

rtInstallClock();
