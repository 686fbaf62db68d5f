/** The filter builder's editor of a `fully_annotated` leaf: rated with every template by anyone, or by me. */
import { useEffect, useState } from "preact/hooks";
import { currentUser } from "./annotation-api";

export function FullyAnnotatedEditor({ userIds, onChange }: { userIds: string[]; onChange: (userIds: string[]) => void }) {
  const [meId, setMeId] = useState<string | null>(null);
  useEffect(() => {
    currentUser().then((me) => setMeId(me.id), () => undefined);
  }, []);
  const mode = userIds.length === 0 ? "anyone" : userIds.length === 1 && userIds[0] === meId ? "me" : "listed";
  return (
    <select aria-label="Rated by" value={mode} onChange={(e) => onChange(e.currentTarget.value === "me" && meId ? [meId] : [])}>
      <option value="anyone">by anyone (every template)</option>
      <option value="me" disabled={!meId}>
        by me (every template)
      </option>
      {mode === "listed" ? <option value="listed">by {userIds.join(", ")}</option> : null}
    </select>
  );
}
