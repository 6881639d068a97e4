// Key helpers and address canonicalisation, called directly under Node (no wasm involved).
import assert from "node:assert/strict";
import { test } from "node:test";

import { canonicalAddress } from "../../worker/src/http/addresses.js";
import { apiKey, bearerToken, compose, firstOf, ip, resolveKeyText, route, storeKey, user } from "../../worker/src/http/keys.js";

// One row per spelling: [text, canonical at /64, canonical at /128].
const ADDRESSES = [
  ["192.0.2.1", "192.0.2.1", "192.0.2.1"],
  ["192.000.002.001", "192.0.2.1", "192.0.2.1"],
  ["  192.0.2.1\t", "192.0.2.1", "192.0.2.1"],
  ["192.0.2.1:8443", "192.0.2.1", "192.0.2.1"],
  ["::ffff:192.0.2.1", "192.0.2.1", "192.0.2.1"],
  ["::FFFF:c000:0201", "192.0.2.1", "192.0.2.1"],
  ["0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1", "192.0.2.1"],
  ["[::ffff:192.0.2.1]:80", "192.0.2.1", "192.0.2.1"],
  ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64", "2001:db8:1:2:3:4:5:6"],
  ["2001:0DB8:0001:0002:0003:0004:0005:0006", "2001:db8:1:2::/64", "2001:db8:1:2:3:4:5:6"],
  ["[2001:db8:1:2::9]:443", "2001:db8:1:2::/64", "2001:db8:1:2::9"],
  ["2001:db8::1", "2001:db8::/64", "2001:db8::1"],
  ["2001:db8:0:0:1:0:0:1", "2001:db8::/64", "2001:db8::1:0:0:1"],
  ["::1", "::/64", "::1"],
  ["1:2:3:4:5:6:7::", "1:2:3:4::/64", "1:2:3:4:5:6:7:0"],
  ["256.0.0.1", null, null],
  ["192.0.2", null, null],
  ["0x7f.0.0.1", null, null],
  ["1::2::3", null, null],
  ["1:2:3:4:5:6:7:8:9", null, null],
  ["1:2:3:4:5:6:7:8::", null, null],
  ["fe80::1%eth0", null, null],
  ["12345::", null, null],
  ["[2001:db8::1", null, null],
  ["unknown", null, null],
  ["", null, null],
  [`${"1".repeat(100)}`, null, null],
];

test("every spelling of an address canonicalises to one text, and non-addresses to null", () => {
  ADDRESSES.forEach(([text, at64, at128], row) => {
    assert.equal(canonicalAddress(text, 64), at64, `row ${row}: ${JSON.stringify(text)} at /64`);
    assert.equal(canonicalAddress(text, 128), at128, `row ${row}: ${JSON.stringify(text)} at /128`);
  });
});

// canonicalAddress returns a dotted quad already in canonical form as it is, without parsing it: every
// other spelling of the same octets (leading zeros, blanks, a port) must still parse to that form, and
// an octet over 255 must still be refused.
test("random IPv4 spellings: the canonical text of the octets' numbers, or null over 255", () => {
  let seed = 429;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let n = 0; n < 5000; n++) {
    const octets = Array.from({ length: 4 }, () => Math.floor(next() * (next() < 0.1 ? 1000 : 256)));
    const spelled = octets.map((octet) => (next() < 0.2 && octet < 100 ? String(octet).padStart(next() < 0.5 ? 2 : 3, "0") : String(octet))).join(".");
    const text = next() < 0.1 ? ` ${spelled}` : next() < 0.1 ? `${spelled}:80` : spelled;
    const expected = octets.every((octet) => octet <= 255) ? octets.join(".") : null;
    assert.equal(canonicalAddress(text), expected, JSON.stringify(text));
  }
});

test("IPv6 prefixes keep exactly their bits", () => {
  assert.equal(canonicalAddress("2001:db8:abcd:ef01::1", 48), "2001:db8:abcd::/48");
  assert.equal(canonicalAddress("2001:db8:abcd:ef01::1", 56), "2001:db8:abcd:ef00::/56");
  assert.equal(canonicalAddress("2001:db8:abcd:ef01::1", 1), "::/1");
  assert.equal(canonicalAddress("ffff::1", 1), "8000::/1");
});

const request = (headers, url = "https://example.com/a/b") => new Request(url, { headers });

