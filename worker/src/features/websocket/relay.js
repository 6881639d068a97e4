// Relaying a WebSocket through a WebSocketPair, so that the host sees every frame and both ends'
// closes: the concurrency limit releases a holder when the socket closes, message limits drop frames
// from the client, and the gateway proxies its upstream's sockets. Runs in workerd (WebSocketPair).

// Codes a close() may send; the others (1005 no status, 1006 abnormal, 1015 TLS) are only ever received.
/** @param {number} code @returns {boolean} */
function sendableCode(code) {
  return code === 1000 || (code >= 1001 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

/** closeSocket closes `socket` with `code` and `reason` where the runtime allows it, else with 1000; never throws. @param {{ close(code?: number, reason?: string): void }} socket @param {number} code @param {string} reason */
export function closeSocket(socket, code, reason = "") {
  try {
    if (sendableCode(code)) socket.close(code, reason);
    else socket.close(1000, reason);
  } catch {
    // Already closed, or a reason the runtime refused: the socket is going away either way.
  }
}

/**
 * @typedef {object} RelayHooks
 * @property {(data: string | ArrayBuffer, client: { send(data: string): void, close(code: number, reason: string): void }) => boolean} [onClientMessage]
 *   called for every frame from the client; return false to drop it. `client` answers the client: its
 *   send() reaches the client only, its close(code, reason) closes both sides
 * @property {(code: number, reason: string) => void} [onClose] called once, when either side closes or errs
 */

/**
 * relayWebSocket accepts `inner` (the app's or upstream's end of a socket, not yet accepted) and
 * returns the client end of a new pair, to put in the 101 response. Frames pass both ways; a close on
 * either side closes the other with the same code; `hooks.onClose` runs once.
 * @param {WebSocket} inner
 * @param {RelayHooks} [hooks]
 * @returns {WebSocket}
 */
export function relayWebSocket(inner, hooks = {}) {
  const { onClientMessage, onClose } = hooks;
  const pair = new WebSocketPair();
  const client = pair[0];
  const server = pair[1];
  inner.accept();
  server.accept();
  let closed = false;
  /** @param {number} code @param {string} reason */
  const finish = (code, reason) => {
    if (closed) return;
    closed = true;
    if (onClose !== undefined) onClose(code, reason);
  };
  inner.addEventListener("message", (event) => {
    try {
      server.send(event.data);
    } catch {
      // The client is gone; its close event follows.
    }
  });
  // What a hook answers the client through: a close ends the relay at once, without waiting for the
  // client to answer the close frame.
  const toClient = {
    send: (/** @type {string} */ data) => server.send(data),
    close: (/** @type {number} */ code, /** @type {string} */ reason) => {
      closeSocket(server, code, reason);
      closeSocket(inner, code, reason);
      finish(code, reason);
    },
  };
  server.addEventListener("message", (event) => {
    if (closed) return;
    if (onClientMessage !== undefined && onClientMessage(event.data, toClient) === false) return;
    try {
      inner.send(event.data);
    } catch {
      // The app's end is gone; its close event follows.
    }
  });
  inner.addEventListener("close", (event) => {
    closeSocket(server, event.code, event.reason);
    finish(event.code, event.reason);
  });
  server.addEventListener("close", (event) => {
    closeSocket(inner, event.code, event.reason);
    finish(event.code, event.reason);
  });
  inner.addEventListener("error", () => {
    closeSocket(server, 1011, "upstream error");
    finish(1011, "error");
  });
  server.addEventListener("error", () => {
    closeSocket(inner, 1011, "client error");
    finish(1011, "error");
  });
  return client;
}
