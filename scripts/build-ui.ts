/// <reference types="node" />
/** `npm run build`: builds the trace explorer into ui/dist and prints its sizes (scripts/lib/build-ui.ts). */
import { buildUi, describeBuild, JS_BUDGET_GZIP_BYTES } from "./lib/build-ui";

const report = await buildUi();
process.stdout.write(`[build] trace explorer built into ui/dist\n${describeBuild(report)}\n`);
if (report.totalGzipBytes > JS_BUDGET_GZIP_BYTES) {
  process.stderr.write("[build] error: the explorer's JavaScript is over its budget\n");
  process.exit(1);
}
