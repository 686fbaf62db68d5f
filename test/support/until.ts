/**
 * Polls `probe` every 100 ms until it gives a truthy value, which it returns; past `ms` it throws
 * with `what` in the message. For waits on the queue consumers and background work of the local
 * workerd (scoring, sweeps), where a fixed sleep would be either flaky or slow.
 */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
