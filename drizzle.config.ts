import { defineConfig } from "drizzle-kit";

// Migrations are generated from src/db/schema.ts into migrations/, the folder that
// `wrangler d1 migrations apply` and the tests (readD1Migrations) both read.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
