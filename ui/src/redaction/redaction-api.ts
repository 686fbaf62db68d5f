/** The redaction policy's API (docs/redaction.md). */
import { api } from "../api/client";

export const DETECTORS = ["email", "phone", "credit_card", "us_ssn", "iban", "ip_address", "api_key", "jwt", "url_credentials"] as const;
export const FIELDS = ["input", "output", "user_metadata", "name", "tags"] as const;

export interface CustomPattern {
  name: string;
  pattern: string;
  flags?: string | null;
}

export interface RedactionPolicy {
  enabled: boolean;
  mode: "mask" | "shadow";
  detectors: string[];
  custom: CustomPattern[];
  fields: string[];
}

const path = (projectId: string) => `/v2/projects/${encodeURIComponent(projectId)}/redaction`;

export const getPolicy = (projectId: string) => api<RedactionPolicy>("GET", path(projectId));
export const putPolicy = (projectId: string, policy: RedactionPolicy) => api<RedactionPolicy>("PUT", path(projectId), policy);
export const previewPolicy = (projectId: string, text: string, policy: RedactionPolicy) =>
  api<{ masked: string; changed: boolean }>("POST", `${path(projectId)}/preview`, { text, policy });
