import { describe, expect, it } from 'vitest';
import { RouteTable } from './route-table.js';

describe('route table', () => {
  const reply = { body: 'x' };

  it('matches :param segments and decodes them', () => {
    const table = new RouteTable();
    table.add({ method: 'get', path: '/v1/users/:id/orders/:order', reply });
    expect(table.match('GET', '/v1/users/u%2F1/orders/7')?.params).toEqual({ id: 'u/1', order: '7' });
    expect(table.match('GET', '/v1/users/u1/orders')).toBeUndefined();
    expect(table.match('POST', '/v1/users/u1/orders/7')).toBeUndefined();
  });

  it('when two routes match, the one added last wins; * matches any method', () => {
    const table = new RouteTable();
    table.add({ method: '*', path: '/items/:id', reply });
    table.add({ method: 'DELETE', path: '/items/1', reply });
    expect(table.match('DELETE', '/items/1')?.route.path).toBe('/items/1');
    expect(table.match('PATCH', '/items/1')?.route.path).toBe('/items/:id');
  });

  it('rejects a path that does not start with a slash', () => {
    expect(() => new RouteTable().add({ method: 'GET', path: 'items', reply })).toThrow(/must start with/);
  });
});
