// IP address parsing for rate-limit keys. Every spelling of one address (leading zeros, upper-case hex,
// "::" placement, an IPv4-mapped IPv6 form, brackets or a port) yields the same canonical text, so a
// client cannot split its limit by spelling its address differently. Anything that is not an address
// yields null; the caller decides what that means (never "no limit").

// Longer than any spelling of an address with brackets and a port: refuse before parsing.
const MAX_ADDRESS_TEXT = 64;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
// An IPv4 address already in canonical form (no leading zeros, no decoration): what cf-connecting-ip
// holds for every IPv4 client. It is its own canonical form, found with one test instead of a parse.
const CANONICAL_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * canonicalAddress parses `text` as an IPv4 or IPv6 address and returns its canonical form, with IPv6
 * addresses reduced to their first `ipv6Prefix` bits ("2001:db8:1:2::/64"; no suffix at 128) and
 * IPv4-mapped IPv6 addresses returned as IPv4. Returns null for anything else.
 * @param {unknown} text
 * @param {number} ipv6Prefix
 * @returns {string | null}
 */
export function canonicalAddress(text, ipv6Prefix = 64) {
  if (typeof text !== "string" || text.length > MAX_ADDRESS_TEXT) return null;
  if (CANONICAL_IPV4.test(text)) return text;
  const address = stripDecorations(text.trim());
  if (address === null) return null;
  const v4 = parseIPv4(address);
  if (v4 !== null) return formatIPv4(v4);
  const v6 = parseIPv6(address);
  if (v6 === null) return null;
  if (isIPv4Mapped(v6)) return formatIPv4([v6[6] >> 8, v6[6] & 0xff, v6[7] >> 8, v6[7] & 0xff]);
  return formatIPv6Prefix(v6, ipv6Prefix);
}

// "[v6]", "[v6]:port" and "v4:port" (as some proxies write X-Forwarded-For) become the bare address.
/** @param {string} text @returns {string | null} */
function stripDecorations(text) {
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end < 0) return null;
    const rest = text.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return null;
    return text.slice(1, end);
  }
  const colon = text.indexOf(":");
  if (colon > 0 && colon === text.lastIndexOf(":") && /^:\d{1,5}$/.test(text.slice(colon))) {
    return text.slice(0, colon);
  }
  return text;
}

/** @param {string} text @returns {number[] | null} */
function parseIPv4(text) {
  const match = IPV4.exec(text);
  if (match === null) return null;
  const octets = [Number(match[1]), Number(match[2]), Number(match[3]), Number(match[4])];
  for (const octet of octets) if (octet > 255) return null;
  return octets;
}

/** @param {readonly number[]} octets @returns {string} */
function formatIPv4(octets) {
  return `${octets[0]}.${octets[1]}.${octets[2]}.${octets[3]}`;
}

// Returns the eight 16-bit groups, or null. Zone ids ("%eth0") are refused: they name a local link,
// never a client on the Internet.
/** @param {string} text @returns {number[] | null} */
function parseIPv6(text) {
  if (text.indexOf(":") < 0 || text.indexOf("%") >= 0) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  // The last 32 bits may be written as dotted IPv4 ("::ffff:192.0.2.1"): only at the very end.
  const head = parseGroups(halves[0], !compressed);
  const tail = compressed ? parseGroups(halves[1], true) : [];
  if (head === null || tail === null) return null;
  if (!compressed) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return null; // "::" stands for at least one group
  const groups = head;
  for (let i = 0; i < missing; i++) groups.push(0);
  groups.push(...tail);
  return groups;
}

/** @param {string} text @param {boolean} dottedLastAllowed @returns {number[] | null} */
function parseGroups(text, dottedLastAllowed) {
  if (text === "") return [];
  const parts = text.split(":");
  /** @type {number[]} */
  const groups = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (dottedLastAllowed && i === parts.length - 1 && part.indexOf(".") >= 0) {
      const v4 = parseIPv4(part);
      if (v4 === null) return null;
      groups.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
    } else if (HEX_GROUP.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return null;
    }
  }
  return groups;
}

