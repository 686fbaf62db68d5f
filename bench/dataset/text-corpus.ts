/**
 * Text for the synthetic dataset: the questions, answers, prompts, tool calls and documents of a
 * customer-support and assistant application. Every record's text is assembled from templates
 * with random slot values, so inputs differ from record to record and a substring search has to
 * read them all (an honest scan), while the size of the text stays close to real traffic
 * (questions of 60 to 250 characters, answers of 150 to 700, prompts of 300).
 */
import type { SeededRandom } from "../lib/seeded-random";

/**
 * The rare word of the text-search benchmark. It appears in no template: only in the questions
 * the generator deliberately salts with it (about 1 in 10,000 traces), so a `contains` search for
 * it has to scan the whole run to fill a page.
 */
export const RARE_WORD = "chargeback";

const CITIES = ["Lisbon", "Berlin", "Toronto", "Osaka", "Nairobi", "Austin", "Lyon", "Melbourne", "Seoul", "Oslo", "Bogotá", "Dublin", "Krakow", "Denver", "Porto", "Chennai"];
const COUNTRIES = ["Portugal", "Germany", "Canada", "Japan", "Kenya", "the United States", "France", "Australia", "South Korea", "Norway", "Colombia", "Ireland", "Poland", "India"];
const PRODUCTS = ["wireless headphones", "espresso machine", "running shoes", "standing desk", "e-reader", "smart thermostat", "air fryer", "backpack", "mechanical keyboard", "4K monitor", "electric toothbrush", "yoga mat", "blender", "robot vacuum"];
const PARTS = ["charging cable", "lid", "left strap", "power button", "screen", "water tank", "handle", "remote"];
const STATUSES = ["label created", "in transit", "held at customs", "out for delivery", "delayed", "awaiting pickup"];
const USES = ["long flights", "a small apartment", "home office work", "marathon training", "gaming", "a family of four"];
const LANGUAGES = ["Spanish", "German", "Japanese", "French", "Portuguese", "Korean", "Italian"];
const PHRASES = ["the meeting has been moved to Thursday", "please keep the receipt for your records", "we are sorry for the inconvenience", "your package will arrive tomorrow", "thank you for your patience"];
const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const order = (r: SeededRandom) => `#${r.pick(["A", "B", "C", "K", "M"])}-${r.int(10000, 99999)}`;
const date = (r: SeededRandom) => `${r.pick(WEEKDAYS)} ${r.int(1, 28)} ${r.pick(MONTHS)}`;
const time = (r: SeededRandom) => `${r.int(6, 10)}:${r.pick(["00", "15", "30", "45"])} pm`;
const amount = (r: SeededRandom) => `${r.int(5, 900)}.${String(r.int(0, 99)).padStart(2, "0")}`;
const reference = (r: SeededRandom) => `RX-${r.hex(6).toUpperCase()}`;

type Template = (r: SeededRandom) => string;

const QUESTIONS: Template[] = [
  (r) => `Where is my order ${order(r)}? It was supposed to arrive on ${date(r)} but the tracking page still says ${r.pick(STATUSES)}.`,
  (r) => `Can I change the delivery address for order ${order(r)} to an address in ${r.pick(CITIES)}?`,
  (r) => `How do I reset my password? I tried the link in the email from ${date(r)} and it says the link has expired.`,
  (r) => `What is your return policy for a ${r.pick(PRODUCTS)} I bought ${r.int(2, 60)} days ago?`,
  (r) => `My card ending in ${r.int(1000, 9999)} was charged twice for the ${r.pick(PRODUCTS)}. Can you refund one of the two payments?`,
  (r) => `Do you ship the ${r.pick(PRODUCTS)} to ${r.pick(COUNTRIES)}, and how long does delivery usually take?`,
  (r) => `I need to cancel my subscription before the next billing date on ${date(r)}. What do I have to do?`,
  (r) => `Which ${r.pick(PRODUCTS)} is better for ${r.pick(USES)}: the standard version or the pro one?`,
  (r) => `The ${r.pick(PRODUCTS)} I received is damaged: the box was open and the ${r.pick(PARTS)} is broken.`,
  (r) => `Can you summarize the last ${r.int(2, 6)} messages in this conversation and tell me what is still open?`,
  (r) => `Book me a table for ${r.int(2, 8)} people in ${r.pick(CITIES)} tomorrow at ${time(r)}, somewhere quiet please.`,
  (r) => `What will the weather be like in ${r.pick(CITIES)} on ${date(r)}? I am deciding whether to fly or take the train.`,
  (r) => `Explain the difference between a fixed and a variable rate mortgage for someone buying a flat in ${r.pick(COUNTRIES)}.`,
  (r) => `Translate this sentence into ${r.pick(LANGUAGES)}: "${r.pick(PHRASES)}".`,
  (r) => `I was charged ${amount(r)} USD for order ${order(r)} but the confirmation said less. Why is there a difference?`,
  (r) => `Is the ${r.pick(PRODUCTS)} back in stock? I have been waiting since ${date(r)}.`,
  (r) => `Please write a short, polite reply to a customer in ${r.pick(CITIES)} whose ${r.pick(PRODUCTS)} arrived late.`,
  (r) => `Compare the warranty of the ${r.pick(PRODUCTS)} with the ${r.pick(PRODUCTS)} and tell me which one covers accidental damage.`,
];

