/**
 * The node tests' HTTP clients open a connection per request (test/node/no-keep-alive.ts).
 * `wrangler dev` closes a connection after 5 s idle; a client that keeps connections alive sends
 * its next request on the pooled one, and a request sent as the server closes it fails ("other
 * side closed") without ever reaching the service. A POST is not repeated by the client, so a test
 * that paused between two requests failed now and then. The server below makes that moment
 * certain: it answers the first request of each connection, with keep-alive, and closes the
 * connection when a second one arrives on it.
 */
import { request } from "node:http";
import { type AddressInfo, type Server, type Socket, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: Server;
let origin: string;
let connections = 0;

beforeAll(async () => {
  server = createServer((socket: Socket) => {
    connections++;
    let answered = false;
    let received = "";
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      if (answered) return void socket.destroy();
      received += chunk.toString("latin1");
      const headEnd = received.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received.slice(0, headEnd))?.[1] ?? 0);
      if (received.length < headEnd + 4 + length) return;
      answered = true;
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function post(body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(`${origin}/`, { method: "POST", headers: { "content-type": "text/plain", "content-length": Buffer.byteLength(body) } }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    sent.on("error", reject);
    sent.end(body);
  });
}

describe("the node tests' HTTP clients", () => {
  it("fetch sends every request on a new connection, so a POST after another request is answered", async () => {
    const before = connections;
    expect((await fetch(`${origin}/`)).status).toBe(200);
    expect((await fetch(`${origin}/`, { method: "POST", body: "second" })).status).toBe(200);
    expect((await fetch(`${origin}/`, { method: "POST", body: "third" })).status).toBe(200);
    expect(connections - before).toBe(3);
  });

  it("node:http (axios in the galileo SDK) does the same", async () => {
    const before = connections;
    expect(await post("first")).toBe(200);
    expect(await post("second")).toBe(200);
    expect(connections - before).toBe(2);
  });
});
