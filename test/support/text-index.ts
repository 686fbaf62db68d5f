/**
 * Is the text index (`records_text`, migration 0016) exactly the index of the records' text as
 * they are now? A contentless index cannot be read back, so this builds a fresh index of the
 * same declaration from `records` (the rows it covers: pending_through < rid <= indexed_through) and compares the two
 * entry by entry (term, rid) through fts5vocab: a write path that forgot the index, or removed
 * a row with other values than it indexed, leaves entries one has and the other lacks.
 */
import { catchUpChunk } from "../../src/text-index/backfill";
import { recordDatabases } from "./record-dbs";

const FAMILY_TOKEN = (key: string) => `char(57344 + (${key} / 40960000) % 6400, 57344 + (${key} / 6400) % 6400, 57344 + ${key} % 6400)`;

export interface TextIndexDifference {
  term: string;
  rid: number;
  /** "missing": the records' text has it, the index not; "stale": the other way. */
  kind: "missing" | "stale";
}

export async function textIndexDifferences(db: D1Database): Promise<TextIndexDifference[]> {
  const suffix = crypto.randomUUID().replaceAll("-", "");
  const reference = `text_reference_${suffix}`;
  await db.batch([
    db.prepare(`CREATE VIRTUAL TABLE ${reference} USING fts5(name, input, output, family, content='', detail=none, columnsize=0, tokenize='trigram case_sensitive 0')`),
    db.prepare(
      `INSERT INTO ${reference} (rowid, name, input, output, family) SELECT rid, name, input, output, ${FAMILY_TOKEN("family_key")} FROM records WHERE rid > (SELECT pending_through FROM records_text_backfill) AND rid <= (SELECT indexed_through FROM records_text_backfill)`,
    ),
    db.prepare(`CREATE VIRTUAL TABLE ${reference}_v USING fts5vocab(${reference}, 'instance')`),
    db.prepare(`CREATE VIRTUAL TABLE live_${suffix}_v USING fts5vocab(records_text, 'instance')`),
  ]);
  try {
    const [missing, stale] = await db.batch<{ term: string; rid: number }>([
      db.prepare(`SELECT term, doc AS rid FROM ${reference}_v EXCEPT SELECT term, doc FROM live_${suffix}_v LIMIT 20`),
      db.prepare(`SELECT term, doc AS rid FROM live_${suffix}_v EXCEPT SELECT term, doc FROM ${reference}_v LIMIT 20`),
    ]);
    return [...missing!.results.map((d) => ({ ...d, kind: "missing" as const })), ...stale!.results.map((d) => ({ ...d, kind: "stale" as const }))];
  } finally {
    await db.batch([db.prepare(`DROP TABLE live_${suffix}_v`), db.prepare(`DROP TABLE ${reference}_v`), db.prepare(`DROP TABLE ${reference}`)]);
  }
}

/** The cron's catch-up (src/text-index/backfill.ts) until the index covers every record, in every database. */
export async function catchUpTextIndexesEverywhere(): Promise<void> {
  for (const db of recordDatabases()) while ((await catchUpChunk(db)) > 0);
}

/**
 * textIndexDifferences over every database that holds records (the shards and the catalog):
 * the rows the index covers as the writes left them (what the update and delete triggers kept),
 * then again once the catch-up has indexed the rest.
 */
export async function textIndexDifferencesEverywhere(): Promise<TextIndexDifference[]> {
  const asLeft = (await Promise.all(recordDatabases().map(textIndexDifferences))).flat();
  await catchUpTextIndexesEverywhere();
  return [...asLeft, ...(await Promise.all(recordDatabases().map(textIndexDifferences))).flat()];
}