const ANSWER_SENTENCES: Template[] = [
  (r) => `I checked order ${order(r)} and it left our warehouse in ${r.pick(CITIES)} on ${date(r)}.`,
  (r) => `The carrier reports the parcel as ${r.pick(STATUSES)}; most deliveries to ${r.pick(COUNTRIES)} take ${r.int(2, 9)} business days.`,
  () => "I have updated the address, and you will receive a confirmation email within a few minutes.",
  () => "Our return policy allows returns within 30 days of delivery as long as the item is unused and in its original packaging.",
  (r) => `I have issued a refund of ${amount(r)} USD; it can take 5 to 10 business days to appear on your statement.`,
  (r) => `For ${r.pick(USES)}, the pro version is the better choice because of its larger battery and faster charging.`,
  (r) => `I am sorry the ${r.pick(PRODUCTS)} arrived damaged. I have opened a replacement request with reference ${reference(r)}.`,
  (r) => `The forecast for ${r.pick(CITIES)} shows ${r.int(8, 31)} degrees with a ${r.int(0, 90)} percent chance of rain.`,
  (r) => `Your table for ${r.int(2, 8)} is confirmed at ${time(r)}; the restaurant holds reservations for fifteen minutes.`,
  () => "A fixed rate keeps the same interest for the whole term, while a variable rate follows the market and can go up or down.",
  () => "Your subscription has been cancelled and you will keep access until the end of the current billing period.",
  (r) => `The password reset link is valid for ${r.int(15, 60)} minutes; I have sent a new one to the address on file.`,
  () => "If anything else comes up, reply to this message and the conversation will be picked up where we left off.",
  (r) => `Stock is expected on ${date(r)}, and I have added you to the notification list for that item.`,
  () => "The two charges come from a pre-authorisation and the final payment; the pre-authorisation is released automatically.",
  (r) => `Both products include a ${r.int(1, 3)}-year warranty, but only the first one covers accidental damage.`,
];

const SYSTEM_PROMPTS = [
  "You are a helpful customer support assistant for an online store. Answer using only the order data and the policy documents provided in the context. If the answer is not in the context, say that you will escalate to a human agent. Keep answers under 120 words and never reveal internal notes.",
  "You are a travel assistant. Use the tools to look up weather, flights and restaurants before answering. Ask one clarifying question when the request is ambiguous. Always state prices in the user's currency and mention any booking conditions.",
  "You are a financial information assistant. Explain concepts in plain language, do not give personalised investment advice, and point to the relevant product documentation. Refuse requests for account credentials or one-time codes.",
  "You are a translation and writing assistant. Preserve the meaning and the tone of the source text, keep names and numbers unchanged, and return only the translated or rewritten text without commentary.",
  "You are a router. Read the user's message and decide which specialist agent should handle it: orders, billing, technical support or general questions. Reply with the agent name and a one-sentence justification.",
  "You are a judge. Given a question, a retrieved context and an answer, rate whether the answer is fully supported by the context on a scale from 1 to 5 and list any unsupported claims.",
];

