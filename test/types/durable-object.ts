// sluice/durable-object: the class a Worker's main module exports and wrangler.toml binds, and its
// stub as the Worker sees it through the namespace.
import { SluiceDurableObject, type ObjectOutcome, type UndoToken } from "sluice/durable-object";
import type { NormalizedRule, StoreCheck } from "sluice";

export { SluiceDurableObject } from "sluice/durable-object";

interface Env {
  SLUICE_DO: DurableObjectNamespace<SluiceDurableObject>;
}
declare const rule: NormalizedRule;

// A subclass sees the base class's Durable Object state and its own methods.
export class AuditedSluice extends SluiceDurableObject {
  // (An admission's answer is a promise: it waits for its charge to be stored.)
  override async decide(checks: readonly StoreCheck[], options?: { peek?: boolean; undoable?: boolean }): Promise<ObjectOutcome> {
    const outcome = await super.decide(checks, options);
    if (!outcome.allowed) console.log("denied at", this.nowMs(), "by", this.ctx.id.toString());
    return outcome;
  }
}

export async function callObject(env: Env): Promise<number> {
  const stub = env.SLUICE_DO.get(env.SLUICE_DO.idFromName("sluice/1/0"));
  const outcome = await stub.decide([{ rule, key: "ip:192.0.2.1", cost: 1 }], { undoable: true });
  const tokens: UndoToken[] = outcome.undo ?? [];
  const remaining: number = outcome.remaining;
  // @ts-expect-error the object's outcome has no `store`: the client store adds it
  outcome.store;
  return remaining + (await stub.undo(tokens));
}
