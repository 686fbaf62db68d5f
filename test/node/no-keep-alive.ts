/**
 * Setup file of the node project (vitest.config.ts): every HTTP client of the node tests opens a
 * connection per request. `wrangler dev` closes a connection after 5 s idle, and a request sent
 * on a pooled connection as the server closes it fails without reaching the service ("other side
 * closed"); clients do not repeat a POST, so a test that paused between two requests failed now
 * and then (test/node/test-clients.test.ts). A loopback connection costs well under a millisecond.
 * - fetch (the tests' own requests, the galileo SDK's openapi-fetch): Node's fetch uses the
 *   dispatcher undici's setGlobalDispatcher installs; pipelining 0 is undici's "no keep-alive".
 * - node:http without an agent of its own (axios in the galileo SDK): the global agent.
 * The OpenTelemetry exporters bring their own keep-alive agent and are given
 * `httpAgentOptions: { keepAlive: false }` where the tests build them.
 */
import http from "node:http";
import { Agent, setGlobalDispatcher } from "undici";

setGlobalDispatcher(new Agent({ pipelining: 0 }));
http.globalAgent = new http.Agent({ keepAlive: false });
