/**
 * What a request's `Content-Type` says, read the way Hono's validators read it: the media type
 * without its parameters, in lower case. Deciding by a substring of the whole header is wrong:
 * `application/x-www-form-urlencoded; x=json` is a form, whatever its parameters contain.
 */

/** The media type of a Content-Type header without its parameters, lower case ("" when absent). */
export function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

/** The pattern Hono's `json` validator parses (`application/json`, `application/<x>+json`). */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/;

export function isJsonMediaType(contentType: string | null | undefined): boolean {
  return JSON_MEDIA_TYPE.test(mediaTypeOf(contentType));
}

/** The two media types Hono's `form` validator parses. */
export function isFormMediaType(contentType: string | null | undefined): boolean {
  const mediaType = mediaTypeOf(contentType);
  return mediaType === "application/x-www-form-urlencoded" || mediaType === "multipart/form-data";
}
