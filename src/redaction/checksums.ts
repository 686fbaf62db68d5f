/**
 * The checksums that separate a real identifier from a digit run that merely looks like one
 * (contract section 14): Luhn for card numbers, ISO 7064 mod 97-10 for IBANs, the SSA's rules
 * for Social Security numbers. Pure, linear in the input.
 */

/** Luhn (mod 10) over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Lengths of the IBAN of each country that issues them (SWIFT's IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22,
  CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22,
  GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30,
  KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27,
  MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33,
  SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29,
  VA: 22, VG: 24, XK: 20, YE: 30,
};

/** IBAN_LENGTHS by the two letters' codes (A = 0): a lookup that allocates nothing, for scans. */
const LENGTH_BY_CODES = new Uint8Array(26 * 26);
for (const [country, length] of Object.entries(IBAN_LENGTHS)) LENGTH_BY_CODES[(country.charCodeAt(0) - 65) * 26 + country.charCodeAt(1) - 65] = length;

/** The IBAN length of the country whose letters have these char codes (either case), or 0. */
export function ibanLengthOfCodes(first: number, second: number): number {
  const a = (first & ~32) - 65;
  const b = (second & ~32) - 65;
  return a >= 0 && a < 26 && b >= 0 && b < 26 ? LENGTH_BY_CODES[a * 26 + b]! : 0;
}

/** An IBAN without spaces, any case: known country, that country's length, mod 97 == 1. */
export function ibanValid(compact: string): boolean {
  const iban = compact.toUpperCase();
  if (IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (let i = 0; i < rearranged.length; i++) {
    const code = rearranged.charCodeAt(i);
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + (code - 48)) % 97;
    else if (code >= 65 && code <= 90) remainder = (remainder * 100 + (code - 55)) % 97;
    else return false;
  }
  return remainder === 1;
}

/**
 * A US Social Security number that can have been issued: area not 000, 666 or 900-999, group not
 * 00, serial not 0000 (the SSA's rules since randomization in 2011).
 */
export function ssnValid(area: string, group: string, serial: string): boolean {
  const a = Number(area);
  return a !== 0 && a !== 666 && a < 900 && group !== "00" && serial !== "0000";
}
