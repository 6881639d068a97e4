// Issue 23, login lockout against parser differentials: every way a body or a credential can name one
// account to the gateway and another to the real handler is refused before the upstream, or counted
// under the account the handler sees. Each test is the attacker's move first.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

const { validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");
const { accountSpelling, normalizeAccount } = await import("../../worker/src/http/account.js");
const { bodyField } = await import("../../worker/src/http/body-field.js");

const PASSWORD = "correct horse battery staple";
const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";

// An isolate holds at most 64 rules, so the gateways are shared: one per set of options, and each
// test uses accounts of its own.
const gateways = new Map();
let accounts = 0;
/** An account name no other test uses. */
const fresh = (name) => `${name}${++accounts}`;

// A gateway with one login route (a lockout rule locking after `maxFailures`) in front of an upstream
// that records every body it receives and answers 200 for PASSWORD, else 401, reading the password
// from either body type.
function loginGateway({ maxFailures = 3, normalize } = {}) {
  const id = `${maxFailures}|${normalize}`;
  if (!gateways.has(id)) gateways.set(id, buildLoginGateway({ maxFailures, normalize }));
  const { post, received } = gateways.get(id);
  // What this test's requests reached the upstream with.
  const from = received.length;
  return { post, received: { get length() { return received.length - from; } } };
}

function buildLoginGateway({ maxFailures, normalize }) {
  const received = [];
  const upstream = {
    async fetch(_url, init) {
      const body = await new Response(init.body).text();
      received.push(body);
      const password = body.startsWith("{") ? JSON.parse(body).password : new URLSearchParams(body).get("password");
      return password === PASSWORD ? Response.json({ ok: true }) : Response.json({ error: "no" }, { status: 401 });
    },
  };
  const rule = { name: `lo-${Math.random().toString(36).slice(2, 10)}`, kind: "lockout", key: "body:username", store: "memory", maxFailures, account: false };
  if (normalize !== undefined) rule.normalize = normalize;
  const gateway = createGateway(
    validateConfig({ routes: [{ prefix: "/login", methods: ["POST"], upstream: { url: "https://login.internal/login", service: "UP" }, rules: [rule] }] }),
    { log() {} },
  );
  async function post(body, contentType = JSON_TYPE, ip = "192.0.2.1") {
    const headers = { "cf-connecting-ip": ip };
    if (contentType !== null) headers["content-type"] = contentType;
    const response = await gateway.fetch(new Request("https://gw.test/login", { method: "POST", headers, body }), { UP: upstream }, { waitUntil() {} });
    const text = await response.text();
    return { status: response.status, code: text.startsWith("{") ? JSON.parse(text).code : undefined };
  }
  return { post, received };
}

const json = (fields) => JSON.stringify(fields);

describe("JSON keys that differ only in case (or in a spelling Go folds) are duplicates", () => {
  const bodies = [
    '{"username":"decoy","Username":"victim","password":"x"}',
    '{"Username":"victim","username":"decoy","password":"x"}',
    '{"username":"decoy","USERNAME":"victim","password":"x"}',
    // Go's encoding/json folds the long s and the Kelvin sign: "uſername" is "username" to it.
    '{"username":"decoy","u\u017Fername":"victim","password":"x"}',
    // Escapes are the same key: "\u0055sername" is "Username".
    '{"username":"decoy","\\u0055sername":"victim","password":"x"}',
  ];
  for (const body of bodies) {
    test(`${body} is refused with 400 sluice_ambiguous_account and never forwarded`, async () => {
      const { post, received } = loginGateway();
      assert.deepEqual(await post(body.replaceAll("victim", fresh("victim"))), { status: 400, code: "sluice_ambiguous_account" });
      assert.equal(received.length, 0);
    });
  }

  test("a key only in another case is not the field: 400 sluice_missing_account, not forwarded", async () => {
    const { post, received } = loginGateway();
    assert.deepEqual(await post('{"Username":"victim","password":"x"}'), { status: 400, code: "sluice_missing_account" });
    assert.equal(received.length, 0);
  });

  test("a nested key of another case is not the field's duplicate", async () => {
    const { post } = loginGateway();
    assert.equal((await post('{"username":"alice","profile":{"Username":"x"},"password":"x"}')).status, 401);
  });
});

describe("the body is parsed by its declared Content-Type", () => {
  test("a form body is read as a form: its failures lock the account for JSON attempts too", async () => {
    const { post } = loginGateway({ maxFailures: 3 });
    const victim = fresh("victim");
    for (let i = 0; i < 3; i++) assert.equal((await post(`username=${victim}&password=guess`, FORM_TYPE)).status, 401);
    assert.deepEqual(await post(json({ username: victim, password: PASSWORD })), { status: 429, code: "sluice_locked_out" });
    assert.deepEqual(await post(`username=${victim}&password=${encodeURIComponent(PASSWORD)}`, FORM_TYPE), { status: 429, code: "sluice_locked_out" });
  });

  test("form names are decoded as a form parser decodes them (escapes, '+')", async () => {
    const { post } = loginGateway({ maxFailures: 2 });
    const victim = fresh("victim");
    assert.equal((await post(`user%6Eame=vic%74im${victim.slice(6)}&password=guess`, FORM_TYPE)).status, 401);
    assert.equal((await post(`username=${victim}+&password=guess`, FORM_TYPE)).status, 401);
    assert.equal((await post(json({ username: victim, password: PASSWORD }))).status, 429);
  });

  const ambiguousForms = [
    "username=decoy&username=victim&password=x",
    "username=decoy&Username=victim&password=x",
    "username=decoy&USER%4EAME=victim&password=x",
    // PHP reads username[] as the variable username.
    "username=decoy&username[]=victim&password=x",
    "username=decoy&username%5B0%5D=victim&password=x",
  ];
  for (const body of ambiguousForms) {
    test(`form ${body} is refused with 400 sluice_ambiguous_account`, async () => {
      const { post, received } = loginGateway();
      assert.deepEqual(await post(body, FORM_TYPE), { status: 400, code: "sluice_ambiguous_account" });
      assert.equal(received.length, 0);
    });
  }

  test("a form body declared as JSON, or a JSON body declared as a form, names no account", async () => {
    const { post, received } = loginGateway();
    assert.deepEqual(await post("username=victim&password=x", JSON_TYPE), { status: 400, code: "sluice_missing_account" });
    // The form parser sees one name: `{"username":"victim","password":"x"}`, with no value.
    assert.deepEqual(await post(json({ username: "victim", password: "x" }), FORM_TYPE), { status: 400, code: "sluice_missing_account" });
    assert.equal(received.length, 0);
  });

  for (const contentType of [null, "text/plain", "multipart/form-data; boundary=x", "application/xml", "application/json; charset=utf-16", "application/jsonx"]) {
    test(`a body of type ${contentType} is refused with 415 and never forwarded`, async () => {
      const { post, received } = loginGateway();
      assert.deepEqual(await post(json({ username: "victim", password: "x" }), contentType), { status: 415, code: "sluice_unsupported_body_type" });
      assert.equal(received.length, 0);
    });
  }

  for (const contentType of ["application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json", `${FORM_TYPE}; charset=UTF-8`]) {
    test(`a body of type ${contentType} is read`, async () => {
      const { post } = loginGateway();
      const alice = fresh("alice");
      const body = contentType.toLowerCase().startsWith(FORM_TYPE) ? `username=${alice}&password=x` : json({ username: alice, password: "x" });
      assert.equal((await post(body, contentType)).status, 401);
    });
  }
});

describe("account names with default-ignorable code points or NUL", () => {
  // Every code point of Unicode's Default_Ignorable_Code_Point set (as this runtime's Unicode data has it).
  const ignorables = [];
  for (let code = 0; code <= 0x10ffff; code++) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const char = String.fromCodePoint(code);
    if (/\p{Default_Ignorable_Code_Point}/u.test(char)) ignorables.push(char);
  }

  test("the set is the full one (U+00AD, U+034F, U+115F, U+180E, U+200B-U+200F, U+2060-U+206F, U+FEFF, U+E0000-U+E0FFF, ...)", () => {
    for (const code of [0xad, 0x34f, 0x115f, 0x180e, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2060, 0x2064, 0xfe0f, 0xfeff, 0x1d173, 0xe0001, 0xe0041, 0xe0fff]) {
      assert.ok(ignorables.includes(String.fromCodePoint(code)), code.toString(16));
    }
    assert.ok(ignorables.length > 4000, `${ignorables.length}`);
  });

  test("every one of them, anywhere in a name, is removed: the name counts as the account without it", () => {
    for (const char of ignorables) {
      for (const spelling of [`vic${char}tim`, `${char}victim`, `victim${char}`]) {
        assert.equal(accountSpelling(spelling), "victim", `U+${char.codePointAt(0).toString(16)}`);
        assert.equal(normalizeAccount(spelling), "victim", `U+${char.codePointAt(0).toString(16)}`);
      }
    }
  });

  for (const normalize of [true, false]) {
    test(`failures under invisible spellings lock the account itself (normalize: ${normalize})`, async () => {
      const { post } = loginGateway({ maxFailures: 3, normalize });
      const victim = fresh("victim");
      for (const spelling of [`vic\u200Btim${victim.slice(6)}`, `vic\u00ADtim${victim.slice(6)}`, `\uFEFF${victim}\u200D`]) {
        assert.equal((await post(json({ username: spelling, password: "guess" }))).status, 401);
      }
      assert.deepEqual(await post(json({ username: victim, password: PASSWORD })), { status: 429, code: "sluice_locked_out" });
    });
  }

  for (const name of ["victim\u0000", "vic\u0000tim", "victim\u0000decoy", "victim\u0001", "victim\u007F", "victim\u0085"]) {
    test(`${JSON.stringify(name)} is refused with 400 sluice_invalid_account and never forwarded`, async () => {
      const { post, received } = loginGateway();
      assert.deepEqual(await post(json({ username: name, password: "x" })), { status: 400, code: "sluice_invalid_account" });
      assert.deepEqual(await post(`username=${encodeURIComponent(name)}&password=x`, FORM_TYPE), { status: 400, code: "sluice_invalid_account" });
      assert.equal(received.length, 0);
    });
  }
});

