import { createMessageLimiter } from "sluice";
import { DurableObject } from "cloudflare:workers";

const messages = createMessageLimiter({ perConnection: { limit: 20, windowSec: 10 }, onLimited: "close" });

export class Room extends DurableObject {
  async fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ user: new URL(request.url).searchParams.get("user") ?? "anonymous" });
    return new Response(null, { status: 101, webSocket: client });
  }

  webSocketMessage(ws, message) {
    const saved = ws.deserializeAttachment();
    const gate = messages.connection(saved.user, saved.gate);
    const admitted = gate.admit(ws);
    ws.serializeAttachment({ ...saved, gate: gate.snapshot() }); // survives hibernation
    if (admitted) for (const other of this.ctx.getWebSockets()) other.send(message);
  }
}
