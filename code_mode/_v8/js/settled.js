// `as_settled(inputs)` and `stream_settled(inputs, emit)`: the reference's promise
// combinators (openai/codex code-mode-runtime/src/runtime/settled.js, #51126), written
// anew on the captured built-ins (builtins.js) so that a program that replaces
// `Promise.prototype.then` or `Array.prototype[Symbol.iterator]` breaks only itself.
//
// `as_settled` observes each input once, when it is called: `Promise.resolve(input)`
// (a promise, a thenable or a plain value) and one reaction on the result. Results are
// queued in the order the inputs settle, while the consumer is busy too, and handed out
// by an async iterator as `{index, status: "fulfilled", value}` or
// `{index, status: "rejected", reason}`; `index` is the Map key for a Map, else the
// position. Closing the iterator early (`break`, `return()`) closes the queue: later
// settlements are dropped, and nothing is cancelled (a tool call still runs to its end).
// `stream_settled` awaits `emit(result)` for each, in the same order. Lazily compiled:
// a cell that never calls them pays nothing for them.

const rtPromiseResolve = rtPromise.resolve;
const rtAsyncGeneratorPrototype = rtObjectGetPrototypeOf(async function* () {}).prototype;
const rtAsyncGeneratorNext = rtAsyncGeneratorPrototype.next;
const rtAsyncGeneratorReturn = rtAsyncGeneratorPrototype.return;

const rtAsSettled = function as_settled(inputs) {
  let ready = [];
  let pending = 0;
  let wake;
  let closed = false;
  const settle = (result) => {
    pending -= 1;
    if (closed) return;
    ready[ready.length] = result;
    if (wake !== undefined) {
      const resolve = wake;
      wake = undefined;
      resolve();
    }
  };
  const keyed = inputs instanceof rtMap;
  let position = 0;
  try {
    for (const entry of inputs) {
      let index, input;
      if (keyed) {
        index = entry[0];
        input = entry[1];
      } else {
        index = position;
        position += 1;
        input = entry;
      }
      pending += 1;
      const promise = rtReflectApply(rtPromiseResolve, rtPromise, [input]);
      rtReflectApply(rtPromiseThen, promise, [
        (value) => settle({ index, status: "fulfilled", value }),
        (reason) => settle({ index, status: "rejected", reason }),
      ]);
    }
  } catch (error) {
    closed = true;
    throw error;
  }
  return (async function* () {
    try {
      while (pending > 0 || ready.length > 0) {
        if (ready.length === 0) {
          await new rtPromise((resolve) => {
            wake = resolve;
          });
        }
        const batch = ready;
        ready = [];
        for (let i = 0; i < batch.length; i++) yield batch[i];
      }
    } finally {
      closed = true;
      ready = [];
    }
  })();
};

const rtStreamSettled = async function stream_settled(inputs, emit) {
  if (typeof emit !== "function") {
    throw new rtTypeError("stream_settled requires a callback");
  }
  const results = rtAsSettled(inputs);
  let done = false;
  try {
    for (;;) {
      const step = await rtReflectApply(rtAsyncGeneratorNext, results, []);
      if (step.done) {
        done = true;
        return undefined;
      }
      await emit(step.value);
    }
  } finally {
    if (!done) await rtReflectApply(rtAsyncGeneratorReturn, results, [undefined]);
  }
};

rtDefineGlobal("as_settled", rtAsSettled);
rtDefineGlobal("stream_settled", rtStreamSettled);