describe("malformed credentials on a route keyed by user", () => {
  const userGateways = new Map();
  function userGateway(key) {
    const id = JSON.stringify(key);
    if (!userGateways.has(id)) userGateways.set(id, buildUserGateway(key));
    const built = userGateways.get(id);
    const from = built.count();
    return { get: built.get, forwarded: () => built.count() - from };
  }
  function buildUserGateway(key) {
    let forwarded = 0;
    const upstream = {
      fetch() {
        forwarded++;
        return new Response("ok");
      },
    };
    const gateway = createGateway(
      validateConfig({
        routes: [
          {
            prefix: "/api",
            methods: ["GET"],
            upstream: { url: "https://api.internal/api", service: "UP" },
            rules: [{ name: `u-${Math.random().toString(36).slice(2, 10)}`, algorithm: "fixed-window", limit: 1, windowSec: 60, key }],
          },
        ],
      }),
      { log() {} },
    );
    const get = async (authorization, ip = "192.0.2.1") => {
      const headers = { "cf-connecting-ip": ip };
      if (authorization !== null) headers.authorization = authorization;
      const response = await gateway.fetch(new Request("https://gw.test/api/x", { headers }), { UP: upstream }, { waitUntil() {} });
      const text = await response.text();
      return { status: response.status, code: text.startsWith("{") ? JSON.parse(text).code : undefined };
    };
    return { get, count: () => forwarded };
  }

  for (const authorization of ["Bearer tok x", "Bearer  tok", "Bearer tok\tx", "Bearer", "Basic dXNlcjpwYXNz", "Bearer a, Bearer b", "Bearer tok\u00e9", "Token tok"]) {
    test(`${JSON.stringify(authorization)} is refused with 400 and never forwarded, whatever the budget left`, async () => {
      const { get, forwarded } = userGateway("user");
      for (let i = 0; i < 3; i++) assert.deepEqual(await get(authorization, `192.0.2.${i + 10}`), { status: 400, code: "sluice_malformed_credentials" });
      assert.equal(forwarded(), 0);
    });
  }

  test("a well-formed token, in any case of the scheme, and no header at all are keyed as before", async () => {
    const { get, forwarded } = userGateway(["user", "route"]);
    assert.equal((await get("Bearer tok")).status, 200);
    assert.equal((await get("bearer tok")).status, 429);
    assert.equal((await get("Bearer tok2=")).status, 200);
    assert.equal((await get(null)).status, 200);
    assert.equal((await get(null)).status, 429);
    assert.equal(forwarded(), 3);
  });

  test("a route not keyed by user forwards whatever Authorization says (it is stripped before the upstream anyway)", async () => {
    const { get } = userGateway("ip");
    assert.equal((await get("Bearer tok x")).status, 200);
  });
});

describe("bodyField", () => {
  test("a value read is exactly the field's, whatever else the body holds", () => {
    const bytes = new TextEncoder().encode('{"a":1,"username":"al\\"ice","b":[{"username":2}]}');
    assert.deepEqual(bodyField(bytes, JSON_TYPE, "username"), { value: 'al"ice' });
    assert.deepEqual(bodyField(new TextEncoder().encode("a=1&username=al%26ice&b=2"), FORM_TYPE, "username"), { value: "al&ice" });
  });

  test("bytes that are not UTF-8 are malformed", () => {
    assert.deepEqual(bodyField(new Uint8Array([0x7b, 0xff, 0x7d]), JSON_TYPE, "username"), { problem: "malformed" });
    assert.deepEqual(bodyField(new TextEncoder().encode("username=%FF"), FORM_TYPE, "username"), { problem: "malformed" });
  });
});
