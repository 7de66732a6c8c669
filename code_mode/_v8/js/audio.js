// audio(): how its argument becomes an audio item, and the WAV clips too short to keep.
//
// Like output.js it only declares `cmOut*` / `cm*` names and uses the built-ins of
// builtins.js. An audio item is {type: "audio", audio_url}, always a `data:` URL. A
// PCM WAV clip shorter than 25 ms becomes a text item saying so instead (audio models
// cannot encode such clips reliably); the clip's length is measured from the bytes
// actually present, whatever its header claims, by reading only the header bytes out of
// the base64 text: nothing is decoded or allocated for the samples.

const cmOutAudioExpects =
  "audio expects a non-empty audio URL string, an object with audio_url, or a raw MCP " +
  "audio block";
const cmOutAudioInvalid = "Tool call failed: invalid audio output. Pass a base64 data URI instead";
const cmOutAudioTooShort =
  "Audio output omitted because the clip is shorter than 25 ms; use a longer clip.";
// Longest base64 payload that is measured at all: the reference's bound, 50 MiB of
// audio (a message that long fails the cell anyway, RuntimeConfig.max_message_bytes).
const CM_OUT_WAV_MAX_BASE64 = 69905068;
const CM_OUT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// The subtype GUID of WAVE_FORMAT_EXTENSIBLE after its first two bytes (the encoding).
const CM_OUT_WAV_GUID_TAIL = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71];

// audio(urlOrItem) with `args` the call's `arguments`: the item to output.
function cmAudioItem(args) {
  const value = args.length >= 1 ? args[0] : undefined;
  let url;
  if (typeof value === "string") {
    url = value;
  } else if (cmOutIsObjectLike(value) && !rtArrayIsArray(value)) {
    const audioUrl = cmOutGet(value, "audio_url");
    if (audioUrl !== undefined) {
      if (typeof audioUrl !== "string") throw cmOutFail(rtTypeError, cmOutAudioExpects);
      url = audioUrl;
    } else {
      url = cmOutMcpAudioUrl(value);
    }
  } else {
    throw cmOutFail(rtTypeError, cmOutAudioExpects);
  }
  if (url === "") throw cmOutFail(rtTypeError, cmOutAudioExpects);
  if (cmOutScheme(url) !== "data") throw cmOutFail(rtError, cmOutAudioInvalid);
  const seconds = cmOutWavSeconds(url);
  if (seconds !== undefined && seconds < 0.025) return cmOutText(cmOutAudioTooShort);
  return { type: "audio", audio_url: cmOutWellFormed(url) };
}

// The URL of a raw MCP audio block {type: "audio", data, mimeType}.
function cmOutMcpAudioUrl(value) {
  const block = cmOutToJson(value);
  if (!cmOutIsJsonObject(block)) throw cmOutFail(rtTypeError, cmOutAudioExpects);
  const type = cmOutOwn(block, "type");
  if (typeof type !== "string") throw cmOutFail(rtTypeError, cmOutAudioExpects);
  if (type !== "audio") {
    throw cmOutFail(rtError, 'audio only accepts MCP audio blocks, got "' + type + '"');
  }
  const data = cmOutOwn(block, "data");
  if (typeof data !== "string" || data === "") {
    throw cmOutFail(rtError, "audio expected MCP audio data");
  }
  return cmOutMcpImageUrl(block, data); // the same rule as an image block's URL
}

// ---------------------------------------------------------------------------
// The length of a PCM WAV clip, in seconds; undefined for anything else (another
// format, a compressed encoding, a payload that is not strict base64, a header that
// ends early), which is then kept as it is.

function cmOutBase64Digit(c) {
  if (c >= 65 && c <= 90) return c - 65; // A-Z
  if (c >= 97 && c <= 122) return c - 71; // a-z
  if (c >= 48 && c <= 57) return c + 4; // 0-9
  if (c === 43) return 62; // +
  if (c === 47) return 63; // /
  return 0; // the padding `=`
}

