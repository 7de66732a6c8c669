// Output helpers: how values become text, how image()/forward_output() arguments become
// output items, and how a thrown value becomes error text.
//
// It only declares `cmOut*` constants and `cm*` functions, and calls built-ins only
// through the `rt*` constants of builtins.js (methods through `rtReflectApply`), so a
// program that later replaces `JSON.stringify`, `String.prototype.toLowerCase`,
// `Array.isArray`, `Object.prototype.hasOwnProperty`, or adds setters/properties to
// `Object.prototype` / `Array.prototype`, cannot change what these helpers do.
// (JSON.stringify still honours `toJSON` and getters: that is part of the output-text
// rule.) tests/js/test_output.py loads builtins.js and this file alone.
//
// Items: {type: "text", text}, {type: "image", image_url, detail} (`detail` always one of
// "auto", "low", "high", "original"; default "high") and {type: "audio", audio_url}.
// A helper's own failure is thrown as a plain string, its message (cmOutFail), as the
// reference's helpers do: `catch (e)` gets the text, `e.message` is undefined.
//
// `const f = (function f() {...});` marks a function that every cell's start runs
// (`text` output): compiled ahead, with the prelude (see "Compiled ahead" in
// builtins.js); other functions are compiled on first use.

const cmOutImageExpects =
  "image expects a non-empty image URL string, an object with image_url and optional " +
  "detail, or a raw MCP image block";
const cmOutImageUrlScheme = "image expects an http(s) or data URL";
const cmOutImageRemote =
  "Tool call failed: remote image URLs are not supported in tool outputs. Pass a base64 " +
  "data URI instead";
const cmOutImageInvalid = "Tool call failed: invalid image output. Pass a base64 data URI instead";
const cmOutDetailValues = "image detail must be one of: auto, low, high, original";
const cmOutDetailString = "image detail must be a string when provided";
const cmOutMcpImageData = "image expected MCP image data";
const cmOutForwardExpects =
  "forward_output expects a direct tool output with `content` or `content_items`, " +
  "a text/image content item, an image_url object, or a string output";
const cmOutForwardEntriesMessage =
  "forward_output expected content entries to be text/image objects";
const cmOutSerializeNothing =
  "failed to serialize JavaScript value: expected value at line 1 column 1";
const cmOutDetailMetaKey = "codex/imageDetail";

// ---------------------------------------------------------------------------
// Small, pollution-proof primitives.

// A helper's own failure: the plain string `message` (thrown as is), so that an
// uncaught one reads as exactly the message. `ctor` only says which error the
// reference would name in prose (TypeError for a wrong argument type).
function cmOutFail(ctor, message) {
  return message;
}

