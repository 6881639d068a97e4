// A command line the replay cannot run: what the user typed is wrong, and the message says where.

/** ReplayUsageError names the flag or input at fault (`--rule`, `--columns`, `input`). */
export class ReplayUsageError extends Error {
  /**
   * @param {string} where
   * @param {string} problem
   */
  constructor(where, problem) {
    super(`${where}: ${problem}`);
    this.name = "ReplayUsageError";
    this.where = where;
    this.problem = problem;
  }
}
