// On-CPU time of one workerd thread, from Linux's /proc/<pid>/task/<tid>/schedstat (its first field:
// nanoseconds the thread ran). Wall-clock timing on a shared machine counts the time other processes
// held the core; a thread's own CPU time does not. It must be the thread that runs the isolate's
// JavaScript, not whichever thread was busiest (V8 compiles and collects on threads of its own).
import { readdirSync, readFileSync } from "node:fs";

/** workerdPid finds the workerd process this Node process started (miniflare's child), or null. */
export function workerdPid() {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "workerd" && ppid === process.pid) return Number(entry);
    } catch {
      // the process ended while we looked
    }
  }
  return null;
}

/** threadTimes maps every thread of `pid` to the nanoseconds it has run. */
export function threadTimes(pid) {
  const times = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      times.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // the thread ended
    }
  }
  return times;
}

/** threadNs is the nanoseconds thread `tid` of `pid` has run. */
export function threadNs(pid, tid) {
  return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
}

/** mostRun is the thread that ran longest between two threadTimes readings. */
export function mostRun(before, after) {
  let best = null;
  let bestNs = -1;
  for (const [tid, ns] of after) {
    const ran = ns - (before.get(tid) ?? 0);
    if (ran > bestNs) {
      best = tid;
      bestNs = ran;
    }
  }
  return best;
}
