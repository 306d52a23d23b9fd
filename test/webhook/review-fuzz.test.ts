// Whatever arrives, review answers a well-formed AdmissionReview and never throws.
import t from 'tap';
import type { AdmissionReviewResponse } from '../../webhook/server/envelope.js';
import { reviewAdmission, reviewText } from '../../webhook/server/review.js';
import { admit, loadReview } from '../fixtures/admission/context.js';

const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
let state = seed;
/** mulberry32: small, seedable, so a failure can be replayed with FUZZ_SEED. */
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const strings = ['', 'Pod', 'v1', 'CREATE', 'admission.k8s.io/v1', 'AdmissionReview', 'executor', '\u0000', '"}{', 'x'.repeat(5000), '__proto__'];
function randomValue(depth = 0): unknown {
  const roll = random();
  if (depth > 4 || roll < 0.3) return pick([null, true, false, 0, -1, 1e308, 3.5, ...strings]);
  if (roll < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(['uid', 'kind', 'request', 'object', 'metadata', 'labels', 'spec', 'containers', ...strings]), randomValue(depth + 1)]));
}

/** Replaces, deletes or retypes one value somewhere in a copy of the review. */
function mutate(review: unknown): unknown {
  const copy = structuredClone(review) as Record<string, unknown>;
  let node: any = copy;
  for (let steps = Math.floor(random() * 8); steps > 0; steps--) {
    const keys = node && typeof node === 'object' ? Object.keys(node) : [];
    if (keys.length === 0) break;
    const key = pick(keys);
    if (typeof node[key] !== 'object' || node[key] === null || random() < 0.2) {
      if (random() < 0.4) delete node[key];
      else node[key] = randomValue();
      return copy;
    }
    node = node[key];
  }
  if (node && typeof node === 'object') node[pick(['uid', 'kind', 'x', '0'])] = randomValue();
  return copy;
}

/** As text: JSON.stringify itself would overflow the stack on such a value. */
function withDeepAnnotation(review: unknown, levels: number): string {
  const deep = `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  return JSON.stringify(review).replace('"labels":{', `"labels":{"deep":${deep},`);
}

/** Built once per fixture: review must not change its input, so they can be shared. */
function huge(review: Record<string, any>): Record<string, any> {
  const body = structuredClone(review);
  body.request.object.metadata.annotations = { ...body.request.object.metadata.annotations, big: 'x'.repeat(2_000_000) };
  for (let l = 0; l < 2000; l++) body.request.object.metadata.labels[`l${l}`] = String(l);
  return body;
}

const fixtures = ['bare-driver-pod', 'team-labeled-pod', 'executor-pod', 'other-pod', 'unschedulable-driver-pod'].map(loadReview);
const hugeFixtures = fixtures.map(huge);

function wellFormed(out: AdmissionReviewResponse): string | undefined {
  if (out.apiVersion !== 'admission.k8s.io/v1' || out.kind !== 'AdmissionReview') return 'envelope';
  const r = out.response;
  if (typeof r.uid !== 'string' || typeof r.allowed !== 'boolean') return 'uid/allowed';
  if ((r.patch === undefined) !== (r.patchType === undefined)) return 'patch without patchType';
  if (r.patch !== undefined && !Array.isArray(JSON.parse(Buffer.from(r.patch, 'base64').toString()))) return 'patch not a JSON array';
  if (!r.allowed && !(Number.isInteger(r.status?.code) && r.status!.code >= 400 && typeof r.status?.message === 'string')) return 'denial without status';
  if (r.allowed && r.status) return 'status on an allowed review';
  JSON.stringify(out); // serialisable
  return undefined;
}

t.test(`fuzz (FUZZ_SEED=${seed})`, async (t) => {
  const counts: Record<string, number> = {};
  let bad = 0;
  const runs = 5000;
  for (let i = 0; i < runs; i++) {
    const base = pick(fixtures);
    const kind = pick(['random', 'mutated', 'mutated', 'mutated', 'truncated', 'wrong-kind', 'huge', 'deep'] as const);
    let result;
    try {
      if (kind === 'random') result = reviewAdmission(randomValue(), admit);
      else if (kind === 'mutated') {
        const body = mutate(base);
        result = random() < 0.5 ? reviewAdmission(body, admit) : reviewText(JSON.stringify(body), admit);
      } else if (kind === 'truncated') {
        const text = JSON.stringify(base);
        result = reviewText(text.slice(0, Math.floor(random() * text.length)), admit);
      } else if (kind === 'wrong-kind') {
        const request = { ...base.request, kind: { group: pick(['', 'apps', 'batch']), version: pick(['v1', 'v1beta1']), kind: pick(['Pod', 'Job', 'Service']) }, operation: pick(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']) };
        result = reviewAdmission({ ...base, request }, admit);
      } else if (kind === 'huge') {
        result = reviewAdmission(hugeFixtures[fixtures.indexOf(base)], admit);
      } else {
        result = reviewText(withDeepAnnotation(base, Math.floor(random() * 50_000)), admit);
      }
    } catch (error) {
      bad++;
      t.fail(`${kind} threw: ${(error as Error).message}`);
      continue;
    }
    const problem = wellFormed(result.review);
    if (problem) { bad++; t.fail(`${kind}: ${problem}`); }
    counts[`${kind}:${result.outcome}`] = (counts[`${kind}:${result.outcome}`] ?? 0) + 1;
  }
  t.equal(bad, 0, `${runs} reviews, none threw or came out malformed`);
  t.comment(JSON.stringify(counts));
});

t.test('uid is echoed whenever the review carries one', async (t) => {
  for (let i = 0; i < 2000; i++) {
    const body = mutate(pick(fixtures)) as any;
    const uid = body?.request?.uid;
    const out = reviewAdmission(body, admit).review;
    if (typeof uid === 'string' && uid !== '') t.equal(out.response.uid, uid);
    else t.equal(out.response.uid, '');
  }
});
