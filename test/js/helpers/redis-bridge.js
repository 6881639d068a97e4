// A small REST-to-Redis bridge: an HTTP server speaking the Upstash REST protocol in front of a real
// Redis, so that the Redis store (and @upstash/redis, the bench's peer) can be tested against
// redis-server on this machine. What it implements of the protocol:
//
//   POST /             body ["CMD", "arg", ...]             -> 200 {"result": <reply>}
//   POST /pipeline     body [["CMD", ...], ["CMD", ...]]   -> 200 [{"result": ...} | {"error": "..."}, ...]
//   POST /multi-exec   like /pipeline, inside MULTI/EXEC   -> 200 [{"result": ...}, ...]
//   an error reply                                        -> 400 {"error": "ERR ..."} (as Upstash does)
//   a missing or wrong "Authorization: Bearer <token>"    -> 401 {"error": "Unauthorized"}
//   Redis unreachable                                     -> 502 {"error": "..."}
//   header "Upstash-Encoding: base64"                     -> every string in a result base64-encoded
//
// Replies map as the REST API maps them: simple and bulk strings to strings, integers to numbers, nil
// to null, arrays to arrays. Arguments (strings or numbers) are sent as bulk strings.
// Scripts: Upstash accepts shebang flags redis-server 7.0 refuses (@upstash/ratelimit's scripts say
// `#!lua flags=allow-key-locking`); the bridge drops flags Redis does not know from EVAL and SCRIPT LOAD
// and translates EVALSHA's digest of the original script to the digest of the one Redis holds.
// Redis is reached over node:net in RESP2, one connection, commands pipelined in order.
//
// Test knobs: setDelay(ms) holds every reply that long (a slow database); echoAuthorization(true) makes
// error replies quote the request's Authorization header (a hostile or careless proxy). `requests`
// counts the HTTP requests served (the bench's round trips, counted the same way for every client).
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { connect } from "node:net";
import { freePort } from "./redis-server.js";

class RespConnection {
  #socket;
  #buffer = Buffer.alloc(0);
  #pending = []; // resolvers, in command order
  #failure = null;

  constructor(port) {
    this.#socket = connect(port, "127.0.0.1");
    this.#socket.on("data", (chunk) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#drain();
    });
    const fail = (error) => {
      this.#failure = error ?? new Error("connection to Redis closed");
      for (const { reject } of this.#pending.splice(0)) reject(this.#failure);
    };
    this.#socket.on("error", fail);
    this.#socket.on("close", () => fail(null));
  }

  get broken() {
    return this.#failure !== null;
  }

  /** send writes several commands at once (nothing else interleaves) and resolves with their replies. */
  send(commands) {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    const replies = commands.map(
      () =>
        new Promise((resolve, reject) => {
          this.#pending.push({ resolve, reject });
        }),
    );
    this.#socket.write(Buffer.concat(commands.map(encodeCommand)));
    return Promise.all(replies.map((p) => p.then((value) => ({ value }), (error) => Promise.reject(error))));
  }

  close() {
    this.#socket.destroy();
  }

  #drain() {
    while (this.#pending.length > 0) {
      const parsed = parseReply(this.#buffer, 0);
      if (parsed === null) return;
      this.#buffer = this.#buffer.subarray(parsed.end);
      this.#pending.shift().resolve(parsed.value);
    }
  }
}

