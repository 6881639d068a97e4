// Auto-blocking as a TypeScript Worker uses it: autoBlock() on a rule, the limiter's blocks, the admin
// handler; and the mistake the types must refuse (a plain object where autoBlock() belongs).
import { autoBlock, blocksAdmin, createLimiter, ip, type AutoBlockCounters, type BlockEntry } from "sluice";

const limiter = createLimiter({ key: ip(), limit: 10, windowSec: 60, autoBlock: autoBlock({ after: 20, withinSec: 600, blockSec: 3600 }) });
const listed: Promise<BlockEntry[]> = limiter.blocks.list();
const counters: Array<{ rule: string } & AutoBlockCounters> = limiter.blocks.counters();
const lifted: Promise<boolean> = limiter.blocks.lift("10-per-60s", "ip:192.0.2.1");
const admin: (request: Request, env?: unknown) => Promise<Response> = blocksAdmin({ limiters: [limiter], tokenSecret: "ADMIN_TOKEN" });
void [listed, counters, lifted, admin];

// @ts-expect-error autoBlock takes autoBlock()'s value, not its options
createLimiter({ key: ip(), limit: 10, windowSec: 60, autoBlock: { after: 20, withinSec: 600, blockSec: 3600 } });