/** @param {readonly number[]} groups @returns {boolean} */
function isIPv4Mapped(groups) {
  return groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff;
}

// RFC 5952 text of the address's first `prefix` bits: lower case, no leading zeros, the longest run
// of two or more zero groups (the first, on a tie) written "::".
/** @param {readonly number[]} groups @param {number} prefix @returns {string} */
function formatIPv6Prefix(groups, prefix) {
  const masked = groups.map((group, i) => {
    const bitsInGroup = Math.max(0, Math.min(16, prefix - 16 * i));
    return bitsInGroup === 16 ? group : group & ((0xffff << (16 - bitsInGroup)) & 0xffff);
  });
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (masked[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && masked[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = masked.map((group) => group.toString(16));
  let text;
  if (bestStart < 0) {
    text = hex.join(":");
  } else {
    text = `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
  }
  return prefix < 128 ? `${text}/${prefix}` : text;
}

/**
 * addressGroups parses `text` as canonicalAddress does and returns its eight 16-bit groups, IPv4 in
 * the mapped form ::ffff:a.b.c.d (so one CIDR list covers both). Returns null for anything that is
 * not an address.
 * @param {string | null | undefined} text
 * @returns {number[] | null}
 */
export function addressGroups(text) {
  if (typeof text !== "string" || text.length > MAX_ADDRESS_TEXT) return null;
  const address = stripDecorations(text.trim());
  if (address === null) return null;
  const v4 = parseIPv4(address);
  if (v4 !== null) return [0, 0, 0, 0, 0, 0xffff, (v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
  return parseIPv6(address);
}

/**
 * cidrMatcher compiles CIDR blocks ("10.0.0.0/8", "2001:db8::/32", or a bare address for one host)
 * into { matches(text) }, telling whether an address falls in any of them, or { problem } naming the
 * first block that is not one.
 * @param {readonly unknown[]} blocks Each is checked: a block that is not a string is a problem.
 * @returns {{ matches: (text: string | null | undefined) => boolean, problem?: undefined } | { problem: string, matches?: undefined }}
 */
export function cidrMatcher(blocks) {
  /** @type {Array<{ groups: number[], bits: number }>} */
  const compiled = [];
  for (const block of blocks) {
    if (typeof block !== "string") return { problem: `${JSON.stringify(block)} is not a CIDR block` };
    const slash = block.indexOf("/");
    const groups = addressGroups(slash < 0 ? block : block.slice(0, slash));
    const isV4 = slash < 0 ? parseIPv4(block.trim()) !== null : parseIPv4(block.slice(0, slash).trim()) !== null;
    const maxBits = isV4 ? 32 : 128;
    const bits = slash < 0 ? maxBits : /^\d{1,3}$/.test(block.slice(slash + 1)) ? Number(block.slice(slash + 1)) : NaN;
    if (groups === null || !(bits >= 0 && bits <= maxBits)) return { problem: `${JSON.stringify(block)} is not a CIDR block like 10.0.0.0/8 or 2001:db8::/32` };
    compiled.push({ groups, bits: isV4 ? 96 + bits : bits });
  }
  /** @param {readonly number[]} groups @param {{ groups: readonly number[], bits: number }} block */
  const within = (groups, { groups: base, bits }) => {
    for (let i = 0; i < 8 && bits > 16 * i; i++) {
      const take = Math.min(16, bits - 16 * i);
      const mask = (0xffff << (16 - take)) & 0xffff;
      if ((groups[i] & mask) !== (base[i] & mask)) return false;
    }
    return true;
  };
  return {
    matches(text) {
      const groups = addressGroups(text);
      return groups !== null && compiled.some((block) => within(groups, block));
    },
  };
}
