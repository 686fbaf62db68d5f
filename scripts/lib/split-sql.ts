/**
 * SQL text of one or more statements cut into statements, as `wrangler d1 execute --local` cuts
 * its `--command` or `--file` before running them as one D1 batch (one result per statement):
 * a `;` ends a statement unless it is inside a string, a quoted name or a comment, or inside the
 * body of a CREATE TRIGGER, which only `END;` ends (the rule of SQLite's sqlite3_complete).
 * Statements that are only comments are left out. Like wrangler, one `BEGIN TRANSACTION;` and one
 * `COMMIT;` are removed (D1 runs a batch in a transaction of its own), and a text with more than
 * one transaction is refused.
 */

export class SqlSplitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SqlSplitError";
  }
}

function withoutTransaction(sql: string): string {
  if (!sql.includes("BEGIN TRANSACTION")) return sql;
  const trimmed = sql.replace("BEGIN TRANSACTION;", "").replace("COMMIT;", "");
  if (trimmed.includes("BEGIN TRANSACTION")) {
    throw new SqlSplitError("the SQL holds several transactions; D1 runs the statements in a transaction itself: remove BEGIN TRANSACTION and COMMIT");
  }
  return trimmed;
}

const WORD = /[A-Za-z0-9_$\u0080-\uffff]/;

export function splitSqlStatements(text: string): string[] {
  const sql = withoutTransaction(text);
  const statements: string[] = [];
  let start = 0;
  // The statement's leading keywords (to know a CREATE [TEMP] TRIGGER), its last word, and
  // whether it holds anything but whitespace and comments.
  let leading: string[] = [];
  let lastWord = "";
  let useful = false;
  const finish = (end: number) => {
    const statement = sql.slice(start, end).trim();
    if (useful && statement !== "") statements.push(statement);
    leading = [];
    lastWord = "";
    useful = false;
  };
  const isTrigger = () => {
    const words = leading[0] === "EXPLAIN" ? leading.slice(1) : leading;
    if (words[0] !== "CREATE") return false;
    const next = words[1] === "TEMP" || words[1] === "TEMPORARY" ? words[2] : words[1];
    return next === "TRIGGER";
  };
  let i = 0;
  while (i < sql.length) {
    const char = sql[i]!;
    const next = sql[i + 1];
    if (char === "-" && next === "-") {
      const end = sql.indexOf("\n", i + 2);
      i = end < 0 ? sql.length : end + 1;
      continue;
    }
    if (char === "/" && next === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
      continue;
    }
    if (char === "'" || char === '"' || char === "`" || char === "[") {
      const close = char === "[" ? "]" : char;
      let j = i + 1;
      for (;;) {
        const at = sql.indexOf(close, j);
        if (at < 0) {
          j = sql.length;
          break;
        }
        // A doubled quote is the quote itself, inside the string (not for [names]).
        if (close !== "]" && sql[at + 1] === close) {
          j = at + 2;
          continue;
        }
        j = at + 1;
        break;
      }
      useful = true;
      lastWord = "";
      i = j;
      continue;
    }
    if (char === ";") {
      if (!isTrigger() || lastWord === "END") {
        finish(i);
        start = i + 1;
      } else {
        lastWord = "";
      }
      i += 1;
      continue;
    }
    if (WORD.test(char)) {
      let j = i + 1;
      while (j < sql.length && WORD.test(sql[j]!)) j += 1;
      const word = sql.slice(i, j).toUpperCase();
      if (leading.length < 4) leading.push(word);
      lastWord = word;
      useful = true;
      i = j;
      continue;
    }
    if (!/\s/.test(char)) {
      useful = true;
      lastWord = "";
    }
    i += 1;
  }
  finish(sql.length);
  return statements;
}
