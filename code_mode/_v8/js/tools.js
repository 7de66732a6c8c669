// The `tools` global: one function per enabled tool, each sending a `tool` message and
// returning a promise that the host's `result` command settles (commands.js). rtStart
// (start.js) makes it from the tools its start command lists.

const rtMakeTool = (function rtMakeTool(ident, kind) {
  const tool = function (input) {
    if (rtFinished) return rtNever();
    let json;
    if (input !== undefined) {
      // Throws synchronously (BigInt, cycles, throwing toJSON), as documented: the
      // error's text, a plain string (see globals.js).
      try {
        json = rtReflectApply(rtJSONStringify, undefined, [input]);
      } catch (error) {
        throw rtPlainFailure(error);
      }
    }
    if (kind === "function") {
      if (json === undefined) json = "{}";
      else if (json[0] !== "{") {
        return rtReflectApply(rtPromiseReject, rtPromise, [
          rtHelperError("tool `" + ident + "` expects a JSON object for arguments"),
        ]);
      }
    } else if (json === undefined || json[0] !== '"') {
      return rtReflectApply(rtPromiseReject, rtPromise, [
        rtHelperError("tool `" + ident + "` expects a string input"),
      ]);
    }
    const problem = rtJsonProblem(json, 0); // its depth is the host's to check
    if (problem !== null) {
      return rtReflectApply(rtPromiseReject, rtPromise, [
        rtHelperError("tool `" + ident + "` input is not JSON data: " + problem),
      ]);
    }
    rtToolSeq += 1;
    const id = "tool-" + rtToolSeq;
    const { promise, resolve, reject } = rtReflectApply(rtPromiseWithResolvers, rtPromise, []);
    rtReflectApply(rtMapSet, rtPendingTools, [id, { resolve, reject }]);
    rtSendRaw(
      '{"t":"tool","id":"' +
        id +
        '","name":' +
        rtReflectApply(rtJSONStringify, undefined, [ident]) +
        ',"input":' +
        json +
        "}",
      true,
    );
    return promise;
  };
  rtObjectDefineProperty(tool, "name", { value: ident });
  return tool;
});

const RT_NOT_TOOLS = { then: true, toJSON: true, constructor: true, __proto__: null };

const rtMakeTools = (function rtMakeTools(definitions) {
  const target = {};
  for (let i = 0; i < definitions.length; i++) {
    const d = definitions[i];
    // Defined, not assigned: a tool named `__proto__` must be an own property.
    rtObjectDefineProperty(target, d.ident, {
      value: rtMakeTool(d.ident, d.kind),
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
  return new rtProxy(target, {
    get(obj, key, receiver) {
      if (
        typeof key !== "string" ||
        rtObjectHasOwn(obj, key) ||
        key in rtObjectPrototype ||
        RT_NOT_TOOLS[key] === true
      ) {
        return rtReflectApply(rtReflectGet, undefined, [obj, key, receiver]);
      }
      return function () {
        return rtReflectApply(rtPromiseReject, rtPromise, [
          rtHelperError("tool `" + key + "` is not enabled in exec"),
        ]);
      };
    },
  });
});
