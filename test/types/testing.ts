// sluice/testing as docs/testing.md uses it: a clock passed as `clock`, advanced by whole milliseconds.
import { rateLimit, ip } from "sluice/hono";
import { resetLimiters, testClock, TEST_EPOCH_MS, type TestClock } from "sluice/testing";
import type { Equal, Expect } from "./assert.js";

const clock: TestClock = testClock();
rateLimit({ key: ip(), limit: 3, windowSec: 60, clock });
const later: number = clock.advance(60_000);
const now: number = clock.now;
clock.set(TEST_EPOCH_MS);
resetLimiters();
type _clockIsAClock = Expect<Equal<ReturnType<TestClock>, number>>;
// @ts-expect-error now is read-only: move the clock with advance or set
clock.now = 5;
void later;
void now;
