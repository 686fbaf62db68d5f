/**
 * The input for one template's rating, by annotation type: thumbs and stars are buttons that
 * rate at once (a click or Enter/Space on the focused button); a score, tags, a choice, a node of
 * a choice tree and free text are edited and then saved, with the explanation when the template
 * asks for one. Validation is the service's: its 422 is shown under the input it is about.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { ApiError } from "../api/client";
import { describeError } from "../views/error-notice";
import { treeLabels } from "./aggregate-text";
import type { AnnotationTemplate, RatingValue, UserRating } from "./annotation-types";

/** Types whose input rates at once, without a Save step. */
export const ONE_CLICK_TYPES = new Set(["like_dislike", "star"]);

/** A failed rating as a sentence: a 422's faults with the field they name, else the status. */
export function ratingErrorText(error: unknown): string {
  if (error instanceof ApiError && error.status === 422 && error.validation.length > 0) {
    return error.validation
      .map((item) => {
        const field = item.loc.filter((step) => step !== "body").join(".");
        return field ? `${field}: ${item.msg}` : item.msg;
      })
      .join("; ");
  }
  const { title, detail } = describeError(error);
  return `${title}: ${detail}`;
}

function sameValue(a: RatingValue | null, b: RatingValue | null): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function splitList(text: string): string[] {
  return text.split(",").map((s) => s.trim()).filter(Boolean);
}

/** A thumb drawn inline (an emoji needs a font some machines lack). */
function Thumb({ down }: { down: boolean }) {
  return (
    <svg class={`thumb${down ? " thumb-down" : ""}`} viewBox="0 0 24 24" width="18" height="18" aria-hidden="true">
      <path d="M2 10h4v11H2zM8 21h9.2a2 2 0 0 0 2-1.6l1.6-7.4A2 2 0 0 0 18.8 9.6H14l.9-4.3a1.6 1.6 0 0 0-.4-1.5L13.6 3 8 9z" fill="currentColor" />
    </svg>
  );
}

interface InputProps {
  template: AnnotationTemplate;
  value: RatingValue | null;
  onChange: (value: RatingValue | null) => void;
  onRate: (value: RatingValue) => void;
  disabled: boolean;
}

function ValueInput({ template, value, onChange, onRate, disabled }: InputProps) {
  const c = template.constraints;
  const name = template.name;
  switch (c.annotation_type) {
    case "like_dislike":
      return (
        <span class="thumbs" role="group" aria-label={`${name}: like or dislike`}>
          {([true, false] as const).map((like) => (
            <button key={String(like)} type="button" class="rate-button" aria-pressed={value === like} disabled={disabled} onClick={() => onRate(like)} aria-label={like ? "Like" : "Dislike"} title={like ? "Like" : "Dislike"}>
              <Thumb down={!like} />
            </button>
          ))}
        </span>
      );
    case "star":
      return (
        <span class="stars" role="group" aria-label={`${name}: stars`}>
          {[1, 2, 3, 4, 5].map((n) => (
            <button
              key={n}
              type="button"
              class={`rate-button star${typeof value === "number" && n <= value ? " lit" : ""}`}
              aria-pressed={value === n}
              aria-label={`${n} star${n === 1 ? "" : "s"}`}
              disabled={disabled}
              onClick={() => onRate(n)}
            >
              ★
            </button>
          ))}
        </span>
      );
    case "score":
      return (
        <label class="inline-check">
          Score ({c.min}–{c.max})
          <input
            type="number"
            step="1"
            aria-label={`${name}: score`}
            value={typeof value === "number" ? String(value) : ""}
            disabled={disabled}
            onInput={(e) => {
              const text = e.currentTarget.value;
              onChange(text === "" ? null : Number(text));
            }}
          />
        </label>
      );
    case "tags": {
      const chosen = Array.isArray(value) ? value : [];
      const known = c.tags ?? [];
      const others = chosen.filter((t) => !known.includes(t));
      const set = (next: string[]) => onChange(next.length > 0 ? next : null);
      return (
        <span class="tag-choices" role="group" aria-label={`${name}: tags`}>
          {known.map((tag) => (
            <label key={tag} class="inline-check chip-check">
              <input type="checkbox" checked={chosen.includes(tag)} disabled={disabled} onChange={(e) => set(e.currentTarget.checked ? [...chosen, tag] : chosen.filter((t) => t !== tag))} />
              {tag}
            </label>
          ))}
          {c.allow_other ? <OtherTags name={name} others={others} disabled={disabled} onChange={(list) => set([...chosen.filter((t) => known.includes(t)), ...list])} /> : null}
        </span>
      );
    }
    case "choice": {
      const choices = c.choices ?? [];
      const other = typeof value === "string" && !choices.includes(value) ? value : "";
      return (
        <span class="choices" role="radiogroup" aria-label={`${name}: choice`}>
          {choices.map((choice) => (
            <label key={choice} class="inline-check chip-check">
              <input type="radio" name={`choice-${template.id}`} checked={value === choice} disabled={disabled} onChange={() => onChange(choice)} />
              {choice}
            </label>
          ))}
          {c.allow_other ? (
            <input aria-label={`${name}: other choice`} placeholder="other" value={other} disabled={disabled} onInput={(e) => onChange(e.currentTarget.value || null)} />
          ) : null}
        </span>
      );
    }
    case "tree_choice":
      return <TreeChoiceSelect template={template} value={value} onChange={onChange} disabled={disabled} />;
    case "text":
      return (
        <textarea
          aria-label={`${name}: text`}
          rows={2}
          value={typeof value === "string" ? value : ""}
          disabled={disabled}
          onInput={(e) => onChange(e.currentTarget.value === "" ? null : e.currentTarget.value)}
        />
      );
  }
}

