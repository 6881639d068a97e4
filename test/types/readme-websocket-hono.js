import { Hono } from "hono";
import { createMessageLimiter, limitMessages } from "sluice";
import { concurrency, ip } from "sluice/hono";
// upgradeWebSocket: from "hono/cloudflare-workers"

const app = new Hono();
const messages = createMessageLimiter({
  perConnection: { limit: 20, windowSec: 10 }, // each socket
  perKey: { limit: 100, windowSec: 10 }, // all sockets of one user, in this isolate
  onLimited: "close", // or "error": an error frame, and a close after `closeAfter` drops
  closeCode: 1008, // or 4429
});

// 1. With concurrency(): at most 3 sockets per IP, and their messages limited on the relayed socket.
app.get("/chat", concurrency({ key: ip(), max: 3, messages }), upgradeWebSocket(() => ({ onMessage: (event, ws) => ws.send(event.data) })));

// 2. On its own, with Hono's upgradeWebSocket: onMessage only sees admitted messages.
app.get("/feed", upgradeWebSocket((c) => limitMessages(messages.connection(c.req.header("cf-connecting-ip") ?? "unknown"), { onMessage: (event, ws) => ws.send(event.data) })));
