import { afterEach, describe, expect, it } from 'vitest';
import { RateLimited } from '../errors.js';
import { McpSessionTable, type SessionReservation } from './mcp-sessions.js';

class FakeSession {
  closed = false;
  async close(): Promise<void> {
    this.closed = true;
  }
}

const tables: McpSessionTable<FakeSession>[] = [];
afterEach(async () => {
  await Promise.all(tables.splice(0).map((table) => table.closeAll()));
});

function table(
  limits: { maxSessions: number; maxSessionsPerCaller: number; idleMs?: number },
  clock = { now: 0 },
) {
  const closed: Array<{ id: string; reason: string }> = [];
  const sessions = new McpSessionTable<FakeSession>(
    { idleMs: 60_000, ...limits },
    (id, reason) => closed.push({ id, reason }),
    () => clock.now,
  );
  tables.push(sessions);
  return { sessions, closed, clock };
}

function open(sessions: McpSessionTable<FakeSession>, id: string, owner: string): FakeSession {
  const reservation = sessions.reserve(owner) as SessionReservation<FakeSession>;
  expect(reservation).not.toBeInstanceOf(RateLimited);
  const session = new FakeSession();
  reservation.commit(id, session);
  return session;
}

describe('the MCP session table', () => {
  it('a session is found only by the caller that opened it; another caller naming its id finds none', () => {
    const { sessions } = table({ maxSessions: 10, maxSessionsPerCaller: 10 });
    const session = open(sessions, 's1', 'key:a');

    expect(sessions.use('s1', 'key:a')?.session).toBe(session);
    expect(sessions.use('s1', 'key:b')).toBeUndefined();
    expect(sessions.use('s2', 'key:a')).toBeUndefined();
  });

  it("when a caller reaches its cap, its least recently used idle session is closed to make room, not another caller's", () => {
    const { sessions, closed } = table({ maxSessions: 10, maxSessionsPerCaller: 2 });
    const first = open(sessions, 's1', 'key:a');
    const second = open(sessions, 's2', 'key:a');
    const others = open(sessions, 's3', 'key:b');
    sessions.use('s1', 'key:a')?.release();

    open(sessions, 's4', 'key:a');

    expect(second.closed).toBe(true);
    expect(first.closed).toBe(false);
    expect(others.closed).toBe(false);
    expect(closed).toEqual([{ id: 's2', reason: 'evicted' }]);
    expect(sessions.use('s2', 'key:a')).toBeUndefined();
  });

  it('when every session at a cap has a request in flight, a new one is refused with 429 RATE_LIMITED naming the cap', () => {
    const { sessions } = table({ maxSessions: 2, maxSessionsPerCaller: 5 });
    open(sessions, 's1', 'key:a');
    open(sessions, 's2', 'key:b');
    const busy = [sessions.use('s1', 'key:a')!, sessions.use('s2', 'key:b')!];

    const refused = sessions.reserve('key:c');

    expect(refused).toBeInstanceOf(RateLimited);
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', detail: { scope: 'gateway', limit: 2 } });
    busy[0]!.release();
    expect(sessions.reserve('key:c')).not.toBeInstanceOf(RateLimited);
  });

  it('a reservation counts against the caps until it is committed or cancelled', () => {
    const { sessions } = table({ maxSessions: 10, maxSessionsPerCaller: 1 });
    const pending = sessions.reserve('key:a') as SessionReservation<FakeSession>;

    expect(sessions.reserve('key:a')).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'caller', limit: 1 },
    });
    pending.cancel();
    expect(sessions.reserve('key:a')).not.toBeInstanceOf(RateLimited);
  });

  it('a session idle for idleMs is closed; one with a request in flight is kept however long it runs', () => {
    const { sessions, closed, clock } = table({ maxSessions: 10, maxSessionsPerCaller: 10, idleMs: 1_000 });
    const idle = open(sessions, 'idle', 'key:a');
    const busy = open(sessions, 'busy', 'key:a');
    const call = sessions.use('busy', 'key:a')!;

    clock.now = 5_000;
    sessions.closeIdle();

    expect(idle.closed).toBe(true);
    expect(busy.closed).toBe(false);
    expect(closed).toEqual([{ id: 'idle', reason: 'idle' }]);
    call.release();
    clock.now = 5_999;
    sessions.closeIdle();
    expect(busy.closed).toBe(false);
    clock.now = 6_000;
    sessions.closeIdle();
    expect(busy.closed).toBe(true);
  });
});
