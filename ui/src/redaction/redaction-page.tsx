/**
 * A project's redaction policy (docs/redaction.md): admins choose the detectors, the mode, the
 * fields and custom patterns, with a live preview of a sample text masked by the policy being
 * edited (the service's own preview route, so the page shows exactly what ingestion would store).
 * Members see the policy read-only.
 */
import { useEffect, useState } from "preact/hooks";
import type { CurrentUser } from "../api/types";
import { ErrorNotice } from "../views/error-notice";
import { Highlighted } from "../text-search/highlighted";
import { type CustomPattern, DETECTORS, FIELDS, getPolicy, previewPolicy, putPolicy, type RedactionPolicy } from "./redaction-api";

const SAMPLE =
  "Hi, I'm Jane (jane.doe@example.com, +44 20 7946 0958). Card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00. " +
  "My key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z and the db is postgres://app:hunter2@db.internal/x. Order EMP-123456.";

const PREVIEW_DELAY_MS = 250;

function toggle(list: string[], item: string, on: boolean): string[] {
  return on ? [...new Set([...list, item])] : list.filter((x) => x !== item);
}

export function RedactionPage({ projectId, user }: { projectId: string; user: CurrentUser | null }) {
  const [policy, setPolicy] = useState<RedactionPolicy | null>(null);
  const [saved, setSaved] = useState<RedactionPolicy | null>(null);
  const [error, setError] = useState<unknown>(null);
  // A refused save (a 422 on a custom pattern) is shown at the form, which keeps the edits.
  const [saveError, setSaveError] = useState<unknown>(null);
  const [sample, setSample] = useState(SAMPLE);
  const [preview, setPreview] = useState<string | null>(null);
  const [previewError, setPreviewError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const admin = user?.role === "admin";

  useEffect(() => {
    getPolicy(projectId).then((p) => (setPolicy(p), setSaved(p)), setError);
  }, [projectId]);

  // The live preview: the policy being edited, applied by the service to the sample text.
  useEffect(() => {
    if (!policy) return;
    let stale = false;
    const timer = setTimeout(() => {
      previewPolicy(projectId, sample, policy).then(
        (answer) => !stale && (setPreview(answer.masked), setPreviewError(null)),
        (e) => !stale && setPreviewError(e),
      );
    }, PREVIEW_DELAY_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [projectId, sample, policy]);

  if (error) return <main class="page"><ErrorNotice error={error} /></main>;
  if (!policy) return <main class="page"><p class="muted">Loading…</p></main>;

  // An edit answers a refused save: its message goes, as the next save or preview will judge anew.
  const edit = (change: Partial<RedactionPolicy>) => (setSaveError(null), setPolicy({ ...policy, ...change }));
  const editCustom = (i: number, change: Partial<CustomPattern>) => edit({ custom: policy.custom.map((c, j) => (j === i ? { ...c, ...change } : c)) });
  const dirty = JSON.stringify(policy) !== JSON.stringify(saved);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setSaveError(null);
    try {
      const stored = await putPolicy(projectId, policy);
      setPolicy(stored);
      setSaved(stored);
    } catch (err) {
      setSaveError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="page redaction-page">
      <h1>Redaction</h1>
      <p class="muted">
        Personal data and secrets found by the detectors below are replaced by <code>[REDACTED:&lt;name&gt;]</code> before anything is written. In{" "}
        <strong>mask</strong> mode only the masked text is stored; in <strong>shadow</strong> mode the original is kept and masked copies are stored beside it. A
        change applies to records written from then on (within 5 seconds).
        {admin ? null : " Only organization admins can change the policy."}
      </p>
      <form class="card redaction-form" onSubmit={save} data-testid="redaction-form">
        <fieldset disabled={!admin || busy}>
          <label class="inline-check">
            <input type="checkbox" name="enabled" checked={policy.enabled} onChange={(e) => edit({ enabled: e.currentTarget.checked })} /> Enabled
          </label>
          <label>
            Mode{" "}
            <select name="mode" value={policy.mode} onChange={(e) => edit({ mode: e.currentTarget.value as RedactionPolicy["mode"] })}>
              <option value="mask">mask: store only the masked text</option>
              <option value="shadow">shadow: keep the original, store masked copies</option>
            </select>
          </label>
          <fieldset class="choices">
            <legend>Detectors</legend>
            {DETECTORS.map((d) => (
              <label class="inline-check" key={d}>
                <input type="checkbox" name={`detector-${d}`} checked={policy.detectors.includes(d)} onChange={(e) => edit({ detectors: toggle(policy.detectors, d, e.currentTarget.checked) })} /> {d}
              </label>
            ))}
          </fieldset>
          <fieldset class="choices">
            <legend>Fields</legend>
            {FIELDS.map((f) => (
              <label class="inline-check" key={f}>
                <input type="checkbox" name={`field-${f}`} checked={policy.fields.includes(f)} onChange={(e) => edit({ fields: toggle(policy.fields, f, e.currentTarget.checked) })} /> {f}
              </label>
            ))}
          </fieldset>
          <fieldset class="choices">
            <legend>Custom patterns (ECMAScript syntax; no backreferences or lookaround)</legend>
            {policy.custom.map((c, i) => (
              <div class="custom-pattern" key={i} data-testid="custom-pattern">
                <input aria-label="Name" placeholder="name" value={c.name} maxLength={64} onInput={(e) => editCustom(i, { name: e.currentTarget.value })} />
                <input aria-label="Pattern" class="mono" placeholder="pattern, e.g. EMP-\d{6}" value={c.pattern} maxLength={500} onInput={(e) => editCustom(i, { pattern: e.currentTarget.value })} />
                <input aria-label="Flags" placeholder="flags (imsu)" value={c.flags ?? ""} maxLength={4} size={6} onInput={(e) => editCustom(i, { flags: e.currentTarget.value || null })} />
                <button type="button" class="button-small" onClick={() => edit({ custom: policy.custom.filter((_, j) => j !== i) })}>
                  Remove
                </button>
              </div>
            ))}
            <button type="button" class="button-small" onClick={() => edit({ custom: [...policy.custom, { name: `pattern_${policy.custom.length + 1}`, pattern: "", flags: null }] })}>
              Add a pattern
            </button>
          </fieldset>
          {saveError ? <ErrorNotice error={saveError} /> : null}
          {admin ? (
            <button type="submit" disabled={!dirty || busy} data-testid="save-redaction">
              {dirty ? "Save the policy" : "Saved"}
            </button>
          ) : null}
        </fieldset>
      </form>
      <section class="card">
        <h2>Preview</h2>
        <label>
          Sample text
          <textarea rows={4} value={sample} onInput={(e) => setSample(e.currentTarget.value)} data-testid="redaction-sample" />
        </label>
        {previewError ? <ErrorNotice error={previewError} /> : null}
        <p class="redaction-preview" data-testid="redaction-preview">
          {preview === null ? <span class="muted">…</span> : <Highlighted text={preview} />}
        </p>
        {policy.enabled ? null : <p class="muted">The policy is disabled: the preview shows what it would do once enabled.</p>}
      </section>
    </main>
  );
}
