// The progress bar on standard error, only when it is a terminal (never in a pipe or a CI log):
// bytes read of the inputs' total, or a running count of lines when reading standard input.

/** @import { InputProgress } from "./input.js" */

import { nowMs } from "./library.js";

const WIDTH = 30;
const EVERY_MS = 200;

/**
 * progressBar returns an onProgress callback for replay(), and `done()` to clear the bar; both do
 * nothing when `stream` is not a terminal.
 * @param {NodeJS.WriteStream} stream
 * @param {number | null} totalBytes
 */
export function progressBar(stream, totalBytes) {
  if (!stream.isTTY) return { onProgress: undefined, done() {} };
  let last = 0;
  let shown = false;
  return {
    /** @param {number} lines @param {InputProgress} progress */
    onProgress(lines, progress) {
      const now = nowMs();
      if (now - last < EVERY_MS) return;
      last = now;
      shown = true;
      const count = `${lines.toLocaleString("en-US")} lines`;
      if (totalBytes === null || totalBytes === 0) {
        stream.write(`\r${count}`);
        return;
      }
      const share = Math.min(1, progress.read / totalBytes);
      const filled = Math.round(share * WIDTH);
      stream.write(`\r[${"#".repeat(filled)}${" ".repeat(WIDTH - filled)}] ${(share * 100).toFixed(0).padStart(3)}%  ${count}`);
    },
    done() {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}
