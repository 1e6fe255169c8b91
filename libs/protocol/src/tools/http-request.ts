// Vocabulary shared by every HTTP-executed tool format: methods, where arguments go, templated URLs.
import { z } from 'zod';

export const HttpMethod = z.enum(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
export type HttpMethod = z.infer<typeof HttpMethod>;

/** Seed 000 `param_placement`: where all of the model's arguments go. */
export const ParamPlacement = z.enum(['query', 'body', 'path']);
export type ParamPlacement = z.infer<typeof ParamPlacement>;

/** Where one argument goes, for tools imported from OpenAPI (finer than `param_placement`). */
export const ArgumentLocation = z.enum(['path', 'query', 'header', 'cookie', 'body']);
export type ArgumentLocation = z.infer<typeof ArgumentLocation>;

const PATH_TEMPLATE = /\{[^{}/]+\}/g;

function isHttpUrlTemplate(value: string): boolean {
  try {
    const url = new URL(value.replace(PATH_TEMPLATE, 'x'));
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** An absolute http(s) URL that may hold `{name}` path templates (seed 000 `param_placement: path`). */
export const HttpUrlTemplate = z
  .string()
  .regex(/^https?:\/\/\S+$/i, 'must be an absolute http(s) URL')
  .refine(isHttpUrlTemplate, 'must be an absolute http(s) URL (path templates like {id} allowed)');

/** A plain absolute http(s) URL. */
export const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' });