/** Tags outside the template's list, typed comma-separated (kept as typed while editing). */
function OtherTags({ name, others, disabled, onChange }: { name: string; others: string[]; disabled: boolean; onChange: (tags: string[]) => void }) {
  const [text, setText] = useState(others.join(", "));
  const othersKey = others.join("\n");
  useEffect(() => {
    if (splitList(text).join("\n") !== othersKey) setText(others.join(", "));
  }, [othersKey]);
  return (
    <input
      aria-label={`${name}: other tags (comma-separated)`}
      placeholder="other tags, comma-separated"
      value={text}
      disabled={disabled}
      onInput={(e) => {
        setText(e.currentTarget.value);
        onChange(splitList(e.currentTarget.value));
      }}
    />
  );
}

function TreeChoiceSelect({ template, value, onChange, disabled }: Omit<InputProps, "onRate">) {
  const labels = useMemo(() => treeLabels(template.constraints.choices_tree), [template]);
  const options = [...labels].sort((a, b) => a[1].localeCompare(b[1]));
  return (
    <select aria-label={`${template.name}: choice`} value={typeof value === "string" ? value : ""} disabled={disabled} onChange={(e) => onChange(e.currentTarget.value || null)}>
      <option value="">choose…</option>
      {options.map(([id, label]) => (
        <option key={id} value={id}>
          {label}
        </option>
      ))}
    </select>
  );
}

interface FormProps {
  template: AnnotationTemplate;
  /** The caller's rating, if any. */
  saved: UserRating | undefined;
  save: (value: RatingValue, explanation: string | null) => Promise<unknown>;
  remove: () => Promise<unknown>;
}

/** The caller's rating with one template: the input, the explanation, save and remove. */
export function RatingForm({ template, saved, save, remove }: FormProps) {
  const [value, setValue] = useState<RatingValue | null>(saved?.value ?? null);
  const [explanation, setExplanation] = useState(saved?.explanation ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const savedKey = JSON.stringify(saved ?? null);
  useEffect(() => {
    setValue(saved?.value ?? null);
    setExplanation(saved?.explanation ?? "");
  }, [savedKey]);

  const run = (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    action().then(
      () => setBusy(false),
      (caught: unknown) => {
        setBusy(false);
        setError(caught);
      },
    );
  };
  const rate = (next: RatingValue) => {
    setValue(next);
    run(() => save(next, template.include_explanation && explanation ? explanation : null));
  };
  const dirty = !sameValue(value, saved?.value ?? null) || (template.include_explanation && explanation !== (saved?.explanation ?? ""));
  const oneClick = ONE_CLICK_TYPES.has(template.constraints.annotation_type);
  return (
    <form
      class="rating-form"
      aria-label={`Your rating: ${template.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (value !== null) run(() => save(value, template.include_explanation && explanation ? explanation : null));
      }}
    >
      <ValueInput template={template} value={value} onChange={setValue} onRate={rate} disabled={busy} />
      {template.include_explanation ? (
        <textarea aria-label={`${template.name}: explanation`} placeholder="Explanation" rows={2} value={explanation} disabled={busy} onInput={(e) => setExplanation(e.currentTarget.value)} />
      ) : null}
      <span class="rating-actions">
        {!oneClick || template.include_explanation ? (
          <button type="submit" class="button-small button-primary" disabled={busy || value === null || !dirty}>
            Save
          </button>
        ) : null}
        {saved ? (
          <button type="button" class="button-small" disabled={busy} onClick={() => run(remove)}>
            Remove my rating
          </button>
        ) : null}
        {busy ? <span class="muted small">Saving…</span> : null}
      </span>
      {error ? (
        <p class="field-error" role="alert" data-testid="rating-error" data-status={error instanceof ApiError ? error.status : undefined}>
          {ratingErrorText(error)}
        </p>
      ) : null}
    </form>
  );
}
