// The in-isolate runtime: installs the globals a program sees and speaks the JSON
// protocol with the host. This file comes first and introduces the others.
//
// One prelude, many files. _v8/_prelude.py pastes these files, in this order, into
// one strict-mode function that runs before any user code, so they share one closure:
//   builtins.js     every built-in the runtime uses, captured before any program runs
//   output.js       how values become output items and error text (`cm*` helpers)
//   audio.js        how audio() arguments become items (and short WAV clips a note)
//   channel.js      the outgoing channel: the queue of messages and the doorbells
//   cell_state.js   the cell's state, its completion (rtFinish), the JSON data checks
//   stack_trace.js  stack traces that show the program's own frames only
//   globals.js      the functions a program calls (`text`, `store`, `setTimeout`, ...)
//   tools.js        the `tools` object and its functions
//   start.js        the start command: compiling and running the program
//   commands.js     the host's commands, and rtRecv, their entry point
//   install.js      what the prelude does once all that is defined
//   settled.js      the `as_settled` and `stream_settled` globals
//   buffers.js      ArrayBuffer accounting (its bulk, buffers_impl.js, compiled on use)
//   estimates.js    memory V8 does not count: escaped text, BigInt digits, formatters
//   lengths.js      array methods whose lengths V8 reads again: searches, concat
//   intl.js         Intl objects counted at an estimate of their ICU memory
//   patterns.js     source text and patterns: the parser's and the regexp compiler's
//                   cost, and which regexps V8 matches as their internal flags say
//   allocations.js  size checks before built-ins that allocate in one call, and their
//                   installation (what only huge strings reach, and the regexp hooks a
//                   program changed: allocations_impl.js, compiled on use)
//   clock.js        what a replay must see again: Math.random seeded per cell, and the
//                   clock's readings reported to the host and handed back on a replay
//   finalization.js FinalizationRegistry callbacks that cannot throw (nor print)
// A file uses only what the files before it define, or defines itself above the use;
// a function may name a later file's function if it is only called once the prelude
// has run (from the host's calls).
//
// Captured built-ins: everything the runtime needs from the language is taken here,
// once, into `rt*` constants, so a program that later replaces `JSON.stringify`,
// `Array.prototype.push` or `Promise.prototype.then`, or adds setters to
// `Object.prototype`, cannot break the runtime; it can only break itself. Methods are
// called through `rtReflectApply`. (Well-known symbols such as `Symbol.iterator`, which
// no program can change, are read where they are used.)
//
// Host -> isolate: the host calls `rtRecv` with the JSON text of a batch of commands as
// its receiver (`this`), through a function handle it took from the prelude's result
// (mini-racer's `mr_call_function`). The function is reachable from no global: a
// program cannot see, call or replace the host's entry point.
// Isolate -> host: `rtSend(message)` queues a JSON message; `rtFlush()` writes the
// queued batch as UTF-16 into a private ArrayBuffer whose memory the host reads from
// inside the native doorbell call (`rtBellMore` for a partial chunk, `rtBellEnd` for
// the last one). The program never sees the buffer or the doorbells.
//
// Compiled ahead: V8 compiles a function on its first call (lazily), except a function
// expression in parentheses, which it compiles with the script around it. The prelude
// is evaluated in a warm isolate before a cell takes it, so the functions on every
// cell's start path (from `rtRecv` through `rtStart`, the program's compilation, `text`
// and `rtFinish` to the doorbell), and those the prelude itself calls, are written
// `const f = (function f() {...});`: they are ready when the cell starts, while the
// rest of the runtime (tool calls, timers, store, images, errors) is only pre-parsed
// and costs a cell that never uses it nothing. A function declared that way exists
// from its line on (no hoisting): it is only ever called once the prelude has run,
// from the host's calls, or after its line. tests/v8/test_prelude_compile.py checks that
// the prelude and a short cell compile none of the runtime's functions lazily.

const rtGlobal = globalThis;

const rtJSONStringify = JSON.stringify;
const rtJSONParse = JSON.parse;

const rtReflectApply = Reflect.apply;
const rtReflectConstruct = Reflect.construct;
const rtReflectDefineProperty = Reflect.defineProperty;
const rtReflectGet = Reflect.get;
const rtReflectOwnKeys = Reflect.ownKeys;
const rtProxy = Proxy;

const rtObjectPrototype = Object.prototype;
const rtObjectDefineProperty = Object.defineProperty;
const rtObjectFreeze = Object.freeze;
const rtObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const rtObjectGetPrototypeOf = Object.getPrototypeOf;
const rtObjectHasOwn = Object.hasOwn;
const rtObjectKeys = Object.keys;
const rtObjectSetPrototypeOf = Object.setPrototypeOf;