test("ip() trusts cf-connecting-ip and ignores x-forwarded-for unless told to trust it", () => {
  const key = ip();
  assert.equal(key(request({ "cf-connecting-ip": "192.0.2.1", "x-forwarded-for": "198.51.100.7" })), "ip:192.0.2.1");
  assert.equal(key(request({ "x-forwarded-for": "198.51.100.7" })), "ip:unknown");
  assert.equal(key(request({})), "ip:unknown");
  assert.equal(key(request({ "cf-connecting-ip": "not an address" })), "ip:unknown");

  // One proxy in front: the client is the address it appended (the last), never the first entry,
  // which the client writes itself.
  const trusting = ip({ trustForwardedFor: true });
  const both = { "cf-connecting-ip": "192.0.2.1", "x-forwarded-for": " 198.51.100.7 , 203.0.113.5" };
  assert.equal(trusting(request(both)), "ip:203.0.113.5", "the address the proxy appended counts");
  assert.equal(trusting(request({ ...both, "x-forwarded-for": "203.0.113.5, garbage" })), "ip:192.0.2.1", "unreadable: the proxy's own address");
  assert.equal(trusting(request({ "x-forwarded-for": "2001:db8:1:2::5" })), "ip:2001:db8:1:2::/64");
  // Cloudflare appends the connecting address: that copy is not a hop.
  assert.equal(trusting(request({ ...both, "x-forwarded-for": "198.51.100.7, 203.0.113.5, 192.0.2.1" })), "ip:203.0.113.5");
});

test("ip({ trustForwardedFor: n }) takes the address the n-th proxy appended; a rotated first entry never counts", () => {
  const two = ip({ trustForwardedFor: 2 });
  const via = (forwarded) => two(request({ "cf-connecting-ip": "192.0.2.1", "x-forwarded-for": forwarded }));
  assert.equal(via("1.1.1.1, 198.51.100.7, 10.0.0.2"), "ip:198.51.100.7");
  assert.equal(via("2.2.2.2, 3.3.3.3, 198.51.100.7, 10.0.0.2"), "ip:198.51.100.7");
  assert.equal(via("10.0.0.2"), "ip:10.0.0.2", "fewer entries: the furthest a proxy vouches for");
  assert.equal(via(""), "ip:192.0.2.1");
  assert.equal(via(Array.from({ length: 40 }, (_, i) => `10.0.${i}.1`).join(", ")), "ip:192.0.2.1", "a padded header is not read");
});

test("ip({ trustForwardedFor: [CIDRs] }) walks back through trusted proxies to the first address outside them", () => {
  const cidr = ip({ trustForwardedFor: ["10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"] });
  const via = (peer, forwarded) => cidr(request({ "cf-connecting-ip": peer, "x-forwarded-for": forwarded }));
  assert.equal(via("192.0.2.1", "6.6.6.6, 198.51.100.7, 10.0.0.3"), "ip:198.51.100.7");
  assert.equal(via("198.51.100.9", "6.6.6.6, 10.0.0.3"), "ip:198.51.100.9", "an untrusted peer is the client; its header is ignored");
  assert.equal(via("192.0.2.1", "6.6.6.6, nonsense, 10.0.0.3"), "ip:10.0.0.3", "unreadable: the proxy that wrote it");
  assert.equal(via("2001:db8::1", "2001:db8::2, 10.1.1.1"), "ip:2001:db8::/64", "all trusted: the furthest");
  assert.equal(via("192.0.2.1", "::ffff:198.51.100.7"), "ip:198.51.100.7");
});

test("ip({ trustForwardedFor }) refuses what is neither a proxy count nor CIDR blocks, naming the option", () => {
  for (const bad of [0, 17, 1.5, "yes", ["10.0.0.0/33"], ["not a block"]]) {
    assert.throws(() => ip({ trustForwardedFor: bad }), { name: "SluiceConfigError", message: /ip\(\{ trustForwardedFor \}\)/ }, String(bad));
  }
});

test("ip() groups IPv6 by the configured prefix and counts IPv4-mapped addresses as IPv4", () => {
  assert.equal(ip()(request({ "cf-connecting-ip": "2001:db8:1:2:aaaa::1" })), "ip:2001:db8:1:2::/64");
  assert.equal(ip({ ipv6Prefix: 48 })(request({ "cf-connecting-ip": "2001:db8:1:2:aaaa::1" })), "ip:2001:db8:1::/48");
  assert.equal(ip({ ipv6Prefix: 128 })(request({ "cf-connecting-ip": "2001:db8:1:2:aaaa::1" })), "ip:2001:db8:1:2:aaaa::1");
  assert.equal(ip()(request({ "cf-connecting-ip": "::ffff:192.0.2.1" })), "ip:192.0.2.1");
});

