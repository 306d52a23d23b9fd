// Leader election's decisions (cluster/kubernetes/lease-decision.ts) with an injected clock, no
// cluster: expiry judged from when THIS replica first saw a version, the leader's renew
// deadline, call budgets, and the property everything rests on: a leader that cannot renew
// stops before any follower may take over.
import t from 'tap';
import {
  callBudget, checkTiming, CLIENT_GO_TIMING, decide, mayLead, type Observation, retryDelay, timingForLease,
} from '../../cluster/kubernetes/lease-decision.js';

const timing = CLIENT_GO_TIMING;

t.test("client-go's figures, and their proportions for other lease durations", async (t) => {
  t.same(timing, { leaseMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2_000 });
  t.same(timingForLease(15_000), timing);
  t.same(timingForLease(3_000), { leaseMs: 3_000, renewDeadlineMs: 2_000, retryMs: 400 });
  t.doesNotThrow(() => checkTiming(timingForLease(1_000)));
  t.throws(() => checkTiming({ leaseMs: 10_000, renewDeadlineMs: 10_000, retryMs: 2_000 }), /longer than the renew deadline/);
  t.throws(() => checkTiming({ leaseMs: 15_000, renewDeadlineMs: 2_000, retryMs: 2_000 }), /longer than the retry period/);
});

t.test('no Lease: create it; ours: renew; released: take', async (t) => {
  t.equal(decide(undefined, undefined, 'me', 0, timing).action, 'create');
  t.equal(decide({ version: '5', holder: 'me' }, undefined, 'me', 0, timing).action, 'renew');
  t.equal(decide({ version: '5', holder: '' }, undefined, 'me', 0, timing).action, 'take');
  t.equal(decide({ version: '5' }, undefined, 'me', 0, timing).action, 'take');
});

t.test("another holder's Lease expires by this replica's clock, from when it first saw that version", async (t) => {
  const lease = { version: '7', holder: 'other', durationSeconds: 15 };
  // First seen at t = 1,000,000 ms of this process's clock: a wall clock elsewhere does not matter.
  const first = decide(lease, undefined, 'me', 1_000_000, timing);
  t.equal(first.action, 'wait');
  t.equal(first.expiresInMs, 15_000);
  const observed = first.observed as Observation;
  t.equal(decide(lease, observed, 'me', 1_014_999, timing).action, 'wait', 'still valid 1 ms before');
  t.equal(decide(lease, observed, 'me', 1_015_000, timing).action, 'take', 'expired after the full duration unchanged');
  // A renewal (new version) seen late restarts the count from when it was seen.
  const renewed = decide({ ...lease, version: '8' }, observed, 'me', 1_014_000, timing);
  t.equal(renewed.action, 'wait');
  t.equal(renewed.observed?.at, 1_014_000);
  t.equal(decide({ ...lease, version: '8' }, renewed.observed, 'me', 1_028_999, timing).action, 'wait');
});

t.test("the holder's own leaseDurationSeconds counts", async (t) => {
  const seen = decide({ version: '1', holder: 'other', durationSeconds: 2 }, undefined, 'me', 0, timing).observed;
  t.equal(decide({ version: '1', holder: 'other', durationSeconds: 2 }, seen, 'me', 2_000, timing).action, 'take');
});

t.test('a leader leads only within the renew deadline of its last successful renewal', async (t) => {
  t.notOk(mayLead(undefined, 0, timing), 'never renewed: not a leader');
  t.ok(mayLead(50_000, 59_999, timing));
  t.notOk(mayLead(50_000, 60_000, timing), 'stops at the deadline');
});

t.test("a leader's calls end before its deadline; a candidate's are bounded too", async (t) => {
  t.equal(callBudget(50_000, true, 52_000, timing), 8_000);
  t.equal(callBudget(50_000, true, 61_000, timing), 0, 'none left: step down');
  t.equal(callBudget(undefined, false, 0, timing), 10_000);
});

t.test('safety: a leader that stops renewing stops leading before any follower may take over', async (t) => {
  // The leader's last renewal started at R (its clock) and was seen by a follower at S >= R
  // (the follower's clock, same rate, any offset). Any delay in between only helps.
  for (const [offset, delay] of [[0, 0], [123_456, 0], [-5_000, 3_000], [0, 9_999]]) {
    const renewStart = 100_000;
    const seenAt = renewStart + offset + delay;
    const seen = decide({ version: 'r', holder: 'leader', durationSeconds: 15 }, undefined, 'follower', seenAt, timing).observed;
    let leaderStops: number | undefined;
    let followerTakes: number | undefined;
    for (let elapsed = 0; elapsed < 30_000 && (leaderStops === undefined || followerTakes === undefined); elapsed += 10) {
      if (leaderStops === undefined && !mayLead(renewStart, renewStart + elapsed, timing)) leaderStops = elapsed;
      if (followerTakes === undefined && decide({ version: 'r', holder: 'leader', durationSeconds: 15 }, seen, 'follower', renewStart + offset + elapsed, timing).action === 'take') followerTakes = elapsed;
    }
    t.ok(leaderStops! < followerTakes!, `offset ${offset} ms, delay ${delay} ms: the leader stops at +${leaderStops} ms, a follower may take over at +${followerTakes} ms`);
  }
});

t.test("candidates' retries are jittered by up to 20 %", async (t) => {
  t.equal(retryDelay(timing, () => 0), 2_000);
  t.equal(retryDelay(timing, () => 0.5), 2_200);
  t.ok(retryDelay(timing, () => 0.999) <= 2_400);
});