const rtFunction = Function;
const rtFunctionBind = Function.prototype.bind;
const rtFunctionToString = Function.prototype.toString;
const rtAsyncFunction = async function () {}.constructor;

const rtError = Error;
const rtErrorToString = Error.prototype.toString;
const rtTypeError = TypeError;
const rtRangeError = RangeError;
const rtSyntaxError = SyntaxError;

const rtString = String;
const rtStringFromCharCode = String.fromCharCode;
const rtStringCharCodeAt = String.prototype.charCodeAt;
const rtStringCodePointAt = String.prototype.codePointAt;
const rtStringIndexOf = String.prototype.indexOf;
const rtStringSlice = String.prototype.slice;
const rtStringStartsWith = String.prototype.startsWith;
const rtStringToWellFormed = String.prototype.toWellFormed;
const rtStringTrim = String.prototype.trim;

// The originals: allocations.js replaces the RegExp global with a checking proxy.
const rtRegExp = RegExp;
const rtRegExpPrototype = RegExp.prototype;
const rtRegExpExec = RegExp.prototype.exec;
const rtRegExpSplit = rtRegExpPrototype[Symbol.split];
const rtRegExpFlags = rtObjectGetOwnPropertyDescriptor(rtRegExpPrototype, "flags").get;
const rtRegExpSource = rtObjectGetOwnPropertyDescriptor(rtRegExpPrototype, "source").get;

const rtNumber = Number;
const rtNumberIsFinite = Number.isFinite;
const rtMathCeil = Math.ceil;
const rtMathFloor = Math.floor;
const rtMathMin = Math.min;
const rtMathTrunc = Math.trunc;
const rtMathImul = Math.imul;
const rtMathLog2 = Math.log2;
const rtDate = Date;
const rtDateNow = Date.now;
const rtDateToString = Date.prototype.toString;
const rtTemporal = typeof Temporal === "object" && Temporal !== null ? Temporal : null;
const rtBigInt = BigInt;
const rtFinalizationRegistry = FinalizationRegistry;
const rtBigIntValueOf = BigInt.prototype.valueOf;

const rtArrayIsArray = Array.isArray;
const rtArrayPrototype = Array.prototype;
const rtObject = Object;
const rtArrayJoin = Array.prototype.join;
const rtArrayPush = Array.prototype.push;
const rtArraySort = Array.prototype.sort;
const rtArrayValues = Array.prototype.values;
const rtArrayToSpliced = Array.prototype.toSpliced;
const rtArrayIncludes = Array.prototype.includes;
const rtObjectCreate = Object.create;
const rtStringValueOf = String.prototype.valueOf;
const rtNumberValueOf = Number.prototype.valueOf;

const rtMap = Map;
const rtMapDelete = Map.prototype.delete;
const rtMapForEach = Map.prototype.forEach;
const rtMapGet = Map.prototype.get;
const rtMapHas = Map.prototype.has;
const rtMapSet = Map.prototype.set;
const rtMapSize = rtObjectGetOwnPropertyDescriptor(Map.prototype, "size").get;

const rtPromise = Promise;
const rtPromiseReject = Promise.reject;
const rtPromiseThen = Promise.prototype.then;
const rtPromiseWithResolvers = Promise.withResolvers;

const rtWeakRef = WeakRef;
const rtWeakRefDeref = WeakRef.prototype.deref;
const rtWeakSet = WeakSet;
const rtWeakSetAdd = WeakSet.prototype.add;
const rtWeakSetHas = WeakSet.prototype.has;

// The originals: buffers.js replaces these globals with counting wrappers.
const rtArrayBuffer = ArrayBuffer;
const rtInt32Array = Int32Array;
const rtUint8Array = Uint8Array;
const rtUint16Array = Uint16Array;

// V8's gc extension (see V8_FLAGS in _native.py), installed in place of `Atomics`'s
// value: taken here, before install.js deletes `Atomics`, for buffers.js. Without the
// flag `Atomics` is the real object, and there is no way to force a collection.
const rtCollectGarbage = typeof rtGlobal.Atomics === "function" ? rtGlobal.Atomics : null;

// `charCodeAt` as a plain function of (string, index): one call per character, with no
// argument array (rtJsonProblem scans whole stored values with it).
const rtCharCodeAtOf = rtReflectApply(rtFunctionBind, Function.prototype.call, [
  rtStringCharCodeAt,
]);
// What `then` on the program's promise uses as its species (see rtStart).
const RT_SPECIES = rtObjectFreeze({ __proto__: null, [Symbol.species]: rtPromise });
