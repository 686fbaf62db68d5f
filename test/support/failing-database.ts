import { env } from "cloudflare:test";

/**
 * The test database, except that every call to it fails with `error()`: statements bind as
 * usual and fail when run, batches and `exec` fail at once. For answers to a database that is
 * down (503s), without touching the real one.
 */
export function failingDatabase(error: () => Error): D1Database {
  const statement = {
    bind: () => statement,
    first: () => Promise.reject(error()),
    all: () => Promise.reject(error()),
    run: () => Promise.reject(error()),
    raw: () => Promise.reject(error()),
  } as unknown as D1PreparedStatement;
  return new Proxy(env.DB, {
    get(target, property, receiver) {
      if (property === "prepare") return () => statement;
      if (property === "batch" || property === "exec") return () => Promise.reject(error());
      return Reflect.get(target, property, receiver);
    },
  });
}
