/**
 * Template definitions cached per isolate. A template's type and constraints never change (PATCH
 * changes only its name and criteria), so a cached definition cannot go stale; a deleted
 * template may linger here, which is harmless: every statement that uses a definition also
 * requires the template to be live in the database (a rating write on a deleted template writes
 * nothing and answers 404; an annotation filter on it matches no rating). This keeps a rating
 * write and an annotation search at one round trip to the shard on a warm isolate.
 */
import { definitionOf, type TemplateDefinition, type TemplateRow } from "./template-store";

const MAX_DEFINITIONS = 10_000;
const definitions = new Map<string, { projectId: string; definition: TemplateDefinition }>();

export function rememberDefinitions(projectId: string, rows: readonly TemplateRow[]): TemplateDefinition[] {
  if (definitions.size + rows.length > MAX_DEFINITIONS) definitions.clear();
  return rows.map((row) => {
    const definition = definitionOf(row);
    definitions.set(row.id, { projectId, definition });
    return definition;
  });
}

/** The cached definitions of these templates of the project; missing ones are listed apart. */
export function cachedDefinitions(projectId: string, templateIds: readonly string[]): { found: Map<string, TemplateDefinition>; missing: string[] } {
  const found = new Map<string, TemplateDefinition>();
  const missing: string[] = [];
  for (const id of templateIds) {
    const hit = definitions.get(id);
    if (hit && hit.projectId === projectId) found.set(id, hit.definition);
    else missing.push(id);
  }
  return { found, missing };
}