const DOCUMENTS = [
  "Returns: items can be returned within 30 days of delivery. Items must be unused and in their original packaging. Refunds go to the original payment method within 10 business days.",
  "Shipping: standard delivery takes 3 to 7 business days in the EU and 5 to 12 business days elsewhere. Express delivery is available for most destinations at checkout.",
  "Warranty: electronics carry a two-year limited warranty covering manufacturing defects. Accidental damage is covered only with the Care Plus extension purchased within 60 days.",
  "Subscriptions renew automatically at the end of each billing period. Cancelling stops the next renewal; access continues until the end of the period already paid for.",
  "Payment holds: a card may show a temporary authorisation in addition to the final charge. The authorisation is released by the card issuer within 3 to 7 days.",
  "Password resets: reset links expire after 30 minutes and can be used once. Accounts are locked for 15 minutes after five failed sign-in attempts.",
  "Damaged items: report damage within 14 days with a photo of the item and the packaging. A replacement or refund is offered at the customer's choice.",
  "Restaurant bookings are held for 15 minutes after the reserved time. Groups larger than 8 require a deposit that is refunded at the end of the meal.",
  "Mortgages: a fixed rate stays the same for the agreed term; a variable rate tracks a reference rate plus a margin and is reviewed every 6 or 12 months.",
  "Customs: parcels sent outside the EU may be held for inspection. Duties are paid by the recipient unless the order was placed with delivered-duty-paid shipping.",
  "Address changes are possible until the parcel leaves the warehouse. After dispatch, the carrier's redirection service can be used for a small fee.",
  "Loyalty points are earned at one point per dollar and expire after 18 months without a purchase. Points cannot be exchanged for cash.",
];

const DOCUMENT_SOURCES = ["kb/returns.md", "kb/shipping.md", "kb/warranty.md", "kb/billing.md", "kb/accounts.md", "kb/bookings.md", "kb/mortgages.md", "kb/customs.md"];

export const TOOLS = [
  { name: "search_orders", args: (r: SeededRandom) => ({ order_id: order(r).slice(1) }), result: (r: SeededRandom) => ({ status: r.pick(STATUSES), warehouse: r.pick(CITIES), eta: date(r) }) },
  { name: "get_weather", args: (r: SeededRandom) => ({ city: r.pick(CITIES), date: date(r) }), result: (r: SeededRandom) => ({ temperature_c: r.int(-5, 35), precipitation: r.int(0, 100) / 100, summary: r.pick(["sunny", "cloudy", "light rain", "storms", "snow"]) }) },
  { name: "lookup_customer", args: (r: SeededRandom) => ({ email: `customer${r.int(1, 99999)}@example.com` }), result: (r: SeededRandom) => ({ customer_id: `cus_${r.hex(10)}`, tier: r.pick(["basic", "plus", "premium"]), orders: r.int(0, 40) }) },
  { name: "create_refund", args: (r: SeededRandom) => ({ order_id: order(r).slice(1), amount: Number(amount(r)) }), result: (r: SeededRandom) => ({ refund_id: `re_${r.hex(12)}`, state: "pending" }) },
  { name: "book_table", args: (r: SeededRandom) => ({ city: r.pick(CITIES), people: r.int(2, 8), time: time(r) }), result: (r: SeededRandom) => ({ confirmation: reference(r), restaurant: `${r.pick(["Casa", "Chez", "Bistro", "Osteria"])} ${r.pick(CITIES)}` }) },
  { name: "convert_currency", args: (r: SeededRandom) => ({ amount: Number(amount(r)), from: "USD", to: r.pick(["EUR", "JPY", "CAD", "GBP"]) }), result: (r: SeededRandom) => ({ converted: Number(amount(r)), rate: r.int(50, 160) / 100 }) },
] as const;

export function question(r: SeededRandom, salted: boolean): string {
  const text = r.pick(QUESTIONS)(r);
  return salted ? `${text} If this is not sorted out I will open a ${RARE_WORD} with my bank.` : text;
}

export function answer(r: SeededRandom): string {
  const sentences: string[] = [];
  const count = r.int(1, 5);
  for (let i = 0; i < count; i += 1) sentences.push(r.pick(ANSWER_SENTENCES)(r));
  return sentences.join(" ");
}

export function systemPrompt(r: SeededRandom): string {
  return r.pick(SYSTEM_PROMPTS);
}

export function documents(r: SeededRandom, count: number): { content: string; metadata: Record<string, string | number> }[] {
  const docs = [];
  for (let i = 0; i < count; i += 1) {
    docs.push({ content: r.pick(DOCUMENTS), metadata: { source: r.pick(DOCUMENT_SOURCES), score: Math.round((0.95 - i * 0.07 - r.next() * 0.05) * 1000) / 1000 } });
  }
  return docs;
}

export function searchQuery(r: SeededRandom): string {
  return r.pick(["return policy", "shipping times", "warranty accidental damage", "double charge authorisation", "password reset link", "damaged item", "booking deposit", "variable rate mortgage", "customs duties", "change address after dispatch"]) + ` ${r.pick(COUNTRIES)}`;
}

export function checkedText(r: SeededRandom): string {
  return r.chance(0.5) ? r.pick(QUESTIONS)(r) : r.pick(ANSWER_SENTENCES)(r);
}
