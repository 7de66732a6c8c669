// The globals a program calls, except `tools` (tools.js): output (`text`, `image`,
// `audio`, `generatedImage`, `forward_output`, `console`), `store` / `load`, timers,
// `notify`, `yield_control` and `exit`. rtDefineGlobals, at the end, lists them all;
// install.js calls it.
//
// What a helper throws is a plain string, as in the reference: its own failures are
// strings already (cmOutFail, rtHelperError), and an exception of the language on the
// way (JSON.stringify of a cycle or a BigInt, a throwing getter) becomes its error
// text (rtPlainFailure): `String(e)` is the message, with no `Error: ` in front.

// Ordinary properties, as the reference's globals are: enumerable, so that
// `Object.keys(globalThis)` lists them.
const rtDefineGlobal = (function rtDefineGlobal(name, value) {
  rtObjectDefineProperty(rtGlobal, name, {
    value,
    writable: true,
    configurable: true,
    enumerable: true,
  });
});

// What a helper throws for `error`: a string as is, anything else as its error text.
function rtPlainFailure(error) {
  return typeof error === "string" ? error : cmErrorText(error);
}

const rtText = (function rtText(value) {
  if (rtFinished) return undefined;
  let item;
  try {
    item = cmTextItem(value);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSendRaw(
    rtReflectApply(rtJSONStringify, undefined, [{ __proto__: null, t: "text", text: item.text }]),
    false,
  );
  return undefined;
});

function rtImage() {
  if (rtFinished) return undefined;
  let item;
  try {
    item = cmImageItem(arguments, rtAllowRemoteImages);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSend({ t: "image", image_url: item.image_url, detail: item.detail });
  return undefined;
}

function rtSendItems(items) {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item.type === "text") rtSend({ t: "text", text: item.text });
    else if (item.type === "audio") rtSend({ t: "audio", audio_url: item.audio_url });
    else rtSend({ t: "image", image_url: item.image_url, detail: item.detail });
  }
}