function cmOutPush(array, value) {
  rtReflectDefineProperty(array, array.length, {
    __proto__: null,
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

function cmOutIsSurrogate(c) {
  return c >= 0xd800 && c <= 0xdfff;
}

// Lone UTF-16 surrogates become U+FFFD.
const cmOutWellFormed = (function cmOutWellFormed(s) {
  if (typeof rtStringToWellFormed === "function") {
    return rtReflectApply(rtStringToWellFormed, s, []);
  }
  const length = s.length;
  let out = "";
  let start = 0;
  for (let i = 0; i < length; i++) {
    const c = rtReflectApply(rtStringCharCodeAt, s, [i]);
    if (!cmOutIsSurrogate(c)) continue;
    if (c <= 0xdbff && i + 1 < length) {
      const next = rtReflectApply(rtStringCharCodeAt, s, [i + 1]);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    out += rtReflectApply(rtStringSlice, s, [start, i]) + "\uFFFD";
    start = i + 1;
  }
  if (start === 0) return s;
  return out + rtReflectApply(rtStringSlice, s, [start]);
});

// ASCII-only lower-casing (like Rust's to_ascii_lowercase); only used on short strings.
function cmOutAsciiLower(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = rtReflectApply(rtStringCharCodeAt, s, [i]);
    out += rtStringFromCharCode(c >= 65 && c <= 90 ? c + 32 : c);
  }
  return out;
}

function cmOutStartsWithAsciiCI(s, lowerPrefix) {
  if (s.length < lowerPrefix.length) return false;
  const head = rtReflectApply(rtStringSlice, s, [0, lowerPrefix.length]);
  return cmOutAsciiLower(head) === lowerPrefix;
}

function cmOutIsObjectLike(value) {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

// A JSON object (plain, non-array) as produced by JSON.parse.
function cmOutIsJsonObject(value) {
  return typeof value === "object" && value !== null && !rtArrayIsArray(value);
}

// Own property of JSON data (never consults a possibly polluted prototype).
function cmOutOwn(object, key) {
  return rtObjectHasOwn(object, key) ? object[key] : undefined;
}

// A normal property read (getters run); a throwing read counts as absent.
function cmOutGet(object, key) {
  try {
    return object[key];
  } catch {
    return undefined;
  }
}

// JavaScript -> JSON data: stringify then parse, giving fresh plain
// data. `undefined` when stringify produces nothing; stringify exceptions propagate.
function cmOutToJson(value) {
  const json = rtReflectApply(rtJSONStringify, undefined, [value]);
  if (json === undefined) return undefined;
  return rtReflectApply(rtJSONParse, undefined, [json]);
}

const cmOutText = (function cmOutText(text) {
  return { type: "text", text: cmOutWellFormed(text) };
});

function cmOutImage(imageUrl, detail) {
  return { type: "image", image_url: cmOutWellFormed(imageUrl), detail };
}

// ---------------------------------------------------------------------------
// Shared image rules.

// `data:` URLs only (the reference's rule), or, with remote URLs allowed
// (RuntimeConfig.allow_remote_image_urls), also `http://` and `https://` ones.
function cmOutCheckImageUrl(url, allowRemote) {
  if (url === "") throw cmOutFail(rtTypeError, cmOutImageExpects);
  if (allowRemote === true) {
    if (cmOutStartsWithAsciiCI(url, "http://") || cmOutStartsWithAsciiCI(url, "https://")) {
      return;
    }
    if (cmOutStartsWithAsciiCI(url, "data:")) return;
    throw cmOutFail(rtError, cmOutImageUrlScheme);
  }
  const scheme = cmOutScheme(url);
  if (scheme === "http" || scheme === "https") throw cmOutFail(rtError, cmOutImageRemote);
  if (scheme !== "data") throw cmOutFail(rtError, cmOutImageInvalid);
}

// The ASCII-lower-cased part of `url` before its first `:`; undefined without one.
function cmOutScheme(url) {
  for (let i = 0; i < url.length; i++) {
    if (rtReflectApply(rtStringCharCodeAt, url, [i]) === 58) {
      return cmOutAsciiLower(rtReflectApply(rtStringSlice, url, [0, i]));
    }
  }
  return undefined;
}

// A detail string, ASCII-case-insensitive; returns the lower-cased value or undefined.
function cmOutDetailOrUndefined(detail) {
  if (detail.length > 8) return undefined;
  const lower = cmOutAsciiLower(detail);
  if (lower === "auto" || lower === "low" || lower === "high" || lower === "original") {
    return lower;
  }
  return undefined;
}

function cmOutParseDetail(detail) {
  const parsed = cmOutDetailOrUndefined(detail);
  if (parsed === undefined) throw cmOutFail(rtError, cmOutDetailValues);
  return parsed;
}

// URL of an MCP image block (JSON data with a non-empty string `data`).
function cmOutMcpImageUrl(block, data) {
  if (cmOutStartsWithAsciiCI(data, "data:")) return data;
  let mime = cmOutOwn(block, "mimeType");
  if (typeof mime !== "string" || mime === "") mime = cmOutOwn(block, "mime_type");
  if (typeof mime !== "string" || mime === "") mime = "application/octet-stream";
  return "data:" + mime + ";base64," + data;
}

function cmOutMcpMetaDetail(block) {
  const meta = cmOutOwn(block, "_meta");
  if (!cmOutIsJsonObject(meta)) return undefined;
  const detail = cmOutOwn(meta, cmOutDetailMetaKey);
  return typeof detail === "string" ? detail : undefined;
}

// ---------------------------------------------------------------------------
// Public helpers (what the rest of the runtime uses).

// The output-text rule.
const cmOutputText = (function cmOutputText(value) {
  const kind = typeof value;
  if (
    value === undefined ||
    value === null ||
    kind === "boolean" ||
    kind === "number" ||
    kind === "bigint" ||
    kind === "string"
  ) {
    return cmOutWellFormed(rtString(value));
  }
  const json = rtReflectApply(rtJSONStringify, undefined, [value]);
  return json === undefined ? "undefined" : cmOutWellFormed(json);
});

const cmTextItem = (function cmTextItem(value) {
  return cmOutText(cmOutputText(value));
});

// image(urlOrItem, detail?) with `args` the call's `arguments`.
// `allowRemote === true` admits http(s) URLs too (see cmOutCheckImageUrl).
function cmImageItem(args, allowRemote) {
  let override;
  if (args.length >= 2) {
    const detail = args[1];
    if (typeof detail === "string") override = detail;
    else if (detail !== null && detail !== undefined) {
      throw cmOutFail(rtTypeError, cmOutDetailString);
    }
  }

  const value = args.length >= 1 ? args[0] : undefined;
  let url;
  let embedded;
  if (typeof value === "string") {
    url = value;
  } else if (cmOutIsObjectLike(value) && !rtArrayIsArray(value)) {
    const imageUrl = cmOutGet(value, "image_url");
    if (imageUrl !== undefined) {
      if (typeof imageUrl !== "string") throw cmOutFail(rtTypeError, cmOutImageExpects);
      url = imageUrl;
      const detail = cmOutGet(value, "detail");
      if (typeof detail === "string") embedded = detail;
      else if (detail !== null && detail !== undefined) {
        throw cmOutFail(rtTypeError, cmOutDetailString);
      }
    } else {
      const block = cmOutToJson(value);
      if (!cmOutIsJsonObject(block)) throw cmOutFail(rtTypeError, cmOutImageExpects);
      const type = cmOutOwn(block, "type");
      if (typeof type !== "string") throw cmOutFail(rtTypeError, cmOutImageExpects);
      if (type !== "image") {
        throw cmOutFail(rtError, 'image only accepts MCP image blocks, got "' + type + '"');
      }
      const data = cmOutOwn(block, "data");
      if (typeof data !== "string" || data === "") {
        throw cmOutFail(rtError, cmOutMcpImageData);
      }
      url = cmOutMcpImageUrl(block, data);
      const meta = cmOutMcpMetaDetail(block);
      if (meta === "auto" || meta === "low" || meta === "high" || meta === "original") {
        embedded = meta;
      }
    }
  } else {
    throw cmOutFail(rtTypeError, cmOutImageExpects);
  }

  cmOutCheckImageUrl(url, allowRemote);
  const detail = override !== undefined ? override : embedded;
  return cmOutImage(url, detail === undefined ? "high" : cmOutParseDetail(detail));
}

// generatedImage(result) with `args` the call's `arguments`: the image item of
// `result` (as image(result) with no detail argument), then its `output_hint`, if any,
// as a text item. The hint is checked first, as the reference does.
function cmGeneratedImageItems(args, allowRemote) {
  const value = args.length >= 1 ? args[0] : undefined;
  if (!cmOutIsObjectLike(value)) {
    throw cmOutFail(rtTypeError, "generatedImage expects an image generation result object");
  }
  let hint;
  try {
    hint = value.output_hint;
  } catch {
    throw cmOutFail(rtError, "failed to read generatedImage output_hint");
  }
  if (hint !== undefined && typeof hint !== "string") {
    throw cmOutFail(rtTypeError, "generatedImage output_hint must be a string when provided");
  }
  const items = [cmImageItem([value], allowRemote)];
  if (hint !== undefined) cmOutPush(items, cmOutText(hint));
  return items;
}

// The image-url rule of forward_output.
function cmOutForwardImageUrl(object, allowRemote) {
  let url;
  if (rtObjectHasOwn(object, "image_url")) url = object.image_url;
  else if (rtObjectHasOwn(object, "imageUrl")) url = object.imageUrl;
  else throw cmOutFail(rtTypeError, "output expected image content to include `image_url`");
  if (typeof url !== "string") {
    throw cmOutFail(rtTypeError, "output expected `image_url` to be a string");
  }
  cmOutCheckImageUrl(url, allowRemote);
  const detail = cmOutOwn(object, "detail");
  let parsed = "high";
  if (typeof detail === "string") parsed = cmOutParseDetail(detail);
  else if (detail !== null && detail !== undefined) {
    throw cmOutFail(rtTypeError, cmOutDetailString);
  }
  return cmOutImage(url, parsed);
}

// The entry rule of forward_output; undefined when the object is not an item.
function cmOutForwardEntry(object, allowRemote) {
  const type = cmOutOwn(object, "type");
  if (typeof type === "string") {
    if (type === "text" || type === "input_text" || type === "inputText") {
      const text = cmOutOwn(object, "text");
      if (typeof text !== "string") {
        throw cmOutFail(rtTypeError, "output expected `" + type + "` content to include `text`");
      }
      return cmOutText(text);
    }
    if (type === "image") {
      const data = cmOutOwn(object, "data");
      if (typeof data !== "string") {
        throw cmOutFail(rtTypeError, "output expected `image` content to include `data`");
      }
      if (data === "") throw cmOutFail(rtError, "output expected MCP image data");
      const url = cmOutMcpImageUrl(object, data);
      cmOutCheckImageUrl(url, allowRemote);
      const meta = cmOutMcpMetaDetail(object);
      const detail = meta === undefined ? undefined : cmOutDetailOrUndefined(meta);
      return cmOutImage(url, detail === undefined ? "high" : detail);
    }
    if (type === "input_image" || type === "inputImage") {
      return cmOutForwardImageUrl(object, allowRemote);
    }
    throw cmOutFail(
      rtError,
      "forward_output only supports text and image content blocks, got `" + type + "`",
    );
  }
  if (rtObjectHasOwn(object, "image_url") || rtObjectHasOwn(object, "imageUrl")) {
    return cmOutForwardImageUrl(object, allowRemote);
  }
  return undefined;
}

function cmOutForwardEntries(entries, items, allowRemote) {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (!cmOutIsJsonObject(entry)) throw cmOutFail(rtTypeError, cmOutForwardEntriesMessage);
    const item = cmOutForwardEntry(entry, allowRemote);
    if (item === undefined) throw cmOutFail(rtTypeError, cmOutForwardExpects);
    cmOutPush(items, item);
  }
}

// One tool output (JSON object); false when nothing matched.
function cmOutForwardObject(object, items, allowRemote) {
  if (rtObjectHasOwn(object, "content")) {
    const content = object.content;
    if (!rtArrayIsArray(content)) {
      throw cmOutFail(rtTypeError, "output expected `content` to be an array");
    }
    cmOutForwardEntries(content, items, allowRemote);
    return true;
  }
  let hasItems = false;
  let contentItems;
  if (rtObjectHasOwn(object, "content_items")) {
    hasItems = true;
    contentItems = object.content_items;
  } else if (rtObjectHasOwn(object, "contentItems")) {
    hasItems = true;
    contentItems = object.contentItems;
  }
  if (hasItems) {
    if (!rtArrayIsArray(contentItems)) {
      throw cmOutFail(rtTypeError, "output expected `content_items` to be an array");
    }
    cmOutForwardEntries(contentItems, items, allowRemote);
    return true;
  }
  const item = cmOutForwardEntry(object, allowRemote);
  if (item !== undefined) {
    cmOutPush(items, item);
    return true;
  }
  const output = cmOutOwn(object, "output");
  if (typeof output === "string") {
    cmOutPush(items, cmOutText(output));
    return true;
  }
  return false;
}

// forward_output(...outputs) with `args` the call's `arguments`. Every
// argument is validated before the items are returned.
function cmForwardOutputItems(args, allowRemote) {
  const items = [];
  for (let i = 0; i < args.length; i++) {
    const value = args[i];
    if (typeof value === "string") {
      cmOutPush(items, cmOutText(value));
      continue;
    }
    const json = cmOutToJson(value);
    if (json === undefined) throw cmOutFail(rtError, cmOutSerializeNothing);
    if (!cmOutIsJsonObject(json) || !cmOutForwardObject(json, items, allowRemote)) {
      throw cmOutFail(rtTypeError, cmOutForwardExpects);
    }
  }
  return items;
}

// console.*(...args): joined by one space; strings as-is, others by the output-text rule.
function cmConsoleText(args) {
  let out = "";
  for (let i = 0; i < args.length; i++) {
    const value = args[i];
    if (i > 0) out += " ";
    out += typeof value === "string" ? value : cmOutputText(value);
  }
  return cmOutWellFormed(out);
}

function cmNotifyText(value) {
  const text = cmOutputText(value);
  if (rtReflectApply(rtStringTrim, text, []) === "") {
    throw cmOutFail(rtError, "notify expects non-empty text");
  }
  return text;
}

// The error-text rule.
function cmErrorText(value) {
  if (cmOutIsObjectLike(value)) {
    const stack = cmOutGet(value, "stack");
    if (typeof stack === "string") return cmOutWellFormed(stack);
  }
  try {
    return cmOutWellFormed(rtString(value));
  } catch {
    return "";
  }
}
