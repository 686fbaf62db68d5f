/**
 * The worker's own V8 heap under `wrangler dev`, read through its inspector (Chrome DevTools
 * protocol, `Runtime.getHeapUsage`): the isolate's used heap alone, without the local D1's SQLite
 * pages, the D1 service's own isolate or workerd's other allocations, which the process's
 * resident memory (process-usage.ts) counts together.
 *
 * wrangler's inspector proxy accepts a WebSocket whose `Origin` is a local host name
 * (InspectorProxyWorker.ts); Node 20's WebSocket cannot set that header, so this is a minimal
 * client (RFC 6455: one text frame per message, masked, unfragmented) over an HTTP upgrade.
 */
import http from "node:http";
import type { Socket } from "node:net";
import { randomBytes } from "node:crypto";

export interface HeapSampler {
  /** The isolate's used heap now, bytes (garbage not yet collected included). */
  used(): Promise<number>;
  /**
   * The isolate's live heap now, bytes: the objects of a heap snapshot, which V8 takes after a
   * full collection (workerd answers it where it ignores HeapProfiler.collectGarbage), external
   * array buffers included. It stops the isolate while it runs (about 0.1-0.5 s for a 10 MB heap).
   */
  live(): Promise<number>;
  close(): void;
}

function frame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const length = payload.length;
  const header = length < 126 ? Buffer.from([0x81, 0x80 | length]) : length < 65536 ? Buffer.from([0x81, 0x80 | 126, length >> 8, length & 255]) : Buffer.concat([Buffer.from([0x81, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(length)); return b; })()]);
  for (let i = 0; i < length; i += 1) payload[i] = payload[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, mask, payload]);
}

/** The bytes of a heap snapshot's objects: the sum of its nodes' self sizes (external array buffers included). */
function snapshotBytes(text: string): number {
  const parsed = JSON.parse(text) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] };
  const fields = parsed.snapshot.meta.node_fields;
  const selfSize = fields.indexOf("self_size");
  let total = 0;
  for (let i = selfSize; i < parsed.nodes.length; i += fields.length) total += parsed.nodes[i]!;
  return total;
}

/** Connects to the inspector on `port` (wrangler dev's `--inspector-port`): the worker's isolate. */
export async function connectHeapSampler(port: number): Promise<HeapSampler> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  const target = targets[0];
  if (!target) throw new Error(`no inspector target on port ${port}`);
  const url = new URL(target.webSocketDebuggerUrl.replace(/^ws:/, "http:"));
  const socket = await new Promise<Socket>((resolve, reject) => {
    const request = http.request({
      host: "127.0.0.1",
      port,
      path: url.pathname + url.search,
      headers: { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": randomBytes(16).toString("base64"), Origin: "http://localhost" },
    });
    request.on("upgrade", (_response, upgraded) => resolve(upgraded));
    request.on("response", (response) => reject(new Error(`inspector answered HTTP ${response.statusCode} instead of upgrading`)));
    request.on("error", reject);
    request.end();
  });
  const waiting = new Map<number, (result: Record<string, unknown>) => void>();
  let buffered = Buffer.alloc(0);
  // A message may come in several frames (a heap snapshot's chunks do): text frame, then
  // continuation frames, the last with FIN set. Only answers to calls (`{"id":...`) are read.
  let fragments: Buffer[] = [];
  const ANSWER = Buffer.from('{"id":');
  const CHUNK = Buffer.from('{"method":"HeapProfiler.addHeapSnapshotChunk"');
  // The chunks of the snapshot being taken, if one is.
  let snapshot: string[] | undefined;
  socket.on("data", (data: Buffer) => {
    buffered = Buffer.concat([buffered, data]);
    for (;;) {
      if (buffered.length < 2) return;
      let length = buffered[1]! & 127;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffered.length < 10) return;
        length = Number(buffered.readBigUInt64BE(2));
        offset = 10;
      }
      if (buffered.length < offset + length) return;
      const final = (buffered[0]! & 0x80) !== 0;
      const opcode = buffered[0]! & 15;
      const payload = buffered.subarray(offset, offset + length);
      buffered = buffered.subarray(offset + length);
      if (opcode === 1) fragments = [payload];
      else if (opcode === 0) fragments.push(payload);
      else continue;
      if (!final) continue;
      const whole = fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments);
      fragments = [];
      if (snapshot !== undefined && whole.subarray(0, CHUNK.length).equals(CHUNK)) {
        snapshot.push((JSON.parse(whole.toString()) as { params: { chunk: string } }).params.chunk);
        continue;
      }
      if (!whole.subarray(0, ANSWER.length).equals(ANSWER)) continue;
      const message = JSON.parse(whole.toString()) as { id?: number; result?: Record<string, unknown> };
      if (message.id !== undefined) waiting.get(message.id)?.(message.result ?? {});
    }
  });
  let nextId = 0;
  // workerd answers Runtime.getHeapUsage, but never HeapProfiler.collectGarbage: a call that
  // goes unanswered fails instead of hanging the bench.
  const send = (method: string, params: Record<string, unknown> = {}, timeoutMs = 10_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      nextId += 1;
      const id = nextId;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`the inspector did not answer ${method} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      waiting.set(id, (result) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(result);
      });
      socket.write(frame(JSON.stringify({ id, method, params })));
    });
  return {
    async used() {
      return Number((await send("Runtime.getHeapUsage")).usedSize);
    },
    async live() {
      // V8 collects all garbage before it takes a snapshot; the live heap is the sum of the
      // snapshot's objects (the used heap read after it may already count later work's garbage).
      snapshot = [];
      try {
        await send("HeapProfiler.takeHeapSnapshot", { reportProgress: false }, 60_000);
        return snapshotBytes(snapshot.join(""));
      } finally {
        snapshot = undefined;
      }
    },
    close() {
      socket.destroy();
    },
  };
}