function rtAudio() {
  if (rtFinished) return undefined;
  let item;
  try {
    item = cmAudioItem(arguments);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSendItems([item]);
  return undefined;
}

function rtGeneratedImage() {
  if (rtFinished) return undefined;
  let items;
  try {
    items = cmGeneratedImageItems(arguments, rtAllowRemoteImages);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSendItems(items);
  return undefined;
}

function rtForwardOutput() {
  if (rtFinished) return undefined;
  let items;
  try {
    items = cmForwardOutputItems(arguments, rtAllowRemoteImages);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSendItems(items);
  return undefined;
}

const rtConsoleMethod = (function rtConsoleMethod() {
  return function () {
    if (rtFinished) return undefined;
    let text;
    try {
      text = cmConsoleText(arguments);
    } catch (error) {
      throw rtPlainFailure(error);
    }
    rtSend({ t: "text", text });
    return undefined;
  };
});

function rtNotify(value) {
  if (rtFinished) return undefined;
  let text;
  try {
    text = cmNotifyText(value);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  rtSend({ t: "notify", text });
  return undefined;
}

function rtYieldControl() {
  if (rtFinished) return undefined;
  rtSend({ t: "yield" });
  return undefined;
}

function rtExit() {
  rtFinish(null);
  return undefined;
}

function rtStoreKey(key, what) {
  try {
    return rtString(key);
  } catch {
    throw rtHelperError(what + " key must be a string", rtTypeError);
  }
}

function rtStore(key, value) {
  const k = rtStoreKey(key, "store");
  if (rtFinished) return undefined;
  let json;
  try {
    json = rtReflectApply(rtJSONStringify, undefined, [value]);
  } catch (error) {
    throw rtPlainFailure(error);
  }
  if (json === undefined) {
    throw rtHelperError(
      "Unable to store " +
        rtReflectApply(rtJSONStringify, undefined, [k]) +
        ". Only plain serializable objects can be stored.",
    );
  }
  const problem = rtJsonProblem(json, rtMaxJsonDepth);
  if (problem !== null) {
    throw rtHelperError(
      "Unable to store " + rtReflectApply(rtJSONStringify, undefined, [k]) + ": " + problem,
    );
  }
  let entries = rtReflectApply(rtMapSize, rtStored, []);
  let chars = 0;
  rtReflectApply(rtMapForEach, rtStored, [
    (text, storedKey) => {
      if (storedKey !== k) chars += storedKey.length + text.length;
    },
  ]);
  if (!rtReflectApply(rtMapHas, rtStored, [k])) entries += 1;
  chars += k.length + json.length;
  if (entries > rtStoredLimits.entries || chars > rtStoredLimits.chars) {
    rtFinish(
      "code mode session storage exceeds its limit of " +
        rtStoredLimits.entries +
        " entries or " +
        rtStoredLimits.chars +
        " serialized bytes",
    );
    return undefined;
  }
  rtReflectApply(rtMapSet, rtStored, [k, json]);
  rtReflectApply(rtMapSet, rtWrites, [k, json]);
  return undefined;
}

function rtLoad(key) {
  const k = rtStoreKey(key, "load");
  if (!rtReflectApply(rtMapHas, rtStored, [k])) return undefined;
  return rtReflectApply(rtJSONParse, undefined, [rtReflectApply(rtMapGet, rtStored, [k])]);
}

function rtSetTimeout(callback, delay) {
  if (typeof callback !== "function") {
    throw rtHelperError("setTimeout expects a function callback", rtTypeError);
  }
  let ms = rtNumber(delay);
  if (!rtNumberIsFinite(ms) || ms <= 0) ms = 0;
  else ms = rtMathTrunc(ms);
  if (rtFinished) return undefined;
  rtTimerSeq += 1;
  const id = rtTimerSeq;
  rtReflectApply(rtMapSet, rtTimers, [id, callback]);
  rtSend({ t: "timer", id, ms });
  return id;
}

function rtClearTimeout(id) {
  if (id === undefined || id === null) return undefined;
  let n;
  try {
    n = rtNumber(id);
  } catch {
    throw rtHelperError("clearTimeout expects a numeric timeout id", rtTypeError);
  }
  if (!rtNumberIsFinite(n) || n <= 0) return undefined;
  if (rtReflectApply(rtMapDelete, rtTimers, [n]) && !rtFinished) {
    rtSend({ t: "clear", id: n });
  }
  return undefined;
}

// The globals a program sees, except what depends on its start command (`tools`,
// `ALL_TOOLS`: placeholders until rtStart defines them). Defined with the prelude
// (install.js calls this), which a warm isolate has evaluated before a cell takes it:
// a cell's start then defines two globals instead of fifteen. They are what rtStart
// would define (no value depends on the cell), and no program runs before its start
// command.
const rtDefineGlobals = (function rtDefineGlobals() {
  const console = {
    log: rtConsoleMethod(),
    info: rtConsoleMethod(),
    warn: rtConsoleMethod(),
    error: rtConsoleMethod(),
    debug: rtConsoleMethod(),
  };
  rtDefineGlobal("tools", undefined);
  rtDefineGlobal("ALL_TOOLS", undefined);
  rtDefineGlobal("clearTimeout", rtClearTimeout);
  rtDefineGlobal("setTimeout", rtSetTimeout);
  rtDefineGlobal("text", rtText);
  rtDefineGlobal("image", rtImage);
  rtDefineGlobal("audio", rtAudio);
  rtDefineGlobal("generatedImage", rtGeneratedImage);
  rtDefineGlobal("forward_output", rtForwardOutput); // ours, not the reference's
  rtDefineGlobal("console", console); // ours, not the reference's
  rtDefineGlobal("store", rtStore);
  rtDefineGlobal("load", rtLoad);
  rtDefineGlobal("notify", rtNotify);
  rtDefineGlobal("yield_control", rtYieldControl);
  rtDefineGlobal("exit", rtExit);
});
