/**
 * Runs `work` while holding the database's upkeep lease (src/upkeep/upkeep-lease.ts), so that the
 * upkeep the test's own writes started (through the upkeep queue) does not run the same chunks
 * meanwhile: for tests that drive a chunked job by hand and count its windows.
 */
import { releaseCaughtUp, takeLease } from "../../src/upkeep/upkeep-lease";

export async function withUpkeepPaused<T>(db: D1Database, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 20_000;
  let lease = await takeLease(db);
  while (!lease) {
    if (Date.now() > deadline) throw new Error("the upkeep lease stayed taken for 20 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
    lease = await takeLease(db);
  }
  try {
    return await work();
  } finally {
    // A write that asked meanwhile makes the first release fail (its seq moved); the second frees it.
    await releaseCaughtUp(lease).then((released) => released || releaseCaughtUp(lease));
  }
}
