/**
 * The one ending of every bench's report: the markdown (its table of figures and the run's
 * conditions — date, machine, load, service commit — from runConditions) is written to
 * bench/results/<name>.md (a quick run's to bench/data/quick-results) and shown on the console.
 */
import { writeResult } from "./markdown-report";

/**
 * Writes the report and prints it followed by the file's path; returns the path. `shown` is what
 * the console gets when it differs from the file (the search bench leaves out its SQL appendix).
 */
export function finishReport(name: string, markdown: string, quick: boolean, shown: string = markdown): string {
  const file = writeResult(name, markdown, quick);
  console.log(`\n${shown}\nwritten to ${file}`);
  return file;
}