function encodeCommand(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.from(String(arg));
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

// An error reply is returned as { error }; null when the buffer holds no complete reply yet.
function parseReply(buffer, start) {
  const lineEnd = buffer.indexOf("\r\n", start);
  if (lineEnd < 0) return null;
  const type = String.fromCharCode(buffer[start]);
  const line = buffer.toString("utf8", start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case "+":
      return { value: line, end: next };
    case "-":
      return { value: { error: line }, end: next };
    case ":":
      return { value: Number(line), end: next };
    case "$": {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return null;
      return { value: buffer.toString("utf8", next, next + length), end: next + length + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, at);
        if (item === null) return null;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}

// The shebang flags redis-server 7.0 knows.
const REDIS_SCRIPT_FLAGS = new Set(["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"]);
const sha1 = (text) => createHash("sha1").update(text).digest("hex");

/** A script as redis-server 7.0 accepts it: unknown shebang flags dropped. */
function adaptScript(script) {
  const match = /^#!lua flags=([^\n]*)/.exec(script);
  if (match === null) return script;
  const kept = match[1].split(",").map((f) => f.trim()).filter((f) => REDIS_SCRIPT_FLAGS.has(f));
  return `#!lua${kept.length > 0 ? ` flags=${kept.join(",")}` : ""}${script.slice(match[0].length)}`;
}

function isError(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) && typeof value.error === "string";
}

// Nested error replies (inside an EXEC's array) become their message, as strings.
function toJson(value, base64) {
  if (Array.isArray(value)) return value.map((item) => toJson(item, base64));
  if (isError(value)) return value.error;
  if (typeof value === "string" && base64) return Buffer.from(value, "utf8").toString("base64");
  return value;
}

/**
 * startBridge serves the Upstash REST protocol on a free loopback port in front of the Redis at
 * `redisPort`, accepting `token`. Resolves with { url, port, setDelay, echoAuthorization, stop }.
 */
export async function startBridge({ redisPort, token, exclude = [] }) {
  let connection = null;
  let delayMs = 0;
  let echo = false;
  let requests = 0;
  const digests = new Map(); // sha1 of a script as sent -> sha1 of the script Redis holds
  const adapt = (command) => {
    const name = String(command[0]).toUpperCase();
    if ((name === "EVAL" || name === "EVAL_RO") && typeof command[1] === "string") {
      const script = adaptScript(command[1]);
      if (script !== command[1]) digests.set(sha1(command[1]), sha1(script));
      return [command[0], script, ...command.slice(2)];
    }
    if ((name === "EVALSHA" || name === "EVALSHA_RO") && digests.has(String(command[1]))) {
      return [command[0], digests.get(String(command[1])), ...command.slice(2)];
    }
    if (name === "SCRIPT" && String(command[1]).toUpperCase() === "LOAD" && typeof command[2] === "string") {
      const script = adaptScript(command[2]);
      if (script !== command[2]) digests.set(sha1(command[2]), sha1(script));
      return [command[0], command[1], script];
    }
    return command;
  };
  const connectionOf = () => {
    if (connection === null || connection.broken) connection = new RespConnection(redisPort);
    return connection;
  };

  const server = createServer(async (request, response) => {
    requests++;
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const reply = (status, body) => {
      const send = () => {
        response.writeHead(status, { "Content-Type": "application/json" });
        response.end(JSON.stringify(body));
      };
      if (delayMs > 0) setTimeout(send, delayMs);
      else send();
    };
    const authorization = request.headers.authorization ?? "";
    if (authorization !== `Bearer ${token}`) {
      return reply(401, { error: echo ? `Unauthorized: got ${authorization}` : "Unauthorized" });
    }
    const base64 = String(request.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return reply(400, { error: "ERR failed to parse the request body" });
    }
    const path = new URL(request.url, "http://bridge").pathname.replace(/\/+$/, "");
    try {
      if (path === "") {
        if (!Array.isArray(body) || body.length === 0) return reply(400, { error: "ERR the body must be a command array" });
        const [{ value }] = await connectionOf().send([adapt(body)]);
        if (isError(value)) return reply(400, { error: echo ? `${value.error} (request had ${authorization})` : value.error });
        return reply(200, { result: toJson(value, base64) });
      }
      if (path === "/pipeline" || path === "/multi-exec") {
        if (!Array.isArray(body) || !body.every(Array.isArray)) return reply(400, { error: "ERR the body must be an array of commands" });
        if (path === "/pipeline") {
          const replies = await connectionOf().send(body.map(adapt));
          return reply(200, replies.map(({ value }) => (isError(value) ? { error: value.error } : { result: toJson(value, base64) })));
        }
        const replies = await connectionOf().send([["MULTI"], ...body.map(adapt), ["EXEC"]]);
        const exec = replies.at(-1).value;
        if (isError(exec) || exec === null) return reply(400, { error: isError(exec) ? exec.error : "EXECABORT" });
        return reply(200, exec.map((value) => (isError(value) ? { error: value.error } : { result: toJson(value, base64) })));
      }
      return reply(404, { error: `no such endpoint ${path}` });
    } catch (error) {
      return reply(502, { error: `Redis unreachable: ${error.message}` });
    }
  });

  let port = null;
  for (let attempt = 0; port === null && attempt < 5; attempt++) {
    const candidate = await freePort([redisPort, ...exclude]);
    port = await new Promise((resolve) => {
      server.once("error", () => resolve(null));
      server.listen(candidate, "127.0.0.1", () => resolve(candidate));
    });
  }
  if (port === null) throw new Error("the REST bridge found no free port");

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    /** requests is how many HTTP requests the bridge has served. */
    get requests() {
      return requests;
    },
    /** setDelay holds every reply `ms` before sending it. */
    setDelay(ms) {
      delayMs = ms;
    },
    /** echoAuthorization makes error replies quote the request's Authorization header. */
    echoAuthorization(on) {
      echo = on;
    },
    /** command runs one Redis command directly (for tests to inspect Redis). */
    async command(...args) {
      const [{ value }] = await connectionOf().send([args]);
      if (isError(value)) throw new Error(value.error);
      return value;
    },
    async stop() {
      connection?.close();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
