/**
 * Hands the event loop back for a moment (a timer, not a microtask), between the chunks of a long
 * piece of work. Against local D1, which answers inside the same process, D1 calls chained
 * straight into one another never let the runtime read its sockets: under wrangler dev every
 * other HTTP request waited for the whole job (a deletion queue message, a 100,000-record queue
 * add), and the local queue once lost a message's completion and stopped delivering (see
 * docs/deletion.md, "Running locally"). Deployed, a chunk is a network round trip to D1 anyway;
 * the pause costs about a millisecond per chunk.
 */
export const yieldToEventLoop = () => pauseFor(1);

/**
 * Pauses `ms` (at least 1 ms, as yieldToEventLoop): paced work (a queue add) leaves the database,
 * and locally the runtime, to other requests for as long as its last chunk held them.
 */
export function pauseFor(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, ms)));
}