// Byte `i` of the data that base64 text `b64` encodes.
function cmOutBase64Byte(b64, i) {
  const group = rtMathFloor(i / 3);
  const at = group * 4;
  let bits = 0;
  for (let k = 0; k < 4; k++) {
    bits = bits * 64 + cmOutBase64Digit(rtReflectApply(rtStringCharCodeAt, b64, [at + k]));
  }
  return rtMathFloor(bits / 2 ** (16 - 8 * (i % 3))) % 256;
}

function cmOutWavSeconds(url) {
  let comma = -1;
  for (let i = 0; i < url.length; i++) {
    if (rtReflectApply(rtStringCharCodeAt, url, [i]) === 44) {
      comma = i;
      break;
    }
  }
  if (comma < 0) return undefined;
  const b64 = rtReflectApply(rtStringSlice, url, [comma + 1]);
  if (!cmOutHasBase64Flag(rtReflectApply(rtStringSlice, url, [0, comma]))) return undefined;
  if (b64.length > CM_OUT_WAV_MAX_BASE64) return undefined;
  if (rtReflectApply(rtRegExpExec, CM_OUT_BASE64, [b64]) === null) return undefined;
  let total = (b64.length / 4) * 3;
  if (b64.length > 0 && rtReflectApply(rtStringCharCodeAt, b64, [b64.length - 1]) === 61) {
    total -= 1;
    if (rtReflectApply(rtStringCharCodeAt, b64, [b64.length - 2]) === 61) total -= 1;
  }
  if (!cmOutCanonicalBase64Tail(b64, total)) return undefined;
  const byte = (i) => cmOutBase64Byte(b64, i);
  const u16 = (i) => byte(i) + byte(i + 1) * 256;
  const u32 = (i) => u16(i) + u16(i + 2) * 65536;
  const tag = (i) => rtStringFromCharCode(byte(i), byte(i + 1), byte(i + 2), byte(i + 3));
  if (total < 12 || tag(0) !== "RIFF" || tag(8) !== "WAVE") return undefined;
  let rate = 0;
  let align = 0;
  let at = 12;
  while (total - at >= 8) {
    const id = tag(at);
    const size = u32(at + 4);
    const start = at + 8;
    const present = total - start;
    // A streaming header may declare more data than the file holds.
    const length = size < present ? size : present;
    if (id === "fmt ") {
      if (length < 2) return undefined;
      let encoding = u16(start);
      if (encoding === 0xfffe) {
        if (length < 40) return undefined;
        for (let k = 0; k < CM_OUT_WAV_GUID_TAIL.length; k++) {
          if (byte(start + 26 + k) !== CM_OUT_WAV_GUID_TAIL[k]) return undefined;
        }
        encoding = u16(start + 24);
      }
      if (encoding !== 1 && encoding !== 3) return undefined; // PCM or IEEE float
      if (length < 14) return undefined;
      rate = u32(start + 4);
      align = u16(start + 12);
      if (rate === 0 || align === 0) return undefined;
    } else if (id === "data") {
      if (rate === 0) return undefined; // no format chunk before the data
      return rtMathFloor(length / align) / rate;
    }
    const next = size + (size % 2); // chunks are padded to an even size
    if (next > present) return undefined;
    at = start + next;
  }
  return undefined;
}

// Whether the data URL's parameters (after the media type) include `base64`.
function cmOutHasBase64Flag(head) {
  let part = "";
  let index = 0;
  for (let i = 0; i <= head.length; i++) {
    const c = i < head.length ? rtReflectApply(rtStringCharCodeAt, head, [i]) : 59;
    if (c !== 59) {
      part += rtStringFromCharCode(c);
      continue;
    }
    if (index > 0 && cmOutAsciiLower(part) === "base64") return true;
    index += 1;
    part = "";
  }
  return false;
}

// Strict base64 leaves no stray bits in its last, padded group.
function cmOutCanonicalBase64Tail(b64, total) {
  const padding = (b64.length / 4) * 3 - total;
  if (padding === 0) return true;
  const last = cmOutBase64Digit(rtReflectApply(rtStringCharCodeAt, b64, [b64.length - 1 - padding]));
  return padding === 1 ? last % 4 === 0 : last % 16 === 0;
}
