import { NativeTool } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolSuccess } from '../index.js';
import { defineNativeTool, NativeToolRegistry } from './index.js';

const Input = z.strictObject({
  city: z.string().min(1).describe('City to report on'),
  days: z.int().min(1).max(7).default(1).describe('How many days ahead'),
});

const weather = () =>
  defineNativeTool({
    name: 'weather_report',
    description: 'reports the weather',
    className: 'WeatherReportTool',
    input: Input,
    run: async (input) => toolSuccess({ city: input.city, days: input.days }),
  });

const ctx = { callId: 'call_1', signal: new AbortController().signal, account: { id: 'acme' } };

describe('native tools', () => {
  it('a defined tool is a canonical NATIVE tool whose parameters are what its zod schema generates', () => {
    const tool = weather();

    expect(NativeTool.parse(tool.definition)).toEqual(tool.definition);
    expect(tool.definition).toEqual({
      type: 'NATIVE',
      name: 'weather_report',
      description: 'reports the weather',
      parameters: z.toJSONSchema(Input, { target: 'draft-2020-12', io: 'input' }),
      origin: { format: 'native', id: 'core:weather_report' },
      class_name: 'WeatherReportTool',
    });
    // Defaults are the model's to leave out; the strict object tells it no other arguments exist.
    expect(tool.definition.parameters).toMatchObject({ required: ['city'], additionalProperties: false });
  });

  it('the tool runs on the arguments as its schema parses them (defaults filled)', async () => {
    await expect(weather().run({ city: 'Oslo' }, ctx)).resolves.toEqual({
      ok: true,
      result: { city: 'Oslo', days: 1 },
    });
  });

  it('arguments its schema refuses come back as INVALID_REQUEST naming the path, and run is never called', async () => {
    const outcome = await weather().run({ city: 'Oslo', days: 9 }, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    expect(!outcome.ok && outcome.error.message).toMatch(/days/);
  });

  it('a name that is no function name, or a class name that is no key token, is refused at definition', () => {
    const spec = { description: '', input: Input, run: async () => toolSuccess(null) };
    expect(() => defineNativeTool({ ...spec, name: 'weather report', className: 'WeatherTool' })).toThrow(
      /function name/,
    );
    expect(() => defineNativeTool({ ...spec, name: 'weather', className: 'Weather.Tool' })).toThrow(
      /class name/,
    );
  });

  it('the registry finds tools by class name and refuses a class or a name registered twice', () => {
    const registry = new NativeToolRegistry([weather()]);

    expect(registry.get('WeatherReportTool')?.definition.name).toBe('weather_report');
    expect(registry.get('ClockTool')).toBeUndefined();
    expect(registry.classNames()).toEqual(['WeatherReportTool']);
    expect(() => registry.add(weather())).toThrow(/registered twice/);
    const sameName = defineNativeTool({
      name: 'weather_report',
      description: '',
      className: 'OtherWeatherTool',
      input: Input,
      run: async () => toolSuccess(null),
    });
    expect(() => registry.add(sameName)).toThrow(/registered twice/);
  });
});
