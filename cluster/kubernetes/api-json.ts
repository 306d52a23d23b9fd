// The apiserver's JSON parsed without `metadata.managedFields`, for the objects the service
// reads on every submission: the answers of its plain calls (json-call.ts) and every watch
// event (line-watch.ts). Nothing in the service reads managedFields (server-side apply's record
// of which writer set which field), yet every object carries them: a quarter of a driver pod's
// bytes, half of its keys and two thirds of its JSON objects, each key looked up in V8's string
// table and each object's shape among its hidden-class transitions (perf over a run: the parses
// were 10% of the service's CPU, that lookup work half of it). A pod owned by its Application also
// holds a key with the owner's uid in it (`k:{"uid":"…"}`): one more key and shape per submission.
// The text is cut before the parse, not the object after it: that is the cost. Only the
// apiserver's compact form is cut (an object whose `metadata` member, or a watch event's
// `object`'s, holds `managedFields`); any other text is parsed whole, as JSON.parse would.
// An update sent without managedFields keeps the stored ones (the apiserver's rule for clients
// that do not know them), so objects read here may be written back.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** JSON.parse of the apiserver's text, without the object's (or a watch event's object's) metadata.managedFields. */
export function parseApiJson(text: string): unknown {
  return JSON.parse(withoutManagedFields(text));
}

/** `text` with the managedFields member cut out, or `text` itself when it has none where the apiserver puts it. */
export function withoutManagedFields(text: string): string {
  const span = managedFieldsIn(text, 0, true);
  if (!span) return text;
  let [start, end] = span;
  // The member and one comma beside it: `{"a":1,"managedFields":[…],"b":2}` or `…,"managedFields":[…]}`.
  if (text.charCodeAt(end) === COMMA) end += 1;
  else if (text.charCodeAt(start - 1) === COMMA) start -= 1;
  return text.slice(0, start) + text.slice(end);
}

/**
 * Where the managedFields member of the object at `at` is ([first, after last] character), in its
 * `metadata`, or (`envelope`: a watch event) in its `object`'s metadata.
 */
function managedFieldsIn(text: string, at: number, envelope: boolean): [number, number] | undefined {
  return eachMember(text, at, (keyAt, valueAt) => {
    if (isKey(text, keyAt, valueAt, 'metadata')) return memberSpan(text, valueAt, 'managedFields') ?? null;
    if (envelope && isKey(text, keyAt, valueAt, 'object')) return managedFieldsIn(text, valueAt, false) ?? null;
    return undefined;
  }) ?? undefined;
}

/** The span of the member `name` of the object at `at`. */
function memberSpan(text: string, at: number, name: string): [number, number] | undefined {
  return eachMember(text, at, (keyAt, valueAt) => {
    if (!isKey(text, keyAt, valueAt, name)) return undefined;
    const end = skipValue(text, valueAt);
    return end < 0 ? null : [keyAt, end];
  }) ?? undefined;
}

/** Whether the key from `keyAt` to its colon before `valueAt` is `"name"` (keys looked for have no escapes). */
const isKey = (text: string, keyAt: number, valueAt: number, name: string): boolean =>
  valueAt - keyAt === name.length + 3 && text.startsWith(name, keyAt + 1);

/**
 * Calls `visit` with each member of the object at `at` (where its key and its value start) until
 * it returns something other than undefined, which is returned (null: stop, found nothing).
 * Undefined when the object ends, or when the text is not compact JSON there.
 */
function eachMember<R>(text: string, at: number, visit: (keyAt: number, valueAt: number) => R | undefined): R | undefined {
  if (text.charCodeAt(at) !== OPEN_BRACE) return undefined;
  let keyAt = at + 1;
  for (;;) {
    if (text.charCodeAt(keyAt) !== QUOTE) return undefined;
    const keyEnd = skipString(text, keyAt);
    if (keyEnd < 0 || text.charCodeAt(keyEnd) !== COLON) return undefined;
    const found = visit(keyAt, keyEnd + 1);
    if (found !== undefined) return found;
    const valueEnd = skipValue(text, keyEnd + 1);
    if (valueEnd < 0 || text.charCodeAt(valueEnd) !== COMMA) return undefined;
    keyAt = valueEnd + 1;
  }
}

/** The index after the string that starts at `at` (a quote), or -1. */
function skipString(text: string, at: number): number {
  for (let quote = text.indexOf('"', at + 1); quote >= 0; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
  }
  return -1;
}

/** The index after the value that starts at `at`, or -1 when it does not end. */
function skipValue(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === QUOTE) return skipString(text, at);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) return primitiveEnd(text, at);
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(text, i) - 1;
      if (i < 0) return -1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth += 1;
    } else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) {
      return i + 1;
    }
  }
  return -1;
}

/** The end of a number, true, false or null: the next delimiter. */
function primitiveEnd(text: string, at: number): number {
  let end = at;
  while (end < text.length) {
    const c = text.charCodeAt(end);
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET) break;
    end += 1;
  }
  return end;
}
