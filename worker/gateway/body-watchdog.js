// The upstream's body, bounded like its head: when the client is waiting for more and the upstream
// sends nothing for the route's `bodyTimeoutMs`, the body is cut off (the client's response ends in an error rather
// than hanging forever) and the stall is reported. Only the upstream's silence counts: while the
// client reads slowly, nothing is pulled and no timer runs.

/** UpstreamBodyStalled is the error a cut-off body ends with. */
export class UpstreamBodyStalled extends Error {
  constructor(timeoutMs) {
    super(`the upstream sent nothing for ${timeoutMs} ms in the middle of its body`);
    this.name = "UpstreamBodyStalled";
  }
}

/**
 * watchBody returns a stream of `body`'s chunks that errors with UpstreamBodyStalled, cancels `body`
 * and calls `onStall()` once, when a read of `body` has not answered within `timeoutMs`.
 */
export function watchBody(body, timeoutMs, onStall) {
  const reader = body.getReader();
  return new ReadableStream({
    async pull(controller) {
      let timer;
      const stalled = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new UpstreamBodyStalled(timeoutMs)), timeoutMs);
      });
      try {
        const { done, value } = await Promise.race([reader.read(), stalled]);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        if (error instanceof UpstreamBodyStalled) {
          onStall();
          reader.cancel(error).catch(() => {});
        }
        controller.error(error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