test("user(), apiKey() and route() say nothing when they have nothing, and escape separators", async () => {
  assert.equal(user(() => "alice")(request({})), "user:alice");
  assert.equal(user(() => undefined)(request({})), undefined);
  assert.equal(user(() => "")(request({})), undefined);
  assert.equal(await user(async () => 42)(request({})), "user:42");
  assert.equal(apiKey()(request({ "x-api-key": " k1 " })), "key:k1");
  assert.equal(apiKey("authorization")(request({})), undefined);
  assert.equal(apiKey()(request({ "x-api-key": "a|b%c" })), "key:a%7Cb%25c");
  assert.equal(route()(request({}, "https://example.com/a/b?q=1")), "route:/a/b");
});

test("route(pattern) keys by the pattern whatever the path, so varying the path cannot split a limit", () => {
  const key = route("/v1/geo");
  assert.equal(key(request({}, "https://x/v1/geo/a")), "route:/v1/geo");
  assert.equal(key(request({}, "https://x/v1/geo/b?c=1")), "route:/v1/geo");
  assert.equal(route("/a|b")(request({})), "route:/a%7Cb");
  assert.throws(() => route(""), (error) => error.field === "route(pattern)");
  assert.throws(() => route(7), (error) => error.field === "route(pattern)");
});

test("bearerToken() reads Authorization: Bearer <token>, and nothing else", () => {
  assert.equal(bearerToken(request({ authorization: "Bearer alice" })), "alice");
  assert.equal(bearerToken(request({ authorization: "bearer  alice " })), "alice");
  assert.equal(bearerToken({ req: { raw: request({ authorization: "Bearer bob" }) } }), "bob", "a Hono context");
  for (const value of [undefined, "", "Bearer", "Bearer a b", "Basic YTpi", "alice"]) {
    assert.equal(bearerToken(request(value === undefined ? {} : { authorization: value })), undefined, String(value));
  }
});

test("compose() writes missing parts as 'unknown' and cannot be forged by a separator in a value", async () => {
  const key = compose(apiKey(), route());
  assert.equal(key(request({ "x-api-key": "k" }, "https://x/p")), "key:k|route:/p");
  assert.equal(key(request({}, "https://x/p")), "unknown|route:/p");
  const forged = key(request({ "x-api-key": "k|route:/q" }, "https://x/p"));
  assert.notEqual(forged, key(request({ "x-api-key": "k" }, "https://x/q")));
  assert.equal(await compose(user(async () => "u"), ip())(request({ "cf-connecting-ip": "192.0.2.1" })), "user:u|ip:192.0.2.1");
});

test("firstOf() takes the first part with an answer, sync or async", async () => {
  const key = firstOf(user(() => undefined), apiKey(), ip());
  assert.equal(key(request({ "cf-connecting-ip": "192.0.2.1" })), "ip:192.0.2.1");
  assert.equal(key(request({ "cf-connecting-ip": "192.0.2.1", "x-api-key": "k" })), "key:k");
  const slow = firstOf(user(async () => undefined), ip());
  assert.equal(await slow(request({ "cf-connecting-ip": "192.0.2.1" })), "ip:192.0.2.1");
  assert.equal(firstOf(user(() => undefined))(request({})), undefined);
});

test("a key function's empty answer becomes the shared 'unknown' key", async () => {
  assert.equal(resolveKeyText(() => undefined, []), "unknown");
  assert.equal(resolveKeyText(() => "", []), "unknown");
  assert.equal(resolveKeyText(() => null, []), "unknown");
  assert.equal(resolveKeyText(() => 7, []), "7");
  assert.equal(await resolveKeyText(async () => undefined, []), "unknown");
});

test("keys over 512 UTF-8 bytes are hashed with SHA-256, never truncated", async () => {
  const fits = "k".repeat(512);
  assert.equal(storeKey(fits), fits);
  const multibyte = "é".repeat(256); // 512 bytes in 256 code units
  assert.equal(storeKey(multibyte), multibyte);

  const common = "k".repeat(600);
  const a = await storeKey(`${common}a`);
  const b = await storeKey(`${common}b`);
  assert.match(a, /^sha256:[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, b, "keys equal in their first 512 bytes stay apart");
  assert.equal(await storeKey(`${common}a`), a, "the hash is stable");
  assert.match(await storeKey("é".repeat(257)), /^sha256:/, "the limit counts bytes, not characters");
});

test("a request with no key at all shares the key `unknown`: user() without an id, apiKey() without the header", async () => {
  const request = new Request("https://example.test/");
  for (const key of [user(() => undefined), user(async () => ""), apiKey(), compose(user(() => null))]) {
    const text = await resolveKeyText(key, [request, {}, undefined]);
    assert.equal(text, "unknown");
  }
  assert.equal(await resolveKeyText(firstOf(user(() => undefined), () => "ip:192.0.2.1"), [request]), "ip:192.0.2.1", "firstOf gives them a key of their own");
});
