import { createMessageLimiter } from "sluice";

const messages = createMessageLimiter({ perConnection: { limit: 20, windowSec: 10 }, onLimited: "close" });

export default {
  fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    const gate = messages.connection(request.headers.get("cf-connecting-ip") ?? "unknown");
    server.accept();
    server.addEventListener("message", (event) => {
      if (gate.admit(server)) server.send(event.data);
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
